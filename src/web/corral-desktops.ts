/// <reference lib="dom" />
import type { DesktopBody, PoolBody } from '../broker/schemas.js';
import { type ConsoleProtocol, createVdiClient, type VdiClient } from '../client/vdi-client.js';
import { chooseConsole } from './console-choice.js';
import {
  describeConsoleEnd,
  describeError,
  describeReclaimWarning,
  describeSession,
  formatCountdown,
} from './describe-session.js';
import { type OpenConsole, openConsole } from './open-console.js';
import { installStyles } from './styles.js';

/** The tag name of the Desktops element. @category web */
export const corralDesktopsTag = 'corral-desktops';

/**
 * The events `<corral-desktops>` dispatches; each bubbles and crosses shadow roots.
 *
 * - `corral-claim`: the caller got a desktop (`detail.desktop`).
 * - `corral-release`: a release finished (`detail.desktopId`, `detail.task`).
 * - `corral-console`: a console opened or closed (`detail.desktopId`, `detail.protocol`, `detail.state`
 *   `open` or `closed`, `detail.reason` in words when closed).
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
  /** Asks the broker's connect plan for the desktop and opens the chosen console below the lists. */
  connect(desktopId: string): Promise<void>;
  /** Closes the open console, if any. */
  closeConsole(): void;
}

const refreshMs = 5_000;
const taskPollMs = 500;
const countdownMs = 1_000;

// Builds an element with text, class and attributes; text is never parsed as HTML.
function make<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  options: { className?: string; text?: string; attrs?: Record<string, string> } = {},
  ...children: Node[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  if (options.className) element.className = options.className;
  if (options.text !== undefined) element.textContent = options.text;
  for (const [name, value] of Object.entries(options.attrs ?? {})) element.setAttribute(name, value);
  element.append(...children);
  return element;
}

function button(text: string, action: string, onClick: () => void): HTMLButtonElement {
  const made = make('button', { text, attrs: { type: 'button', 'data-action': action } });
  made.addEventListener('click', onClick);
  return made;
}

const protocolNames: Readonly<Record<ConsoleProtocol, string>> = {
  vnc: 'VNC console',
  serial: 'serial console',
  terminal: 'terminal',
};

function createElementClass(): CustomElementConstructor {
  return class extends HTMLElement implements CorralDesktopsElement {
    static observedAttributes = ['broker'];
    #client: VdiClient | undefined;
    #timer: ReturnType<typeof setInterval> | undefined;
    #countdownTimer: ReturnType<typeof setInterval> | undefined;
    #console: { desktopId: string; protocol: ConsoleProtocol; open: OpenConsole } | undefined;
    // the desktop the console section shows, also after its stream ended, for Reconnect
    #lastConsole: string | undefined;
    #parts:
      | {
          error: HTMLElement;
          desktops: HTMLUListElement;
          empty: HTMLElement;
          pools: HTMLUListElement;
          consoleSection: HTMLElement;
          consoleTitle: HTMLElement;
          consoleStatus: HTMLElement;
          reconnect: HTMLButtonElement;
          skipped: HTMLUListElement;
          screen: HTMLElement;
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
      const consoleTitle = make('h2', { className: 'corral-console-title' });
      const consoleStatus = make('span', { className: 'corral-console-status', attrs: { role: 'status' } });
      const reconnect = button('Reconnect', 'reconnect', () => {
        const last = this.#lastConsole;
        if (last) void this.connect(last);
      });
      reconnect.hidden = true;
      const skipped = make('ul', { className: 'corral-skipped' });
      const screen = make('div', { className: 'corral-screen' });
      const consoleSection = make(
        'section',
        { className: 'corral-console' },
        make(
          'header',
          {},
          consoleTitle,
          consoleStatus,
          reconnect,
          button('Close console', 'close-console', () => this.closeConsole()),
        ),
        skipped,
        screen,
      );
      consoleSection.hidden = true;
      this.replaceChildren(
        make(
          'div',
          { className: 'corral-desktops' },
          error,
          make(
            'section',
            { className: 'corral-mine' },
            make('h2', { text: 'Your desktops' }),
            empty,
            desktops,
          ),
          make('section', { className: 'corral-pools' }, make('h2', { text: 'Pools' }), pools),
          consoleSection,
        ),
      );
      this.#parts = {
        error,
        desktops,
        empty,
        pools,
        consoleSection,
        consoleTitle,
        consoleStatus,
        reconnect,
        skipped,
        screen,
      };
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
          const item = make(
            'li',
            { attrs: { 'data-desktop': desktop.id, 'data-connected': String(desktop.connected) } },
            make('strong', { text: desktop.member }),
            make('span', { className: 'corral-pool-name', text: ` from ${desktop.pool} ` }),
            make('span', { className: 'corral-phase', text: desktop.phase }),
            make('span', { className: 'corral-session', text: ` ${describeSession(desktop)}` }),
          );
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
            item.append(startButton);
          }
          item.append(connectButton, releaseButton);
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
          return make(
            'li',
            { attrs: { 'data-pool': pool.id } },
            make('strong', { text: pool.name }),
            make('span', { className: 'corral-free', text: ` ${pool.free} of ${pool.members} free ` }),
            claim,
          );
        }),
      );
    }

    async #release(desktopId: string) {
      // a released desktop's console, open or ended, has nothing left to show
      if (this.#lastConsole === desktopId) this.closeConsole();
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
      if (session) session.textContent = ` ${note}`;
    }

    closeConsole() {
      const open = this.#console;
      this.#console = undefined;
      open?.open.close();
      if (this.#parts) this.#parts.consoleSection.hidden = true;
    }

    async connect(desktopId: string) {
      this.#build();
      const parts = this.#parts;
      if (!parts) return;
      this.closeConsole();
      this.#clearError();
      this.#lastConsole = desktopId;
      parts.consoleSection.hidden = false;
      parts.consoleSection.setAttribute('data-desktop', desktopId);
      parts.consoleTitle.textContent = desktopId.split('/').at(-1) ?? desktopId;
      parts.reconnect.hidden = true;
      parts.skipped.replaceChildren();
      parts.screen.replaceChildren();
      const setStatus = (state: string, words: string) => {
        parts.consoleStatus.textContent = words;
        parts.consoleSection.setAttribute('data-state', state);
      };
      setStatus('planning', 'Asking the broker which console to open…');
      try {
        const choice = chooseConsole(await this.#api.connect(desktopId));
        parts.skipped.replaceChildren(
          ...choice.skipped.map(({ protocol, reason }) =>
            make('li', { attrs: { 'data-protocol': protocol }, text: `${protocol} skipped: ${reason}` }),
          ),
        );
        if (choice.protocol === undefined) {
          setStatus('none', 'This desktop offers no console a browser can open.');
          return;
        }
        const protocol = choice.protocol;
        parts.consoleSection.setAttribute('data-protocol', protocol);
        setStatus('connecting', `Opening the ${protocolNames[protocol]}…`);
        const open = await openConsole(parts.screen, this.#api.consoleUrl(desktopId, protocol), protocol);
        this.#console = { desktopId, protocol, open };
        void open.ready.then(() => {
          if (this.#console?.open !== open) return;
          setStatus('open', `Connected to the ${protocolNames[protocol]}.`);
          this.#emit('corral-console', { desktopId, protocol, state: 'open' });
          void this.refresh();
        });
        void open.ended.then((end) => {
          const reason = describeConsoleEnd(end);
          this.#emit('corral-console', { desktopId, protocol, state: 'closed', reason });
          if (this.#console?.open !== open) return;
          this.#console = undefined;
          setStatus('closed', reason);
          parts.reconnect.hidden = false;
          void this.refresh();
        });
      } catch (error) {
        setStatus('failed', describeError(error));
        parts.reconnect.hidden = false;
        this.#showError(error);
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
