/// <reference lib="dom" />
// The page `corral-vdi broker serve --ui` serves: the element, opening `?connect=<desktop ID>` at once.
import { corralDesktopsTag, defineCorralDesktops } from './corral-desktops.js';

defineCorralDesktops();
const element = document.createElement(corralDesktopsTag);
const wanted = new URLSearchParams(location.search).get('connect');
if (wanted) element.setAttribute('connect', wanted);
document.body.append(element);
