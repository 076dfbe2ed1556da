import { assignedToKey, claimedAtAnnotation, poolLabel } from '../keys.js';
import type { VirtualMachine } from '../kubevirt-types.js';

/**
 * What a VM shows of the v0.6.0 pool state. v0.6.0 kept an assignment on the VM alone: the raw user string as
 * the `corral.dev/vdi-assigned-to` label and the claim time as the `corral.dev/vdi-claimed-at` annotation, with
 * no Lease and no `corral.dev/vdi-assigned-to` annotation. Its members often still use KubeVirt's deprecated
 * `spec.running` instead of `spec.runStrategy`.
 *
 * - `not-legacy`: no v0.6.0 state; the VM is not a pool member, or it carries the current presentation, or
 *   nothing tells it apart from a member of the current release.
 * - `legacy-assigned`: a v0.6.0 assignment to `user`.
 * - `legacy-free`: an unassigned member that still uses `spec.running`.
 *
 * @category upgrade
 */
export type LegacyState =
  | { kind: 'not-legacy' }
  | {
      kind: 'legacy-assigned';
      pool: string;
      /** The label value exactly as v0.6.0 wrote it; it never holds `@`. */
      user: string;
      /** The `corral.dev/vdi-claimed-at` annotation as written, when present. */
      claimedAt?: string;
      usesSpecRunning: boolean;
    }
  | { kind: 'legacy-free'; pool: string; usesSpecRunning: true };

/**
 * Reads a VM's labels, annotations and run field for v0.6.0 pool state. This module is the only one that knows
 * what v0.6.0 wrote; everything else asks it.
 *
 * A VM is v0.6.0-assigned when it has the pool label and a non-empty `corral.dev/vdi-assigned-to` label but no
 * `corral.dev/vdi-assigned-to` annotation (the current release always writes both). An empty label value
 * counts as no assignment.
 *
 * @example
 * ```ts
 * classifyLegacy({
 *   metadata: { name: 'legacypool-1', labels: { 'corral.dev/vdi-pool': 'legacypool', 'corral.dev/vdi-assigned-to': 'alice' } },
 *   spec: { running: false },
 * });
 * // { kind: 'legacy-assigned', pool: 'legacypool', user: 'alice', usesSpecRunning: true }
 * ```
 * @category upgrade
 */
export function classifyLegacy(vm: VirtualMachine): LegacyState {
  const labels = vm.metadata.labels ?? {};
  const annotations = vm.metadata.annotations ?? {};
  const pool = labels[poolLabel];
  if (pool === undefined || pool === '' || annotations[assignedToKey]) return { kind: 'not-legacy' };
  const usesSpecRunning = typeof vm.spec.running === 'boolean' && vm.spec.runStrategy === undefined;
  const user = labels[assignedToKey];
  if (user) {
    const claimedAt = annotations[claimedAtAnnotation];
    return { kind: 'legacy-assigned', pool, user, ...(claimedAt ? { claimedAt } : {}), usesSpecRunning };
  }
  return usesSpecRunning ? { kind: 'legacy-free', pool, usesSpecRunning } : { kind: 'not-legacy' };
}
