/// <reference lib="dom" />
import type { UserInteraction } from '@devolutions/iron-remote-desktop';
import { describeRdpFailure, readRdpFailure } from './describe-rdp-failure.js';
import type { ConsoleEnd, OpenConsole } from './open-console.js';

/** Where and how the page reaches a guest's RDP server: the broker's relay and the guest's own login. */
export interface RdpOpenOptions {
  /** The broker's RDP websocket of the desktop (RDCleanPath). */
  proxyAddress: string;
  /** The one-time ticket the broker minted for this connection. */
  authToken: string;
  /** `host:port` of the guest as the plan named it; the broker connects to its own lookup of the guest. */
  destination: string;
  /** The guest's login for NLA, typed by the user; empty for a guest that asks none. */
  login: { username: string; password: string };
}

/** What the page says while the guest's RDP server has not offered its clipboard channel (cliprdr). */
const rdpClipboardMissing =
  "The desktop's RDP server has not offered a clipboard, so text cannot be copied to or from it here. Some servers offer none; a Windows desktop offers it once its session has started.";

// IronRDP's ScreenScale.Fit: the desktop scaled into the box, its shape kept.
const fitScale = 1;
// A box that keeps changing size (a window dragged) asks the guest for the last size only.
const resizeSettleMs = 300;

let backendReady: Promise<typeof import('@devolutions/iron-remote-desktop-rdp')> | undefined;

// The RDP backend is the large part (its WASM inlined): loaded once, when the first RDP console opens.
function loadBackend(): Promise<typeof import('@devolutions/iron-remote-desktop-rdp')> {
  backendReady ??= import('@devolutions/iron-remote-desktop-rdp').then(async (backend) => {
    await backend.init('ERROR');
    return backend;
  });
  return backendReady;
}

const nextTask = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

// The element sets up its clipboard only after it fires ready, once the browser has answered its question about
// the clipboard-read permission; a session built before that has no clipboard. The same question, asked after
// the element's, is answered after it.
async function clipboardSetUp(): Promise<void> {
  await nextTask();
  await navigator.permissions?.query({ name: 'clipboard-read' as PermissionName }).catch(() => undefined);
  await nextTask();
}

// `DOMAIN\user` signs in to a domain; `user@domain` and `user` go as typed.
function splitDomain(username: string): { username: string; domain: string } {
  const at = username.indexOf('\\');
  return at > 0
    ? { domain: username.slice(0, at), username: username.slice(at + 1) }
    : { domain: '', username };
}

/**
 * Opens an RDP session in `screen` with IronRDP through the broker's RDCleanPath relay. The desktop takes the
 * box's size, and follows it where the guest offers display control; the login goes only into IronRDP's
 * NLA exchange with the guest, and the page keeps no copy of it.
 */
export async function openRdp(screen: HTMLElement, options: RdpOpenOptions): Promise<OpenConsole> {
  const [, backend] = await Promise.all([import('@devolutions/iron-remote-desktop'), loadBackend()]);
  const element = document.createElement('iron-remote-desktop') as HTMLElement & { module: unknown };
  element.setAttribute('scale', 'fit');
  element.setAttribute('flexcenter', 'true');
  element.setAttribute('verbose', 'false');
  const clipboardListeners: Array<(text: string) => void> = [];
  let clipboardError: string | undefined;
  let clipboardAsked = false;
  let clipboardAnswered = false;
  let offerClipboard = () => {};
  const clipboardOffered = new Promise<void>((resolve) => {
    offerClipboard = () => {
      clipboardAnswered = true;
      resolve();
    };
  });
  // The element hands this callback over only when the browser gives it a clipboard, and IronRDP calls it when
  // the guest's clipboard channel asks for this side's formats (its Monitor Ready): the one sign that the guest
  // offers a clipboard. A server without the channel (FreeRDP's shadow server) never calls it.
  class WatchedSessionBuilder extends backend.Backend.SessionBuilder {
    override forceClipboardUpdateCallback(callback: () => void) {
      clipboardAsked = true;
      return super.forceClipboardUpdateCallback(() => {
        offerClipboard();
        callback();
      });
    }
  }
  element.module = { ...backend.Backend, SessionBuilder: WatchedSessionBuilder };
  const clipboardProblem = (): string | undefined => {
    if (clipboardAnswered) return undefined;
    if (!clipboardAsked) return clipboardError ?? 'This browser gives the page no clipboard.';
    return rdpClipboardMissing;
  };
  // the element fires ready as it mounts: listen before it is attached
  const interaction = new Promise<UserInteraction>((resolve) => {
    element.addEventListener(
      'ready',
      (event) => {
        const ui = (event as CustomEvent<{ irgUserInteraction: UserInteraction }>).detail.irgUserInteraction;
        // before the element sets up its clipboard: the toolbar asks for each copy, nothing polls
        ui.setEnableClipboard(true);
        ui.setEnableAutoClipboard(false);
        resolve(ui);
      },
      { once: true },
    );
  });
  screen.replaceChildren(element);
  const ui = await interaction;
  await clipboardSetUp();
  ui.onWarningCallback((warning) => {
    clipboardError = warning;
  });
  ui.onClipboardRemoteUpdateCallback(() => {
    // IronRDP's clipboard goes through the system clipboard: the guest's copy lands there, then in the panel
    void ui
      .saveRemoteClipboardData()
      .then(() => navigator.clipboard.readText())
      .then((text) => {
        for (const listener of clipboardListeners) listener(text);
      })
      .catch(() => {});
  });
  const { username, domain } = splitDomain(options.login.username);
  const builder = ui
    .configBuilder()
    .withDestination(options.destination)
    .withProxyAddress(options.proxyAddress)
    .withAuthToken(options.authToken)
    .withUsername(username)
    .withPassword(options.login.password)
    .withDesktopSize({ width: Math.max(screen.clientWidth, 640), height: Math.max(screen.clientHeight, 480) })
    .withExtension(backend.displayControl(true));
  if (domain) builder.withServerDomain(domain);
  const withLogin = options.login.username !== '' || options.login.password !== '';

  let closedInPage = false;
  let settle: ReturnType<typeof setTimeout> | undefined;
  const resizing = new ResizeObserver(() => {
    clearTimeout(settle);
    settle = setTimeout(() => {
      if (screen.clientWidth === 0 || screen.clientHeight === 0) return;
      // display control asks the guest for the box's size; a guest without it keeps its size, scaled to fit
      ui.resize(screen.clientWidth, screen.clientHeight);
      ui.setScale(fitScale);
    }, resizeSettleMs);
  });
  const session = ui.connect(builder.build());
  // a connect that fails ends the console (see `ended`) and never makes it ready
  const ready = session.then(
    () => {
      ui.setVisibility(true);
      ui.setScale(fitScale);
      resizing.observe(screen);
      element.focus();
    },
    () => new Promise<void>(() => {}),
  );
  const ended: Promise<ConsoleEnd> = session.then(
    async (info) => {
      try {
        const end = await info.run();
        return { code: 1000, reason: closedInPage ? '' : end.reason() };
      } catch (error) {
        return { code: 1006, reason: describeRdpFailure(readRdpFailure(error, false)).words };
      }
    },
    (error: unknown) => {
      const rdpFailure = describeRdpFailure(readRdpFailure(error, withLogin));
      return { code: 1006, reason: rdpFailure.words, rdpFailure };
    },
  );
  void ended.then(() => {
    clearTimeout(settle);
    resizing.disconnect();
  });
  return {
    ready,
    ended,
    close() {
      closedInPage = true;
      ui.shutdown();
    },
    focus: () => element.focus(),
    sendCtrlAltDel: () => ui.ctrlAltDel(),
    async sendClipboard(text) {
      // without the guest's channel IronRDP would send the text nowhere and say nothing
      const problem = clipboardProblem();
      if (problem) throw new Error(problem);
      await navigator.clipboard.writeText(text);
      await ui.sendClipboardData().catch((error: unknown) => {
        throw new Error(
          clipboardError ?? (error as { backtrace?: () => string }).backtrace?.() ?? String(error),
        );
      });
    },
    onClipboard: (listener) => clipboardListeners.push(listener),
    clipboardProblem,
    clipboardOffered,
  };
}
