/// <reference lib="dom" />
// The Desktops page as a custom element; registering it is an explicit call, so importing has no side effect.

export type { CorralDesktopsElement, CorralDesktopsEventName } from './corral-desktops.js';
export { corralDesktopsTag, defineCorralDesktops } from './corral-desktops.js';
export { corralDesktopsStyles } from './styles.js';
