import { formatTime, normalizeTime } from '../format-time.js';
import { formatDesktopId, formatPoolId } from '../ids.js';
import {
  assignedToKey,
  claimedAtAnnotation,
  ephemeralLabel,
  poolLabel,
  sessionIdAnnotation,
} from '../keys.js';
import type { LeaseObject, VirtualMachine } from '../kubevirt-types.js';
import { classifyLegacy } from '../upgrade/classify-legacy.js';
import { claimHolder, classifyLeaselessVm, leaseExpiresAt } from './claim-liveness.js';

/**
 * One desktop as every front end shows it: which pool member it is, who holds it, and its power state.
 *
 * @category claims
 */
export interface DesktopView {
  /** `vm/<namespace>/<member>`; stays the same across claims. */
  id: string;
  kind: 'vm';
  namespace: string;
  member: string;
  pool: string;
  /** `vm/<namespace>/<pool>`. */
  poolId: string;
  /**
   * The exact identity the claim names: its Lease's holder (also once it expired; see `expiresAt`), a v0.6.0
   * user, or the user a running member without a Lease still shows; `undefined` when nothing names one.
   */
  owner: string | undefined;
  /** Changes with every claim; `undefined` when nobody holds it or for a v0.6.0 assignment. */
  sessionId: string | undefined;
  /** When it was claimed, RFC 3339 in UTC with milliseconds like every time the SDK reports. */
  claimedAt: string | undefined;
  /** When the claim's Lease expires unless renewed. */
  expiresAt: string | undefined;
  /** A v0.6.0 assignment that has no Lease yet. */
  legacy: boolean;
  /** KubeVirt's `printableStatus`, such as `Running` or `Stopped`. */
  phase: string;
  running: boolean;
  ephemeral: boolean;
}

/** Builds the view of a member from its VM and (when claimed) its Lease. */
export function toDesktopView(vm: VirtualMachine, lease: LeaseObject | undefined): DesktopView {
  const namespace = vm.metadata.namespace ?? '';
  const member = vm.metadata.name ?? '';
  const pool = vm.metadata.labels?.[poolLabel] ?? '';
  const phase = vm.status?.printableStatus ?? 'Unknown';
  const legacy = lease === undefined ? classifyLegacy(vm) : { kind: 'not-legacy' as const };
  const expiresAt = lease && leaseExpiresAt(lease);
  const owner = lease ? lease.spec.holderIdentity : claimHolder(classifyLeaselessVm(vm));
  return {
    id: formatDesktopId({ kind: 'vm', namespace, member }),
    kind: 'vm',
    namespace,
    member,
    pool,
    poolId: formatPoolId({ kind: 'vm', namespace, pool }),
    owner: owner || undefined,
    sessionId: lease?.metadata.annotations?.[sessionIdAnnotation],
    claimedAt: normalizeTime(
      lease?.spec.acquireTime ??
        (legacy.kind === 'legacy-assigned'
          ? legacy.claimedAt
          : vm.metadata.annotations?.[claimedAtAnnotation]),
    ),
    expiresAt: expiresAt && formatTime(expiresAt),
    legacy: legacy.kind === 'legacy-assigned',
    phase,
    running: phase === 'Running',
    ephemeral: vm.metadata.labels?.[ephemeralLabel] === 'true',
  };
}

/** Whether a VM carries presentation state of a claim (the exact-identity annotation). */
export function presentedHolder(vm: VirtualMachine): string | undefined {
  return vm.metadata.annotations?.[assignedToKey];
}
