/**
 * The name of a pool's `index`-th member: `<pool>-<index>`, counting from 1.
 *
 * @example
 * ```ts
 * memberNameFor('devpool', 2); // 'devpool-2'
 * ```
 * @category pools
 */
export function memberNameFor(pool: string, index: number): string {
  return `${pool}-${index}`;
}

/**
 * The index of a member named `<pool>-<index>`, or `undefined` for any other name (a VM labeled into the pool
 * by hand, or an index written with leading zeros).
 *
 * @example
 * ```ts
 * memberIndexOf('devpool', 'devpool-10'); // 10
 * memberIndexOf('devpool', 'devpool-extra'); // undefined
 * ```
 * @category pools
 */
export function memberIndexOf(pool: string, name: string): number | undefined {
  if (!name.startsWith(`${pool}-`)) return undefined;
  const digits = name.slice(pool.length + 1);
  if (!/^[1-9][0-9]{0,11}$/.test(digits)) return undefined;
  return Number(digits);
}

/**
 * Orders names the way people count: runs of digits compare by value, so `devpool-2` sorts before `devpool-10`.
 *
 * @example
 * ```ts
 * ['devpool-10', 'devpool-2'].sort(compareNatural); // ['devpool-2', 'devpool-10']
 * ```
 * @category pools
 */
export function compareNatural(left: string, right: string): number {
  const leftParts = left.match(/\d+|\D+/g) ?? [];
  const rightParts = right.match(/\d+|\D+/g) ?? [];
  for (let index = 0; index < Math.min(leftParts.length, rightParts.length); index++) {
    const a = leftParts[index] ?? '';
    const b = rightParts[index] ?? '';
    if (a === b) continue;
    if (/^\d/.test(a) && /^\d/.test(b)) {
      const x = a.replace(/^0+/, '');
      const y = b.replace(/^0+/, '');
      if (x.length !== y.length) return x.length - y.length;
      if (x !== y) return x < y ? -1 : 1;
    }
    return a < b ? -1 : 1;
  }
  return leftParts.length - rightParts.length;
}

/**
 * The names of the next `count` members of `pool`: the lowest indices whose names `taken` does not hold (the
 * pool's own members and any other VM of the namespace).
 *
 * @example
 * ```ts
 * nextMemberNames('devpool', new Set(['devpool-1', 'devpool-3']), 2); // ['devpool-2', 'devpool-4']
 * ```
 * @category pools
 */
export function nextMemberNames(pool: string, taken: ReadonlySet<string>, count: number): string[] {
  const names: string[] = [];
  for (let index = 1; names.length < count; index++) {
    const name = memberNameFor(pool, index);
    if (!taken.has(name)) names.push(name);
  }
  return names;
}
