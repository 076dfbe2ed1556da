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
  element.module = backend.Backend;
  const clipboardListeners: Array<(text: string) => void> = [];
  let clipboardError: string | undefined;
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
      await navigator.clipboard.writeText(text);
      await ui.sendClipboardData().catch((error: unknown) => {
        throw new Error(
          clipboardError ?? (error as { backtrace?: () => string }).backtrace?.() ?? String(error),
        );
      });
    },
    onClipboard: (listener) => clipboardListeners.push(listener),
  };
}
