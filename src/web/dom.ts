/// <reference lib="dom" />

/** Builds an element with text, class and attributes; text is never parsed as HTML. */
export function make<K extends keyof HTMLElementTagNameMap>(
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

/** A button of type `button` that names its action in `data-action`. */
export function button(
  text: string,
  action: string,
  onClick: () => void,
  attrs: Record<string, string> = {},
): HTMLButtonElement {
  const made = make('button', { text, attrs: { type: 'button', 'data-action': action, ...attrs } });
  made.addEventListener('click', onClick);
  return made;
}
