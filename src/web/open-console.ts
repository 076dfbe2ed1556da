/// <reference lib="dom" />
import type { Terminal } from '@xterm/xterm';
import type { RdpFailure } from './describe-rdp-failure.js';

/** How a console stream ended: the websocket's close code and the reason the broker gave, if any. */
export interface ConsoleEnd {
  code: number;
  reason: string;
  /** Why an RDP connect failed, in words and by cause, when it never opened. */
  rdpFailure?: RdpFailure;
}

/** An open console in the page, with what its toolbar can do. */
export interface OpenConsole {
  /** Resolves once the console has drawn or printed its first bytes. */
  readonly ready: Promise<void>;
  /** Resolves when the stream ends, from either side. */
  readonly ended: Promise<ConsoleEnd>;
  /** Closes the stream from the page. */
  close(): void;
  /** Gives the console the keyboard. */
  focus(): void;
  /** Sends Ctrl+Alt+Del to the guest; absent where keys are text (a terminal). */
  sendCtrlAltDel?(): void;
  /** Puts text on the guest's clipboard (a terminal types it). */
  sendClipboard(text: string): Promise<void>;
  /** Calls `listener` with the text the guest copies (a terminal's selection). */
  onClipboard(listener: (text: string) => void): void;
  /**
   * Where the clipboard is a channel the guest may not offer (RDP): why it does not work at the moment, in
   * words, or undefined once it does. Absent where it always works (noVNC's cut text, a terminal).
   */
  clipboardProblem?(): string | undefined;
  /** Resolves when a clipboard that had a problem starts working (RDP: the guest's clipboard channel answered). */
  readonly clipboardOffered?: Promise<void>;
}

// The first message shows the stream is live; a close before it means it never was.
function watchSocket(socket: WebSocket): Pick<OpenConsole, 'ended'> & { firstMessage: Promise<void> } {
  let opened: () => void = () => {};
  const firstMessage = new Promise<void>((resolve) => {
    opened = resolve;
  });
  socket.addEventListener('message', () => opened(), { once: true });
  const ended = new Promise<ConsoleEnd>((resolve) => {
    socket.addEventListener('close', (event) => resolve({ code: event.code, reason: event.reason }), {
      once: true,
    });
  });
  return { ended, firstMessage };
}

/** Opens noVNC in `screen`: scaled to the box, and asking the guest to take the box's size where it can. */
export async function openVnc(screen: HTMLElement, url: string): Promise<OpenConsole> {
  const { default: RFB } = await import('@novnc/novnc');
  const socket = new WebSocket(url);
  socket.binaryType = 'arraybuffer';
  const { ended } = watchSocket(socket);
  const rfb = new RFB(screen, socket);
  rfb.scaleViewport = true;
  rfb.resizeSession = true;
  const ready = new Promise<void>((resolve) =>
    rfb.addEventListener('connect', () => resolve(), { once: true }),
  );
  void ready.then(() => rfb.focus());
  return {
    ready,
    ended,
    close: () => rfb.disconnect(),
    focus: () => rfb.focus(),
    sendCtrlAltDel: () => rfb.sendCtrlAltDel(),
    sendClipboard: async (text) => rfb.clipboardPasteFrom(text),
    onClipboard: (listener) =>
      rfb.addEventListener('clipboard', (event) =>
        listener((event as CustomEvent<{ text: string }>).detail.text),
      ),
  };
}

// xterm.js's scrollbar lies over the right edge of the terminal, 14 px wide unless an overview ruler widens it
const scrollbarWidth = 14;

// As many columns and rows as fit the box, from the cell size xterm.js drew its current ones with.
function fitTerminal(terminal: Terminal, box: HTMLElement): void {
  const drawn = terminal.element?.querySelector('.xterm-screen')?.getBoundingClientRect();
  if (!drawn || drawn.width === 0 || drawn.height === 0) return;
  const cols = Math.floor((box.clientWidth - scrollbarWidth) / (drawn.width / terminal.cols));
  const rows = Math.floor(box.clientHeight / (drawn.height / terminal.rows));
  if (cols > 0 && rows > 0 && (cols !== terminal.cols || rows !== terminal.rows)) terminal.resize(cols, rows);
}

/** Opens xterm.js in `screen`; a container's shell takes its size as a text message, a serial line none. */
export async function openTerminal(
  screen: HTMLElement,
  url: string,
  sendsSize: boolean,
): Promise<OpenConsole> {
  const { Terminal } = await import('@xterm/xterm');
  const terminal = new Terminal({ convertEol: false, cursorBlink: true, fontSize: 14 });
  terminal.open(screen);
  const socket = new WebSocket(url);
  socket.binaryType = 'arraybuffer';
  const { ended, firstMessage } = watchSocket(socket);
  const encoder = new TextEncoder();
  socket.addEventListener('message', (event) => {
    terminal.write(typeof event.data === 'string' ? event.data : new Uint8Array(event.data as ArrayBuffer));
  });
  // keys typed while the stream is still connecting go out once it opens, as a slow terminal's would
  const typedEarly: string[] = [];
  const typing = terminal.onData((data) => {
    if (socket.readyState === WebSocket.OPEN) socket.send(encoder.encode(data));
    else if (socket.readyState === WebSocket.CONNECTING) typedEarly.push(data);
  });
  const sendSize = () => {
    if (sendsSize && socket.readyState === WebSocket.OPEN) {
      socket.send(JSON.stringify({ cols: terminal.cols, rows: terminal.rows }));
    }
  };
  const resizing = terminal.onResize(sendSize);
  const fitting = new ResizeObserver(() => fitTerminal(terminal, screen));
  fitting.observe(screen);
  socket.addEventListener(
    'open',
    () => {
      sendSize();
      for (const data of typedEarly.splice(0)) socket.send(encoder.encode(data));
      terminal.focus();
    },
    { once: true },
  );
  void ended.then(() => {
    typing.dispose();
    resizing.dispose();
    fitting.disconnect();
  });
  return {
    ready: firstMessage,
    ended,
    close: () => socket.close(1000, 'closed in the page'),
    focus: () => terminal.focus(),
    sendClipboard: async (text) => terminal.paste(text),
    onClipboard: (listener) =>
      terminal.onSelectionChange(() => {
        if (terminal.hasSelection()) listener(terminal.getSelection());
      }),
  };
}
