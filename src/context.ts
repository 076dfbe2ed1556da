import type { EventEmitter } from 'eventemitter3';
import type { AuditSink } from './audit.js';
import type { ClaimLimitInput, ClaimQueue, ClaimQueueInput } from './claim-policy.js';
import type { Clock } from './clock.js';
import type { DesktopBackend, DesktopKind, MemberFacts } from './desktop-backend.js';
import { VdiError } from './errors.js';
import type { VdiEvents } from './events.js';
import type { KubeCluster, ListOptions } from './kube/cluster.js';
import type { LeaseObject } from './kube-objects.js';
import type { PoolRollout } from './pool-rollout.js';
import type { PoolSettings } from './pool-settings.js';

/**
 * What every service shares: the adapter, the clock, the event emitter, the audit sink and the backend of each
 * desktop kind. A backend is made on a context and keeps using that context's cluster, so a copy of the context
 * with another `cluster` needs its backends made again on the copy.
 */
export interface VdiContext {
  cluster: KubeCluster;
  clock: Clock;
  events: EventEmitter<VdiEvents>;
  audit: AuditSink;
  /** The namespace a call uses when it names none. */
  defaultNamespace: string;
  /** How long a claim or start waits for a member going down before it answers; see `VdiOptions.goingDownWaitMs`. */
  goingDownWaitMs: number;
  /** A new, unguessable session ID. */
  newSessionId(): string;
  /** The backend that serves each desktop kind; a kind without one is not served. */
  backends: Partial<Record<DesktopKind, DesktopBackend>>;
  /** How each kind stores its pools (settings, size) and makes their members, beside its backend. */
  poolKinds: Partial<Record<DesktopKind, PoolKind>>;
  /** What the claim path asks of the features built on it: who may claim, who waits ahead, which limits hold. */
  claimPolicy: ClaimPolicy;
}

/**
 * What differs between pool kinds beyond their members, which the kind's {@link DesktopBackend} serves: where a
 * pool's settings and size are stored, and what its pools show an operator. Services and features read a pool
 * through it and never switch on the kind; a kind whose members the pool calls make adds its member factory
 * (`MemberMakingPoolKind`). Its calls take the context they run on, so a copy of the context with another
 * `cluster` reads through that one.
 *
 * @category backends
 */
export interface PoolKind {
  readonly kind: DesktopKind;
  /**
   * One pool's own settings as stored (a VM pool's settings ConfigMap, a container pool's spec); `undefined` when
   * the pool stores none.
   *
   * @throws `VdiError` `INVALID_INPUT` when what is stored cannot be read as settings.
   */
  readSettings(ctx: VdiContext, namespace: string, pool: string): Promise<PoolSettings | undefined>;
  /**
   * The settings of every pool of the namespace that stores some, by pool name; a stored value that cannot be read
   * counts as no settings. With `cached`, from this process's synced watch caches when it runs them.
   */
  readSettingsIn(
    ctx: VdiContext,
    namespace: string,
    options?: { cached?: boolean },
  ): Promise<Map<string, PoolSettings>>;
  /**
   * The pools of the namespace stored apart from their members, by name, with the size each asks for (`undefined`
   * when it cannot be read); absent for a kind whose pools are their members. The kind's members are listed only
   * in a namespace that stores such a pool.
   */
  readDeclaredSizes?(
    ctx: VdiContext,
    namespace: string,
    options?: { cached?: boolean },
  ): Promise<Map<string, number | undefined>>;
  /**
   * One pool as an operator watches it: its members, its Leases (waiters' too), the warm spares it keeps and the
   * members marked as such, and its settings.
   *
   * @throws `VdiError` `POOL_NOT_FOUND` when the namespace has no such pool of the kind.
   */
  readPoolFacts(ctx: VdiContext, namespace: string, pool: string): Promise<PoolFacts>;
  /**
   * What {@link PoolKind.readPoolFacts} reads, for every pool of the namespace whose settings carry a schedule or a
   * roll-out, by pool name: one list of each kind of object for the namespace, whatever the number of pools, and
   * none beyond the settings when no pool has either. With `cached`, from this process's synced watch caches.
   */
  readPlannedPoolFacts(
    ctx: VdiContext,
    namespace: string,
    options?: Pick<ListOptions, 'cached' | 'shared'>,
  ): Promise<Map<string, PoolFacts>>;
  /**
   * Pauses or resumes the roll-out under way of a pool of the kind stored apart from a VM pool's settings; the
   * roll-out as written, or `undefined` when the kind has no such pool, or it has no roll-out under way.
   */
  setRolloutPaused?(
    ctx: VdiContext,
    namespace: string,
    pool: string,
    paused: boolean,
  ): Promise<PoolRollout | undefined>;
}

/** What {@link PoolKind.readPoolFacts} reads of one pool. @category backends */
export interface PoolFacts {
  members: MemberFacts[];
  leases: LeaseObject[];
  /** How many free members the pool keeps running; `undefined` when it sets none. */
  minReady: number | undefined;
  /** The members started as warm spares. */
  marked: ReadonlySet<string>;
  /** When each member was last seen free, for a kind whose pools follow a schedule. */
  freeSince?: ReadonlyMap<string, Date>;
  /** The fewest members a scheduled pool of the kind keeps: 1 unless set (a VM pool is its members). */
  fewestMembers?: number;
  /** Whether a member counts warm for a roll-out only once Ready, not while it starts (a Pod): false unless set. */
  warmWhenReady?: boolean;
  settings: PoolSettings | undefined;
}

/**
 * The questions a claim asks while it plans, answered by the features built on the claim path (entitlements, the
 * waitlist, per-user limits) and wired by `createVdi`: the claim path knows the questions, never the features.
 *
 * @category access
 */
export interface ClaimPolicy {
  /**
   * Whether an identity may claim from a pool, asked by a self-service claim that names the user's groups before
   * it writes anything (an administrator's assign does not ask it): throws `NOT_ENTITLED` when the identity may not,
   * and else answers the pool's own limits and the groups the claim records.
   */
  admit(ctx: VdiContext, request: EntitlementRequest): Promise<PoolClaimLimits>;
  /** The free members of a pool a claim leaves to the waiters ahead of it, and how many wait. */
  heldForWaiters(input: ClaimQueueInput): ClaimQueue;
  /** The limit in force when several apply (the front end's and the pool's); `undefined` when none does. */
  limitOf(...limits: readonly (number | undefined)[]): number | undefined;
  /**
   * Whether the identity may take one more desktop under `limit`, from its claim Leases of every pool of the
   * namespace: `undefined` when it may, else the `USER_LIMIT_REACHED` error to throw.
   */
  refusedByLimit(input: ClaimLimitInput): VdiError | undefined;
}

/** What {@link ClaimPolicy.admit} answers for an identity it lets in: the limits the pool sets. @category access */
export interface PoolClaimLimits {
  /** How many desktops one identity may hold, in all pools of the namespace, and still claim from this pool. */
  maxDesktopsPerUser?: number | undefined;
  /**
   * What the claim records of the holder's groups on its Lease (`corral.dev/vdi-holder-groups`), for the session
   * engine to judge later whether the pool still lets the holder in; without it the claim is recorded unchecked.
   */
  holderGroups?: string | undefined;
}

/** What the claim path tells {@link ClaimPolicy.admit}: who claims from which pool. @category access */
export interface EntitlementRequest {
  kind: DesktopKind;
  namespace: string;
  pool: string;
  identity: string;
  groups: readonly string[];
  isAdmin: boolean;
}

/**
 * The backend that serves desktops of `kind`; services pick it by the member's kind and never by its objects.
 *
 * @throws {@link VdiError} `UNSUPPORTED_BACKEND` when no backend serves that kind here.
 */
export function backendFor(ctx: Pick<VdiContext, 'backends'>, kind: DesktopKind): DesktopBackend {
  const backend = ctx.backends[kind];
  if (backend) return backend;
  const served = Object.keys(ctx.backends);
  throw new VdiError(
    'UNSUPPORTED_BACKEND',
    `No backend serves "${kind}" desktops here; this SDK serves ${served.join(' and ') || 'no'} desktops, so pick a member of a pool of that kind.`,
    { details: { kind, served } },
  );
}

/**
 * How pools of `kind` are stored and made; services pick it by the pool's kind, as they pick its backend.
 *
 * @throws {@link VdiError} `UNSUPPORTED_BACKEND` when no pool kind serves that kind here.
 */
export function poolKindFor(ctx: Pick<VdiContext, 'poolKinds'>, kind: DesktopKind): PoolKind {
  const poolKind = ctx.poolKinds[kind];
  if (poolKind) return poolKind;
  const served = Object.keys(ctx.poolKinds);
  throw new VdiError(
    'UNSUPPORTED_BACKEND',
    `No pool kind serves "${kind}" pools here; this SDK serves ${served.join(' and ') || 'no'} pools, so pick a pool of that kind.`,
    { details: { kind, served } },
  );
}
