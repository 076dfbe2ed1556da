/// <reference lib="dom" />
import { button, make } from './dom.js';

/** The states of the console section, as its `data-state` shows them. */
export type ConsoleState = 'planning' | 'login' | 'connecting' | 'open' | 'closed' | 'failed' | 'none';

/** What the console's toolbar and forms ask of the element. */
export interface ConsoleViewActions {
  /** Gives the open console the keyboard again after a toolbar click. */
  focus(): void;
  toggleList(): void;
  ctrlAltDel(): void;
  sendClipboard(text: string): void;
  signIn(login: { username: string; password: string }): void;
  fallback(): void;
  reconnect(): void;
  disconnect(): void;
}

/** The console section: toolbar, clipboard panel, RDP login, the plan's skips, and the screen. */
export interface ConsoleView {
  readonly section: HTMLElement;
  readonly screen: HTMLElement;
  /** Shows the desktop the section is about. */
  begin(desktopId: string, name: string): void;
  setState(state: ConsoleState, words: string): void;
  setProtocol(protocol: string | undefined): void;
  /** Which toolbar buttons apply: Ctrl+Alt+Del only where keys are keys, the clipboard once a console is open. */
  setControls(controls: {
    ctrlAltDel: boolean;
    clipboard: boolean;
    reconnect: boolean;
    fallback?: string;
  }): void;
  setSkipped(skipped: ReadonlyArray<{ protocol: string; reason: string }>): void;
  /** Shows the RDP login form, with why it is asked again if it is. */
  askLogin(message?: string): void;
  /** Text the guest copied, shown in the clipboard panel. */
  showClipboard(text: string): void;
  setClipboardNote(words: string): void;
  /** Says why the clipboard does not work in this console and stops sending to it; undefined: it works. */
  setClipboardProblem(problem: string | undefined): void;
}

const protocolBadges: Readonly<Record<string, string>> = {
  rdp: 'RDP',
  vnc: 'VNC',
  serial: 'Serial',
  terminal: 'Terminal',
};

const clipboardHint =
  'Text the desktop copies appears here. Type or paste text here and send it to paste it in the desktop.';

const clipboardTitle = 'Copy and paste text between this computer and the desktop';

/** Builds the console section; it is hidden until a console is asked for. */
export function buildConsoleView(actions: ConsoleViewActions): ConsoleView {
  const title = make('h2', { className: 'corral-console-title' });
  const badge = make('span', { className: 'corral-protocol-badge' });
  const status = make('span', { className: 'corral-console-status', attrs: { role: 'status' } });
  const fullScreen = button('Full screen', 'fullscreen', () => void toggleFullScreen(), {
    title: 'Full screen: every key, Esc and browser shortcuts too, goes to the desktop; hold Esc to leave',
  });
  const ctrlAltDel = button('Ctrl+Alt+Del', 'ctrl-alt-del', () => actions.ctrlAltDel(), {
    title: 'Send Ctrl+Alt+Del to the desktop',
  });
  const clipboardToggle = button('Clipboard', 'clipboard', () => toggleClipboard(), {
    'aria-expanded': 'false',
    title: clipboardTitle,
  });
  const fallback = button('', 'fallback', () => actions.fallback());
  const reconnect = button('Reconnect', 'reconnect', () => actions.reconnect());
  const disconnect = button('Disconnect', 'close-console', () => actions.disconnect(), {
    title: 'Close the console; the desktop stays yours',
  });
  const listToggle = button('☰', 'toggle-list', () => actions.toggleList(), {
    title: 'Show or hide your desktops and the pools',
    'aria-label': 'Show or hide the desktop list',
  });
  const toolbar = make(
    'header',
    { className: 'corral-toolbar', attrs: { role: 'toolbar', 'aria-label': 'Console' } },
    listToggle,
    make('div', { className: 'corral-console-heading' }, title, badge, status),
    make(
      'div',
      { className: 'corral-toolbar-actions' },
      fullScreen,
      ctrlAltDel,
      clipboardToggle,
      fallback,
      reconnect,
      disconnect,
    ),
  );

  const sendClipboard = button('Send to desktop', 'send-clipboard', () =>
    actions.sendClipboard(clipboardText.value),
  );
  const clipboardText = make('textarea', {
    className: 'corral-clipboard-text',
    attrs: { rows: '4', spellcheck: 'false', 'aria-label': 'Clipboard text' },
  });
  const clipboardNote = make('p', { className: 'corral-clipboard-note', text: clipboardHint });
  const clipboardPanel = make(
    'div',
    { className: 'corral-clipboard' },
    clipboardText,
    make('div', { className: 'corral-clipboard-row' }, clipboardNote, sendClipboard),
  );
  clipboardPanel.hidden = true;

  const username = make('input', {
    attrs: { name: 'username', autocomplete: 'username', autocapitalize: 'none', spellcheck: 'false' },
  });
  const password = make('input', {
    attrs: { name: 'password', type: 'password', autocomplete: 'current-password' },
  });
  const loginMessage = make('p', { className: 'corral-rdp-message', attrs: { role: 'alert' } });
  const loginFallback = button('', 'fallback', () => actions.fallback());
  const loginTitle = make('h3');
  const login = make(
    'form',
    { className: 'corral-rdp-login' },
    loginTitle,
    make('p', {
      className: 'corral-rdp-note',
      text: "Remote Desktop asks for the desktop's own login. It goes to the desktop only, inside the connection; the broker does not keep it and the page forgets it once sent.",
    }),
    make('label', { text: 'User name' }, username),
    make('label', { text: 'Password' }, password),
    loginMessage,
    make(
      'div',
      { className: 'corral-rdp-buttons' },
      make('button', { text: 'Connect', attrs: { type: 'submit', 'data-action': 'rdp-sign-in' } }),
      loginFallback,
    ),
  );
  login.hidden = true;
  login.addEventListener('submit', (event) => {
    event.preventDefault();
    const typed = { username: username.value.trim(), password: password.value };
    // the page keeps no copy: the field is emptied as soon as the login is handed to IronRDP
    password.value = '';
    login.hidden = true;
    actions.signIn(typed);
  });

  const skipped = make('ul', { className: 'corral-skipped' });
  const screen = make('div', { className: 'corral-screen' });
  const section = make(
    'section',
    { className: 'corral-console', attrs: { 'aria-label': 'Console' } },
    toolbar,
    clipboardPanel,
    skipped,
    login,
    screen,
  );
  section.hidden = true;

  function showClipboardProblem(problem: string | undefined) {
    sendClipboard.disabled = problem !== undefined;
    section.toggleAttribute('data-clipboard-problem', problem !== undefined);
    clipboardToggle.title = problem ?? clipboardTitle;
    clipboardNote.textContent = problem ?? clipboardHint;
  }

  function toggleClipboard(open = clipboardPanel.hidden) {
    clipboardPanel.hidden = !open;
    clipboardToggle.setAttribute('aria-expanded', String(open));
    if (open) clipboardText.focus();
    else actions.focus();
  }

  async function toggleFullScreen() {
    if (document.fullscreenElement === section) {
      await document.exitFullscreen();
    } else {
      await section.requestFullscreen();
      // in full screen Chromium lets a page take Esc and the browser's shortcuts, as a desktop client would
      const keyboard = (navigator as { keyboard?: { lock?: () => Promise<void> } }).keyboard;
      await keyboard?.lock?.().catch(() => {});
    }
    actions.focus();
  }
  document.addEventListener('fullscreenchange', () => {
    const full = document.fullscreenElement === section;
    section.toggleAttribute('data-fullscreen', full);
    fullScreen.textContent = full ? 'Exit full screen' : 'Full screen';
  });

  return {
    section,
    screen,
    begin(desktopId, name) {
      section.hidden = false;
      section.setAttribute('data-desktop', desktopId);
      section.removeAttribute('data-protocol');
      title.textContent = name;
      loginTitle.textContent = `Sign in to ${name}`;
      badge.hidden = true;
      skipped.replaceChildren();
      login.hidden = true;
      toggleClipboard(false);
      clipboardText.value = '';
      showClipboardProblem(undefined);
      screen.replaceChildren();
    },
    setState(state, words) {
      status.textContent = words;
      section.setAttribute('data-state', state);
      if (state !== 'login') login.hidden = true;
    },
    setProtocol(protocol) {
      if (protocol === undefined) {
        section.removeAttribute('data-protocol');
        badge.hidden = true;
        return;
      }
      section.setAttribute('data-protocol', protocol);
      badge.textContent = protocolBadges[protocol] ?? protocol;
      badge.hidden = false;
    },
    setControls(controls) {
      ctrlAltDel.hidden = !controls.ctrlAltDel;
      clipboardToggle.hidden = !controls.clipboard;
      if (!controls.clipboard) toggleClipboard(false);
      reconnect.hidden = !controls.reconnect;
      for (const control of [fallback, loginFallback]) {
        control.hidden = controls.fallback === undefined;
        control.textContent = controls.fallback ? `Use the ${controls.fallback} instead` : '';
      }
    },
    setSkipped(list) {
      skipped.replaceChildren(
        ...list.map(({ protocol, reason }) =>
          make('li', { attrs: { 'data-protocol': protocol }, text: `${protocol} skipped: ${reason}` }),
        ),
      );
    },
    askLogin(message) {
      login.hidden = false;
      loginMessage.textContent = message ?? '';
      loginMessage.hidden = message === undefined;
      (username.value === '' ? username : password).focus();
    },
    showClipboard(text) {
      clipboardText.value = text;
      clipboardNote.textContent = 'The desktop copied this text.';
    },
    setClipboardNote(words) {
      clipboardNote.textContent = words;
    },
    setClipboardProblem: showClipboardProblem,
  };
}
