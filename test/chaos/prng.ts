/** A small seeded pseudo-random source, so a storm's choices can be replayed from its seed. */
export interface Prng {
  /** A number in [0, 1). */
  next(): number;
  /** An integer in [0, below). */
  below(below: number): number;
  /** One of the items. */
  pick<T>(items: readonly T[]): T;
  /** A key of `weights`, with chances in proportion to its weight. */
  weighted<K extends string>(weights: Readonly<Record<K, number>>): K;
}

/** mulberry32: 32 bits of state, good enough to spread a storm's choices and cheap to replay. */
export function createPrng(seed: number): Prng {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const below = (n: number) => Math.floor(next() * n);
  return {
    next,
    below,
    pick: (items) => {
      if (items.length === 0) throw new Error('pick needs at least one item');
      return items[below(items.length)] as (typeof items)[number];
    },
    weighted: (weights) => {
      const entries = Object.entries(weights) as [keyof typeof weights, number][];
      let roll = next() * entries.reduce((sum, [, weight]) => sum + weight, 0);
      for (const [key, weight] of entries) {
        roll -= weight;
        if (roll < 0) return key;
      }
      return entries[entries.length - 1]?.[0] as keyof typeof weights;
    },
  };
}

/** The seed of the `index`th stream of choices drawn from `seed`: a driver process's, or a lane's in it. */
export function derivedSeed(seed: number, index: number): number {
  return (Math.imul(seed ^ 0x9e3779b9, 2654435761) + index * 0x85ebca6b) >>> 0;
}
