import { VdiError } from '../errors.js';
import { minReadyAnnotation } from '../keys.js';
import type { ObjectMeta } from '../kube-objects.js';

/**
 * Checks a pool's `minReady` against its size at the boundary.
 *
 * @throws {@link VdiError} `INVALID_INPUT` unless it is a whole number from 0 to `size`.
 * @category spares
 */
export function validateMinReady(minReady: unknown, size: number): number {
  if (typeof minReady === 'number' && Number.isSafeInteger(minReady) && minReady >= 0 && minReady <= size) {
    return minReady;
  }
  throw new VdiError(
    'INVALID_INPUT',
    `minReady ${String(minReady)} is not valid for a pool of ${size} member${size === 1 ? '' : 's'}; pass a whole number from 0 to ${size}. Nothing was written.`,
    { details: { minReady, size, field: 'minReady' } },
  );
}

/**
 * A VM pool's `minReady` as its members carry it: the largest value any member's `corral.dev/vdi-min-ready`
 * annotation holds (a setting written part way leaves members disagreeing; the larger never leaves a pool short),
 * or `undefined` when no member carries one. An unreadable value counts as none.
 *
 * @category spares
 */
export function readMinReady(members: readonly { metadata: ObjectMeta }[]): number | undefined {
  let found: number | undefined;
  for (const { metadata } of members) {
    const text = metadata.annotations?.[minReadyAnnotation];
    if (text === undefined || !/^\d{1,4}$/.test(text)) continue;
    found = Math.max(found ?? 0, Number(text));
  }
  return found;
}
