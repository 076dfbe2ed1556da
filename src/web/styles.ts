/// <reference lib="dom" />
import xtermStyles from '@xterm/xterm/css/xterm.css';
import ownStyles from './corral-desktops.css';

/**
 * The styles of `<corral-desktops>`, xterm.js's included. {@link defineCorralDesktops} puts them first in the
 * document's head, so a host page's own rules win; a shadow root that hosts the element needs them too.
 *
 * @category web
 */
export const corralDesktopsStyles = `${xtermStyles}\n${ownStyles}`;

const marker = 'data-corral-desktops';

/** Adds the styles to the document's head once, before every other style. */
export function installStyles(target: Document): void {
  if (target.head.querySelector(`style[${marker}]`)) return;
  const style = target.createElement('style');
  style.setAttribute(marker, '');
  style.textContent = corralDesktopsStyles;
  target.head.prepend(style);
}
