import { canUsePool, type PoolEntitlement } from '../claims/access.js';
import { holderGroupsAnnotation, uncheckedHolderGroups } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';

/**
 * The longest {@link holderGroupsAnnotation} value written: 4 KiB, so that a holder in hundreds of groups does not
 * weigh on every list of the claim Leases.
 *
 * @category access
 */
export const maxHolderGroupsLength = 4096;

/**
 * What a claim's Lease records of the groups its holder was let in with: `groups` for a claim the pool's lists
 * let in, `unchecked` for one that asked no entitlement, `unrecorded` for a Lease written before claims recorded
 * it (or one whose value cannot be read).
 *
 * @category access
 */
export type HolderRecord =
  | { kind: 'groups'; groups: string[] }
  | { kind: 'unchecked' }
  | { kind: 'unrecorded' };

/**
 * The {@link holderGroupsAnnotation} value for a holder's groups: sorted, each once, as a JSON list of at most
 * {@link maxHolderGroupsLength} characters. When they do not all fit, the pool's `allowedGroups` the holder is in
 * go first, so what let the holder in is always kept.
 *
 * @example
 * ```ts
 * formatHolderGroups(['ml', 'devs']); // '["devs","ml"]'
 * ```
 * @category access
 */
export function formatHolderGroups(groups: readonly string[], allowedGroups: readonly string[] = []): string {
  const sorted = [...new Set(groups)].sort();
  const all = JSON.stringify(sorted);
  if (all.length <= maxHolderGroupsLength) return all;
  const allowed = new Set(allowedGroups);
  const kept: string[] = [];
  for (const group of [...sorted.filter((g) => allowed.has(g)), ...sorted.filter((g) => !allowed.has(g))]) {
    if (JSON.stringify([...kept, group]).length <= maxHolderGroupsLength) kept.push(group);
  }
  return JSON.stringify(kept.sort());
}

/** What a claim Lease records of its holder's groups. @category access */
export function readHolderRecord(lease: LeaseObject | undefined): HolderRecord {
  const text = lease?.metadata.annotations?.[holderGroupsAnnotation];
  if (text === uncheckedHolderGroups) return { kind: 'unchecked' };
  if (text === undefined) return { kind: 'unrecorded' };
  try {
    const parsed: unknown = JSON.parse(text);
    if (Array.isArray(parsed) && parsed.every((group) => typeof group === 'string'))
      return { kind: 'groups', groups: parsed };
  } catch {
    // an unreadable record judges nobody
  }
  return { kind: 'unrecorded' };
}

/**
 * Whether the holder of a claim is still let into its pool, judged by {@link canUsePool} from the groups its Lease
 * records and the pool's lists now: `unchecked` for a claim that records no groups (an administrator's assign, a
 * claim without groups, a Lease from before claims recorded them), which is never judged.
 *
 * @example
 * ```ts
 * if (judgeHolderEntitlement(lease, { poolId, allowedGroups: ['ml'] }) === 'not-entitled') mark(lease);
 * ```
 * @category access
 */
export function judgeHolderEntitlement(
  lease: LeaseObject,
  pool: PoolEntitlement,
): 'entitled' | 'not-entitled' | 'unchecked' {
  const record = readHolderRecord(lease);
  if (record.kind !== 'groups') return 'unchecked';
  const identity = lease.spec.holderIdentity ?? '';
  const decision = canUsePool({ identity, groups: record.groups, isAdmin: false, pool });
  return decision.kind === 'allowed' ? 'entitled' : 'not-entitled';
}
