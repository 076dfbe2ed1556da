// Modules the web code imports that ship no types: noVNC's RFB class (the part the console uses), and CSS,
// which the build loads as text.
declare module '@novnc/novnc' {
  export default class RFB extends EventTarget {
    constructor(target: HTMLElement, urlOrChannel: string | WebSocket, options?: { wsProtocols?: string[] });
    scaleViewport: boolean;
    resizeSession: boolean;
    background: string;
    focus(): void;
    disconnect(): void;
    sendCtrlAltDel(): void;
    clipboardPasteFrom(text: string): void;
  }
}

declare module '*.css' {
  const text: string;
  export default text;
}
