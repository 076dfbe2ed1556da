import { glyphHeight, glyphWidth, isGlyphPixel } from './screen-font.js';

/** The simulated display's size, in pixels. */
export const screenWidth = 320;
export const screenHeight = 200;

/** What the simulated display shows: the VM's name, the last key typed, where the pointer is. */
export interface ScreenState {
  name: string;
  /** The keysym of the last key pressed, if any. */
  lastKeysym?: number;
  pointer?: { x: number; y: number };
}

/** A frame of the simulated display: `rgb` holds three bytes per pixel, row by row. */
export interface Screen {
  width: number;
  height: number;
  rgb: Uint8Array;
}

/** The colours of the display, so a client can tell text from background. */
export const screenColours = {
  background: [16, 32, 64],
  name: [255, 255, 255],
  key: [255, 208, 64],
  pointer: [64, 255, 64],
} as const satisfies Record<string, readonly [number, number, number]>;

/** Where the name is drawn and how large: its top-left pixel and the size of one glyph pixel. */
export function nameLayout(name: string): { x: number; y: number; scale: number } {
  const fits = (scale: number) => name.length * (glyphWidth + 1) * scale <= screenWidth - 32;
  const scale = fits(3) ? 3 : fits(2) ? 2 : 1;
  return { x: 16, y: 40, scale };
}

/** How a keysym shows on screen: the character for printable ASCII, else its hex value. */
export function keyLabel(keysym: number): string {
  return keysym >= 0x21 && keysym <= 0x7e ? String.fromCharCode(keysym) : `0x${keysym.toString(16)}`;
}

function fill(screen: Screen, x: number, y: number, colour: readonly number[]): void {
  if (x < 0 || y < 0 || x >= screen.width || y >= screen.height) return;
  screen.rgb.set(colour, (y * screen.width + x) * 3);
}

function drawText(
  screen: Screen,
  text: string,
  at: { x: number; y: number; scale: number },
  colour: readonly number[],
): void {
  [...text].forEach((character, index) => {
    const left = at.x + index * (glyphWidth + 1) * at.scale;
    for (let gy = 0; gy < glyphHeight; gy += 1)
      for (let gx = 0; gx < glyphWidth; gx += 1) {
        if (!isGlyphPixel(character, gx, gy)) continue;
        for (let dy = 0; dy < at.scale; dy += 1)
          for (let dx = 0; dx < at.scale; dx += 1)
            fill(screen, left + gx * at.scale + dx, at.y + gy * at.scale + dy, colour);
      }
  });
}

/** Draws the simulated display for `state`. */
export function renderScreen(state: ScreenState): Screen {
  const screen: Screen = {
    width: screenWidth,
    height: screenHeight,
    rgb: new Uint8Array(screenWidth * screenHeight * 3),
  };
  for (let at = 0; at < screenWidth * screenHeight; at += 1) screen.rgb.set(screenColours.background, at * 3);
  drawText(screen, state.name, nameLayout(state.name), screenColours.name);
  if (state.lastKeysym !== undefined) {
    drawText(screen, `key ${keyLabel(state.lastKeysym)}`, { x: 16, y: 120, scale: 2 }, screenColours.key);
  }
  if (state.pointer) {
    for (let dy = -1; dy <= 1; dy += 1)
      for (let dx = -1; dx <= 1; dx += 1)
        fill(screen, state.pointer.x + dx, state.pointer.y + dy, screenColours.pointer);
  }
  return screen;
}
