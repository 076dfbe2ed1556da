import type { AdmissionPlan } from '../capacity/admit-pool.js';
import type { PoolKind, VdiContext } from '../context.js';
import type { DesktopKind } from '../desktop-backend.js';
import type { VdiErrorCode } from '../errors.js';

/** How many members are made at once, unless the caller says otherwise. @category pools */
export const defaultCloneConcurrency = 4;

/**
 * How one member of a create or grow ended.
 *
 * - `ready`: it was made and exists.
 * - `failed` / `timed-out`: making it failed or did not finish in time; `error` says why.
 * - `cancelled`: the caller's signal ended the wait.
 * - `not-started`: an earlier failure stopped the run before this member was begun.
 * - `taken`: another call is making, or made, a member of this name (a concurrent grow, or a release recreating
 *   it); this call made nothing for it and leaves it alone.
 *
 * `removed` is set once cleanup deleted what the member left behind; `cloneLeft` says why a finished clone object
 * stayed when cleanup could delete the member but not that object; `heldBy` names who claimed the member this call
 * made before it gave up (its VM was there and looked free): cleanup leaves such a member to its holder.
 *
 * @category pools
 */
export interface MemberOutcome {
  member: string;
  /** The object that made (or was to make) it: for a VM, its VirtualMachineClone. */
  clone: string;
  status: 'ready' | 'failed' | 'timed-out' | 'cancelled' | 'not-started' | 'taken';
  error?: string;
  /** The `VdiError` code of `error`, such as `FORBIDDEN` when the identity lacks a permission. */
  code?: VdiErrorCode;
  removed?: boolean;
  /** Why cleanup left the member's finished clone object behind (it makes nothing more), when it did. */
  cloneLeft?: string;
  /** Who holds the member: a claim took it before this call gave up, so cleanup left it as a member of the pool. */
  heldBy?: string;
  /**
   * The snapshot of the source its clone restores from, when the call's members shared one (a VM pool's snapshot of
   * the golden VM): cleanup deletes it once the clones are gone.
   */
  snapshot?: string;
}

/** What {@link MemberSource.makeMembers} makes. @category pools */
export interface MakeMembersInput {
  namespace: string;
  pool: string;
  members: readonly string[];
  ephemeral: boolean;
  concurrency: number;
  timeoutMs: number;
  signal?: AbortSignal | undefined;
}

/**
 * The source a pool's members are made from, as read once before anything is written: for a VM pool, its golden
 * VM.
 *
 * @category pools
 */
export interface MemberSource {
  /** The source's name, as the members record it. */
  readonly name: string;
  /**
   * Admits `size` new members beside the existing `members` against the cluster's capacity.
   *
   * @throws `VdiError` `INSUFFICIENT_CAPACITY` when they do not fit.
   */
  admit(input: { size: number; members?: readonly string[] }): Promise<AdmissionPlan>;
  /**
   * Makes `members`, `concurrency` at a time, emitting `pool-progress`; the first failure stops new ones from
   * starting. Resolves with every member's outcome; never throws for one member's failure.
   */
  makeMembers(input: MakeMembersInput): Promise<MemberOutcome[]>;
}

/**
 * What making and removing pool members takes for one desktop kind. Pools decide what to make or remove; the
 * factory carries it out for its kind, so pools never see the kind's objects.
 *
 * @category pools
 */
export interface PoolMemberFactory {
  readonly kind: DesktopKind;
  /**
   * Reads the source new members are made from, in `namespace` only.
   *
   * @throws `VdiError` `GOLDEN_NOT_FOUND` when the namespace has no such source.
   */
  readSource(namespace: string, name: string): Promise<MemberSource>;
  /** The names of every object of the kind in the namespace, pool member or not: a new member may take none. */
  listTakenNames(namespace: string): Promise<Set<string>>;
  /**
   * The objects still making members of `pool` (for a VM, its VirtualMachineClones and the VMs a recreate staged a
   * member's replacement in), by name.
   */
  listPending(namespace: string, pool: string): Promise<string[]>;
  /** Deletes one object {@link PoolMemberFactory.listPending} named, so it makes no member afterwards. */
  deletePending(namespace: string, name: string): Promise<void>;
  /**
   * Deletes a member object, only while it is still the one read (`uid`), and resolves once it is gone (a VM stays
   * a moment, being deleted, until KubeVirt removes its finalizer).
   */
  deleteMember(input: { namespace: string; member: string; uid: string }): Promise<void>;
  /**
   * Deletes what the started members of a failed make left behind (the pending object first, then the member
   * if it carries the pool's label), emitting `pool-progress` `removed` and marking each outcome `removed`. A
   * finished pending object it may not delete is left to go with its member (KubeVirt deletes a finished clone
   * whose VM is gone); one still there afterwards stays, with the reason in the outcome's `cloneLeft`.
   */
  removeMade(input: {
    namespace: string;
    pool: string;
    outcomes: MemberOutcome[];
    concurrency: number;
  }): Promise<void>;
}

/**
 * A pool kind whose members the pool calls (create, resize, delete) make and remove, through its factory; a kind
 * without one makes its own (a container pool's reconcile).
 *
 * @category pools
 */
export interface MemberMakingPoolKind extends PoolKind {
  /** The factory that makes, lists and removes this kind's members for the pool calls of `ctx`. */
  memberFactory(ctx: VdiContext): PoolMemberFactory;
}

/** Whether the pool calls make the members of pools of this kind. @category pools */
export function makesMembers(poolKind: PoolKind): poolKind is MemberMakingPoolKind {
  return 'memberFactory' in poolKind;
}
