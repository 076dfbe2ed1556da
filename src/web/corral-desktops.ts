/// <reference lib="dom" />
import type { DesktopBody, PoolBody } from '../broker/schemas.js';
import { createVdiClient, type VdiClient } from '../client/vdi-client.js';
import { type ConsoleOffer, chooseConsole, nextOffer, type PageConsole } from './console-choice.js';
import { buildConsoleView, type ConsoleView } from './console-view.js';
import {
  describeConsoleEnd,
  describeError,
  describeReclaimWarning,
  describeSession,
  formatCountdown,
} from './describe-session.js';
import { button, make } from './dom.js';
import { type OpenConsole, openTerminal, openVnc } from './open-console.js';
import { installStyles } from './styles.js';

/** The tag name of the Desktops element. @category web */
export const corralDesktopsTag = 'corral-desktops';

/**
 * The events `<corral-desktops>` dispatches; each bubbles and crosses shadow roots.
 *
 * - `corral-claim`: the caller got a desktop (`detail.desktop`).
 * - `corral-release`: a release finished (`detail.desktopId`, `detail.task`).
 * - `corral-console`: a console opened or closed (`detail.desktopId`, `detail.protocol` `rdp`, `vnc`,
 *   `serial` or `terminal`, `detail.state` `open` or `closed`, `detail.reason` in words when closed).
 * - `corral-error`: something failed; `detail.code` (a `VdiErrorCode` when the broker said one) and
 *   `detail.message`, the words the element shows.
 *
 * @category web
 */
export type CorralDesktopsEventName = 'corral-claim' | 'corral-release' | 'corral-console' | 'corral-error';

/**
 * The `<corral-desktops>` element: the caller's desktops, the pools with free counts, and the console of one
 * desktop. Attributes: `broker` (the broker's base URL; default the page's origin) and `connect` (a desktop ID
 * whose console opens when the element is attached).
 *
 * @category web
 */
export interface CorralDesktopsElement extends HTMLElement {
  /** Reads the pools and the caller's desktops again and redraws them. */
  refresh(): Promise<void>;
  /** Asks the broker's connect plan for the desktop and opens the chosen console beside the lists. */
  connect(desktopId: string): Promise<void>;
  /** Closes the open console, if any. */
  closeConsole(): void;
}

const refreshMs = 5_000;
const taskPollMs = 500;
const countdownMs = 1_000;
// a guest's RDP clipboard channel answers within moments of the session starting, when it has one
const clipboardAnswerMs = 5_000;

const protocolNames: Readonly<Record<PageConsole, string>> = {
  rdp: 'Remote Desktop (RDP) console',
  vnc: 'VNC console',
  serial: 'serial console',
  terminal: 'terminal',
};

// The console the section shows, also after its stream ended, for Reconnect and the fallback.
interface ConsoleTarget {
  desktopId: string;
  offers: ConsoleOffer[];
  offer: ConsoleOffer;
  skipped: Array<{ protocol: string; reason: string }>;
}

function createElementClass(): CustomElementConstructor {
  return class extends HTMLElement implements CorralDesktopsElement {
    static observedAttributes = ['broker'];
    #client: VdiClient | undefined;
    #timer: ReturnType<typeof setInterval> | undefined;
    #countdownTimer: ReturnType<typeof setInterval> | undefined;
    #console: { desktopId: string; protocol: PageConsole; open: OpenConsole } | undefined;
    #target: ConsoleTarget | undefined;
    // the desktop the console section shows, also when its plan failed, for Reconnect
    #shown: string | undefined;
    #parts:
      | {
          root: HTMLElement;
          error: HTMLElement;
          desktops: HTMLUListElement;
          empty: HTMLElement;
          pools: HTMLUListElement;
          view: ConsoleView;
        }
      | undefined;

    get #api(): VdiClient {
      this.#client ??= createVdiClient(
        this.getAttribute('broker') ? { baseUrl: this.getAttribute('broker') as string } : {},
      );
      return this.#client;
    }

    attributeChangedCallback() {
      this.#client = undefined;
    }

    connectedCallback() {
      this.#build();
      void this.refresh();
      this.#timer = setInterval(() => void this.refresh(), refreshMs);
      this.#countdownTimer = setInterval(() => this.#tickCountdowns(), countdownMs);
      const wanted = this.getAttribute('connect');
      if (wanted) void this.connect(wanted);
    }

    disconnectedCallback() {
      clearInterval(this.#timer);
      clearInterval(this.#countdownTimer);
      this.closeConsole();
    }

    #build() {
      if (this.#parts) return;
      const error = make('p', { className: 'corral-error', attrs: { role: 'alert' } });
      error.hidden = true;
      const desktops = make('ul', { className: 'corral-desktop-list' });
      const empty = make('p', {
        className: 'corral-empty',
        text: 'You hold no desktop. Get one from a pool below.',
      });
      const pools = make('ul', { className: 'corral-pool-list' });
      const view = buildConsoleView({
        focus: () => this.#console?.open.focus(),
        toggleList: () => {
          const root = this.#parts?.root;
          const sidebar = root?.querySelector('.corral-sidebar');
          // a narrow window hides the list under an open console by itself: ask what shows, not the attribute
          const shown =
            sidebar !== null && sidebar !== undefined && getComputedStyle(sidebar).display !== 'none';
          root?.setAttribute('data-list', shown ? 'hidden' : 'shown');
          this.#console?.open.focus();
        },
        ctrlAltDel: () => {
          this.#console?.open.sendCtrlAltDel?.();
          this.#console?.open.focus();
        },
        sendClipboard: (text) => void this.#sendClipboard(text),
        signIn: (login) => {
          const target = this.#target;
          if (target?.offer.protocol === 'rdp') void this.#openRdp(target, login);
        },
        fallback: () => {
          const target = this.#target;
          const next = target && nextOffer(target.offers, target.offer.protocol);
          if (target && next) void this.#open({ ...target, offer: next });
        },
        reconnect: () => {
          if (this.#shown) void this.connect(this.#shown);
        },
        disconnect: () => this.closeConsole(),
      });
      const root = make(
        'div',
        { className: 'corral-desktops', attrs: { 'data-console': 'none' } },
        make(
          'aside',
          { className: 'corral-sidebar' },
          error,
          make(
            'section',
            { className: 'corral-mine' },
            make('h2', { text: 'Your desktops' }),
            empty,
            desktops,
          ),
          make('section', { className: 'corral-pools' }, make('h2', { text: 'Pools' }), pools),
        ),
        make(
          'main',
          { className: 'corral-stage' },
          make('p', {
            className: 'corral-stage-empty',
            text: 'Connect to one of your desktops, and its screen opens here.',
          }),
          view.section,
        ),
      );
      this.replaceChildren(root);
      this.#parts = { root, error, desktops, empty, pools, view };
    }

    #emit(name: CorralDesktopsEventName, detail: Record<string, unknown>) {
      this.dispatchEvent(new CustomEvent(name, { detail, bubbles: true, composed: true }));
    }

    #showError(error: unknown) {
      const message = describeError(error);
      const code = (error as { code?: unknown } | undefined)?.code;
      if (this.#parts) {
        this.#parts.error.textContent = message;
        this.#parts.error.hidden = false;
      }
      this.#emit('corral-error', { code: typeof code === 'string' ? code : 'INTERNAL', message });
    }

    #clearError() {
      if (this.#parts) this.#parts.error.hidden = true;
    }

    // Runs one user action with its button disabled, showing a failure in words.
    async #act(control: HTMLButtonElement, action: () => Promise<void>) {
      control.disabled = true;
      this.#clearError();
      try {
        await action();
      } catch (error) {
        this.#showError(error);
      } finally {
        control.disabled = false;
      }
    }

    async refresh() {
      this.#build();
      try {
        const [pools, desktops] = await Promise.all([this.#api.listPools(), this.#api.listDesktops()]);
        this.#renderDesktops(desktops, performance.now());
        this.#renderPools(pools);
      } catch (error) {
        this.#showError(error);
      }
    }

    // answeredAt: when the answer arrived, on the page's monotonic clock, which the countdowns run on
    #renderDesktops(desktops: DesktopBody[], answeredAt: number) {
      const parts = this.#parts;
      if (!parts) return;
      parts.empty.hidden = desktops.length > 0;
      parts.desktops.replaceChildren(
        ...desktops.map((desktop) => {
          const actions = make('div', { className: 'corral-row-actions' });
          const item = make(
            'li',
            { attrs: { 'data-desktop': desktop.id, 'data-connected': String(desktop.connected) } },
            make(
              'div',
              { className: 'corral-row-head' },
              make('strong', { text: desktop.member }),
              make('span', { className: 'corral-phase', text: desktop.phase }),
            ),
            make('span', { className: 'corral-pool-name', text: `from ${desktop.pool}` }),
            make('span', { className: 'corral-session', text: describeSession(desktop) }),
            actions,
          );
          if (this.#shown === desktop.id) item.setAttribute('data-shown', '');
          const connectButton = button('Connect', 'connect', () => void this.connect(desktop.id));
          const releaseButton = button('Release', 'release', () =>
            this.#act(releaseButton, () => this.#release(desktop.id)),
          );
          if (!desktop.running) {
            const startButton = button('Start', 'start', () =>
              this.#act(startButton, async () => {
                await this.#api.start(desktop.id);
                await this.refresh();
              }),
            );
            actions.append(startButton);
          }
          actions.append(connectButton, releaseButton);
          const warning = describeReclaimWarning(desktop);
          if (warning) {
            // the broker's milliseconds left, not its reclaimAt, so a wrong clock here does not skew the count
            const deadline = answeredAt + (desktop.reclaimInMs ?? 0);
            const countdown = make('time', {
              className: 'corral-countdown',
              text: formatCountdown(deadline - performance.now()),
              attrs: { datetime: desktop.reclaimAt ?? '', 'data-deadline': String(deadline) },
            });
            const className = `corral-reclaim-warning${warning.reason === 'idle' ? ' corral-idle-warning' : ''}`;
            item.append(
              make(
                'p',
                { className, attrs: { role: 'alert', 'data-reason': warning.reason } },
                document.createTextNode(warning.before),
                countdown,
                document.createTextNode(warning.after),
              ),
            );
          }
          return item;
        }),
      );
    }

    #tickCountdowns() {
      for (const countdown of this.querySelectorAll<HTMLElement>('.corral-countdown[data-deadline]')) {
        countdown.textContent = formatCountdown(Number(countdown.dataset.deadline) - performance.now());
      }
    }

    #renderPools(pools: PoolBody[]) {
      this.#parts?.pools.replaceChildren(
        ...pools.map((pool) => {
          const claim = button('Get a desktop', 'claim', () =>
            this.#act(claim, async () => {
              const desktop = await this.#api.claim(pool.id);
              this.#emit('corral-claim', { desktop });
              if (desktop.startError) this.#showError(new Error(desktop.startError));
              await this.refresh();
            }),
          );
          claim.disabled = pool.free === 0;
          const meter = make('meter', {
            attrs: { min: '0', max: String(pool.members), value: String(pool.free), 'aria-hidden': 'true' },
          });
          return make(
            'li',
            { attrs: { 'data-pool': pool.id } },
            make('div', { className: 'corral-row-head' }, make('strong', { text: pool.name }), meter),
            make('span', { className: 'corral-free', text: `${pool.free} of ${pool.members} free` }),
            make('div', { className: 'corral-row-actions' }, claim),
          );
        }),
      );
    }

    async #release(desktopId: string) {
      // a released desktop's console, open or ended, has nothing left to show
      if (this.#shown === desktopId) this.closeConsole();
      let task = await this.#api.getTask((await this.#api.release(desktopId)).task);
      this.#setRowNote(desktopId, 'Releasing…');
      while (task.status === 'running') {
        await new Promise((resolve) => setTimeout(resolve, taskPollMs));
        task = await this.#api.getTask(task.id);
      }
      await this.refresh();
      if (task.status === 'error') throw new Error(task.error?.message ?? 'The release failed.');
      this.#emit('corral-release', { desktopId, task });
    }

    #setRowNote(desktopId: string, note: string) {
      const row = [...(this.#parts?.desktops.children ?? [])].find(
        (item) => item.getAttribute('data-desktop') === desktopId,
      );
      const session = row?.querySelector('.corral-session');
      if (session) session.textContent = note;
    }

    // Ends the open stream, if any, without touching what the section shows.
    #endStream() {
      const open = this.#console;
      this.#console = undefined;
      open?.open.close();
    }

    closeConsole() {
      this.#endStream();
      this.#target = undefined;
      this.#shown = undefined;
      if (!this.#parts) return;
      if (document.fullscreenElement === this.#parts.view.section) void document.exitFullscreen();
      this.#parts.view.section.hidden = true;
      this.#parts.root.setAttribute('data-console', 'none');
      for (const row of this.#parts.desktops.querySelectorAll('[data-shown]'))
        row.removeAttribute('data-shown');
    }

    async connect(desktopId: string) {
      this.#build();
      const parts = this.#parts;
      if (!parts) return;
      this.closeConsole();
      this.#clearError();
      const { view } = parts;
      this.#shown = desktopId;
      view.begin(desktopId, desktopId.split('/').at(-1) ?? desktopId);
      parts.root.setAttribute('data-console', 'open');
      this.#markShown(desktopId);
      view.setControls({ ctrlAltDel: false, clipboard: false, reconnect: false });
      view.setState('planning', 'Asking the broker which console to open…');
      try {
        const choice = chooseConsole(await this.#api.connect(desktopId));
        view.setSkipped(choice.skipped);
        const first = choice.offers[0];
        if (first === undefined) {
          view.setState('none', 'This desktop offers no console a browser can open.');
          return;
        }
        await this.#open({ desktopId, offers: choice.offers, offer: first, skipped: choice.skipped });
      } catch (error) {
        view.setState('failed', describeError(error));
        view.setControls({ ctrlAltDel: false, clipboard: false, reconnect: true });
        this.#showError(error);
      }
    }

    #markShown(desktopId: string) {
      for (const row of this.#parts?.desktops.children ?? []) {
        row.toggleAttribute('data-shown', row.getAttribute('data-desktop') === desktopId);
      }
    }

    // The plan's next console, in words for the button that opens it.
    #fallbackName(target: ConsoleTarget): string | undefined {
      const next = nextOffer(target.offers, target.offer.protocol);
      return next && protocolNames[next.protocol];
    }

    // Opens one console of the plan: RDP asks for the guest's login first.
    async #open(target: ConsoleTarget) {
      const view = this.#parts?.view;
      if (!view) return;
      this.#endStream();
      this.#target = target;
      const { desktopId, offer } = target;
      view.setProtocol(offer.protocol);
      view.screen.replaceChildren();
      const fallback = this.#fallbackName(target);
      if (offer.protocol === 'rdp') {
        view.setState('login', 'Remote Desktop needs the login of the desktop.');
        view.setControls({ ctrlAltDel: false, clipboard: false, reconnect: false, fallback });
        view.askLogin();
        return;
      }
      const protocol = offer.protocol;
      view.setState('connecting', `Opening the ${protocolNames[protocol]}…`);
      view.setControls({ ctrlAltDel: false, clipboard: false, reconnect: false });
      const url = this.#api.consoleUrl(desktopId, protocol);
      const open =
        protocol === 'vnc'
          ? await openVnc(view.screen, url)
          : await openTerminal(view.screen, url, protocol === 'terminal');
      this.#watch(target, protocol, open);
    }

    async #openRdp(target: ConsoleTarget, login: { username: string; password: string }) {
      const view = this.#parts?.view;
      if (!view) return;
      view.setState('connecting', `Opening the ${protocolNames.rdp}…`);
      try {
        // a ticket per connection: single use, for this caller and this claim
        const [{ openRdp }, ticket] = await Promise.all([
          import('./open-rdp.js'),
          this.#api.rdpToken(target.desktopId),
        ]);
        if (this.#target !== target) return;
        const open = await openRdp(view.screen, {
          proxyAddress: this.#api.consoleUrl(target.desktopId, 'rdp'),
          authToken: ticket.token,
          destination: ticket.destination,
          login,
        });
        this.#watch(target, 'rdp', open);
      } catch (error) {
        view.setState('failed', describeError(error));
        view.setControls({
          ctrlAltDel: false,
          clipboard: false,
          reconnect: true,
          fallback: this.#fallbackName(target),
        });
        this.#showError(error);
      }
    }

    // Follows an open console: its first frame, the guest's clipboard, and its end.
    #watch(target: ConsoleTarget, protocol: PageConsole, open: OpenConsole) {
      const view = this.#parts?.view;
      if (!view) return;
      const { desktopId } = target;
      this.#console = { desktopId, protocol, open };
      const current = () => this.#console?.open === open;
      open.onClipboard((text) => {
        if (!current()) return;
        view.showClipboard(text);
        // noVNC hands over text only; RDP's copy is on this computer's clipboard already
        if (protocol === 'vnc') void navigator.clipboard?.writeText(text).catch(() => {});
      });
      void open.ready.then(() => {
        if (!current()) return;
        view.setState('open', `Connected to the ${protocolNames[protocol]}.`);
        view.setControls({
          ctrlAltDel: open.sendCtrlAltDel !== undefined,
          clipboard: true,
          reconnect: false,
        });
        this.#emit('corral-console', { desktopId, protocol, state: 'open' });
        void this.refresh();
        this.#watchClipboard(open, current);
      });
      void open.ended.then((end) => {
        const reason = describeConsoleEnd(end);
        this.#emit('corral-console', { desktopId, protocol, state: 'closed', reason });
        if (!current()) return;
        this.#console = undefined;
        void this.refresh();
        const failure = end.rdpFailure;
        const fallback = this.#fallbackName(target);
        if (failure?.cause === 'login') {
          view.setState('login', failure.words);
          view.setControls({ ctrlAltDel: false, clipboard: false, reconnect: false, fallback });
          view.askLogin(failure.words);
          return;
        }
        const next = nextOffer(target.offers, protocol);
        if (failure?.cause === 'guest' && next) {
          // the guest has no RDP for the page: its next console opens, and the skips say why
          const skipped = [...target.skipped, { protocol: 'rdp', reason: failure.words }];
          view.setSkipped(skipped);
          void this.#open({ ...target, offer: next, skipped });
          return;
        }
        view.setState(failure ? 'failed' : 'closed', reason);
        view.setControls({ ctrlAltDel: false, clipboard: false, reconnect: true, fallback });
      });
    }

    // A clipboard the guest may not offer (RDP) is said to be missing if it has not answered a while after the
    // console opened, and is offered again if it answers later (a Windows guest's, once its session started).
    #watchClipboard(open: OpenConsole, current: () => boolean) {
      if (!open.clipboardProblem) return;
      let shown = false;
      const said = setTimeout(() => {
        const problem = open.clipboardProblem?.();
        if (!problem || !current()) return;
        shown = true;
        this.#parts?.view.setClipboardProblem(problem);
      }, clipboardAnswerMs);
      void open.clipboardOffered?.then(() => {
        clearTimeout(said);
        if (shown && current()) this.#parts?.view.setClipboardProblem(undefined);
      });
      void open.ended.then(() => clearTimeout(said));
    }

    async #sendClipboard(text: string) {
      const open = this.#console?.open;
      if (!open) return;
      try {
        await open.sendClipboard(text);
        this.#parts?.view.setClipboardNote('Sent: paste it in the desktop.');
        open.focus();
      } catch (error) {
        this.#parts?.view.setClipboardNote(
          `The text did not reach the desktop: ${error instanceof Error ? error.message : String(error)}`,
        );
      }
    }
  };
}

/**
 * Registers `<corral-desktops>` and puts its styles first in the document's head (once; a second call does
 * nothing). Importing the module registers nothing, so a server-side render can import it too.
 *
 * @example
 * ```ts
 * import { defineCorralDesktops } from '@corral/vdi/web';
 *
 * defineCorralDesktops();
 * document.body.append(document.createElement('corral-desktops'));
 * ```
 * @category web
 */
export function defineCorralDesktops(): void {
  installStyles(document);
  if (!customElements.get(corralDesktopsTag)) customElements.define(corralDesktopsTag, createElementClass());
}
