import type { MemberFacts } from '../../../src/desktop-backend.js';
import type { LeaseObject } from '../../../src/kube-objects.js';

/** The instant the planner tests judge at. */
export const now = new Date('2026-07-02T12:30:00.000Z');

/** How a test member looks: its power, the presentation it carries, whether it is ephemeral or going. */
export interface MemberShape {
  power?: MemberFacts['power'];
  /** The `corral.dev/vdi-assigned-to` annotation. */
  holder?: string;
  /** The `corral.dev/vdi-assigned-to` label alone, as v0.6.0 wrote it. */
  label?: string;
  ephemeral?: boolean;
  deleting?: boolean;
  /** The session of the claim the copy presents. */
  presentedSession?: string;
}

/** A VM member of pool `devpool` in `corral-vms`, as a backend would report it. */
export function member(name: string, shape: MemberShape = {}): MemberFacts {
  const label = shape.label ?? shape.holder;
  return {
    kind: 'vm',
    namespace: 'corral-vms',
    member: name,
    pool: 'devpool',
    desktopId: `vm/corral-vms/${name}`,
    uid: `uid-${name}`,
    resourceVersion: '7',
    deleting: shape.deleting ?? false,
    power: shape.power ?? 'stopped',
    phase: shape.power === 'running' ? 'Running' : 'Stopped',
    address: undefined,
    node: undefined,
    consoles: ['vnc', 'serial'],
    devices: [],
    ephemeral: shape.ephemeral ?? false,
    source: 'golden',
    presentation: { holder: shape.holder, label, claimedAt: undefined, sessionId: shape.presentedSession },
    previousInstance: false,
    usesLegacyRunField: false,
  };
}

/** How a test Lease looks: its holder (none for a Lease that names nobody), and whether it ran out. */
export interface LeaseShape {
  holder?: string;
  expired?: boolean;
  sessionId?: string;
  /** The session a release under way marked (`corral.dev/vdi-releasing`). */
  releasing?: string;
  resourceVersion?: string;
  transitions?: number;
}

/** The claim Lease of `name`, renewed ten minutes before {@link now} for an hour, or three hours before when expired. */
export function leaseOf(name: string, shape: LeaseShape = {}): LeaseObject {
  const renewed = new Date(now.getTime() - (shape.expired ? 3 : 1 / 6) * 3600_000).toISOString();
  return {
    metadata: {
      name: `corral-vdi-${name}`,
      namespace: 'corral-vms',
      uid: `lease-uid-${name}`,
      resourceVersion: shape.resourceVersion ?? '42',
      labels: { 'corral.dev/vdi-pool': 'devpool' },
      annotations: {
        ...(shape.sessionId ? { 'corral.dev/vdi-session-id': shape.sessionId } : {}),
        ...(shape.releasing ? { 'corral.dev/vdi-releasing': shape.releasing } : {}),
      },
    },
    spec: {
      ...(shape.holder === undefined ? {} : { holderIdentity: shape.holder }),
      acquireTime: renewed,
      renewTime: renewed,
      leaseDurationSeconds: 3600,
      ...(shape.transitions === undefined ? {} : { leaseTransitions: shape.transitions }),
    },
  };
}
