const quantityPattern = /^\+?(\d+(?:\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[mkMGTPE]|[eE][+-]?\d+)?$/;

const multipliers: Readonly<Record<string, number>> = {
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

/**
 * Reads a Kubernetes resource quantity as a whole count of devices, such as a node's allocatable
 * `nvidia.com/GA102GL_A10: "4"`. The apiserver may write large counts with a suffix (`"1k"`), so suffixes and
 * exponents are understood; a fraction is rounded down, because a device cannot be split.
 *
 * @returns the count, or `0` when `text` is missing or not a quantity: an unreadable value never adds capacity.
 * @example
 * ```ts
 * parseDeviceCount('4'); // 4
 * parseDeviceCount('1k'); // 1000
 * parseDeviceCount('garbage'); // 0
 * ```
 * @category capacity
 */
export function parseDeviceCount(text: string | undefined): number {
  if (text === undefined) return 0;
  const match = quantityPattern.exec(text.trim());
  if (!match) return 0;
  const [, digits = '0', suffix] = match;
  let multiplier = 1;
  if (suffix !== undefined) multiplier = multipliers[suffix] ?? 10 ** Number(suffix.slice(1));
  // the epsilon keeps 1.1k at 1100 despite binary rounding
  return Math.min(Math.floor(Number(digits) * multiplier + 1e-9), Number.MAX_SAFE_INTEGER);
}
