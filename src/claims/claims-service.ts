import { z } from 'zod';
import { canRelease, canStart, refusalError } from '../access.js';
import { type AuditAction, recordAudit } from '../audit.js';
import type { VdiContext } from '../context.js';
import { isVdiError, VdiError } from '../errors.js';
import { formatDesktopId, formatPoolId } from '../ids.js';
import {
  assignedToKey,
  claimedAtAnnotation,
  ephemeralLabel,
  leaseDurationSeconds,
  leaseMemberLabel,
  leasePoolLabel,
  poolLabel,
  sessionIdAnnotation,
} from '../keys.js';
import { isConflictReason } from '../kube/errors.js';
import type { LeaseObject, VirtualMachine } from '../kubevirt-types.js';
import { compareNatural } from '../pools/member-names.js';
import { recreateMember } from '../pools/recreate-member.js';
import {
  identitySchema,
  memberNameSchema,
  namespaceSchema,
  parseOptions,
  poolNameSchema,
  validateNamespace,
} from '../validate.js';
import { claimHolder, classifyClaim, isClaimable } from './claim-liveness.js';
import { classifyMember } from './classify-member.js';
import { type DesktopView, presentedHolder, toDesktopView } from './desktop-view.js';
import { leaseNameFor } from './lease-name.js';
import { isValidLabelValue, sanitizeLabelValue } from './sanitize-label-value.js';

/** Options of {@link ClaimsService.claim}. @category claims */
export interface ClaimOptions {
  /** The pool's name (the `corral.dev/vdi-pool` label value). */
  pool: string;
  /** The caller's exact identity, from the request pipeline. */
  identity: string;
  /** Defaults to the SDK's namespace. Only this namespace is read and written. */
  namespace?: string;
}

/** What a claim returns: the desktop, and how the claim came about. @category claims */
export interface ClaimResult extends DesktopView {
  owner: string;
  sessionId: string;
  /** The caller already held this desktop; the same session goes on. */
  retried: boolean;
  /** The claim took over a v0.6.0 assignment (or a claim whose Lease was lost) of the same identity. */
  adopted: boolean;
  /** Set when the desktop is claimed but did not start; start it again once the cause is fixed. */
  startError?: string;
}

/** Options naming one member and the caller. @category claims */
export interface MemberOptions {
  /** The member VM's name, such as `devpool-1`. */
  member: string;
  /** The caller's exact identity. */
  identity: string;
  namespace?: string;
  /** Act as an administrator: on any holder's desktop (a release is then recorded as a force-release). */
  asAdmin?: boolean;
}

/** What a release returns. @category claims */
export interface ReleaseResult {
  desktopId: string;
  /** Who held the desktop. */
  holder: string;
  /** An administrator released another identity's desktop. */
  force: boolean;
  /** How the member was reset: stopped (disks kept) or recreated from its golden VM. */
  reset: 'stopped' | 'recreated';
}

/** Options of {@link ClaimsService.listDesktops}. @category claims */
export interface ListDesktopsOptions {
  /** Only this identity's desktops. */
  identity?: string;
  /** Every desktop, claimed or not (an administrator's view). */
  all?: boolean;
  /** Namespaces to read; default the SDK's namespace. */
  namespaces?: string[];
  /** Only this pool's members. */
  pool?: string;
}

/** Options of {@link releaseMember}, the release path shared by users, administrators and the reclaim policy. */
export interface ReleaseMemberOptions {
  namespace: string;
  member: string;
  /** Who acts: the holder, an administrator, or `corral-vdi/broker`. */
  actor: string;
  asAdmin: boolean;
  /** The audit action; default `vdi release`, or `vdi force-release` for an administrator on another's desktop. */
  auditAction?: AuditAction;
  /** Release only the claim with this session ID; a newer claim of the member is `CLAIM_CHANGED`. */
  expectedSessionId?: string;
}

/** @deprecated Import `parseOptions` from `validate.ts`; this re-export remains until the broker moves. */
export { parseOptions } from '../validate.js';

const claimSchema = z.object({
  pool: poolNameSchema,
  identity: identitySchema,
  namespace: namespaceSchema.optional(),
});
const listSchema = z.object({
  identity: identitySchema.optional(),
  all: z.boolean().optional(),
  namespaces: z.array(namespaceSchema).optional(),
  pool: poolNameSchema.optional(),
});
const memberSchema = z.object({
  member: memberNameSchema,
  identity: identitySchema,
  namespace: namespaceSchema.optional(),
  asAdmin: z.boolean().optional(),
});

function poolSelector(pool: string): string {
  return `${poolLabel}=${pool}`;
}

/** Reads a member VM and checks that it belongs to a pool in that namespace. */
async function readMember(ctx: VdiContext, namespace: string, member: string): Promise<VirtualMachine> {
  const vm = await ctx.cluster.getVm(namespace, member);
  if (!vm) {
    throw new VdiError(
      'MEMBER_NOT_FOUND',
      `There is no VM "${member}" in namespace "${namespace}"; check the name and the namespace.`,
      {
        details: { namespace, member },
      },
    );
  }
  if (!vm.metadata.labels?.[poolLabel]) {
    throw new VdiError(
      'INVALID_INPUT',
      `VM "${namespace}/${member}" is not a member of any pool (it has no ${poolLabel} label).`,
      {
        details: { namespace, member },
      },
    );
  }
  return vm;
}

function newLease(
  ctx: VdiContext,
  namespace: string,
  pool: string,
  member: string,
  identity: string,
): LeaseObject {
  const now = ctx.clock.now().toISOString();
  return {
    metadata: {
      name: leaseNameFor(member),
      namespace,
      labels: {
        [leasePoolLabel]: pool,
        ...(isValidLabelValue(member) ? { [leaseMemberLabel]: member } : {}),
      },
      annotations: { [sessionIdAnnotation]: ctx.newSessionId() },
    },
    spec: { holderIdentity: identity, acquireTime: now, renewTime: now, leaseDurationSeconds },
  };
}

/** Writes the VM's presentation copy of the claim; the Lease stays the truth. */
async function presentClaim(
  ctx: VdiContext,
  vm: VirtualMachine,
  identity: string,
  claimedAt: string,
): Promise<void> {
  const annotations = vm.metadata.annotations ?? {};
  const label = sanitizeLabelValue(identity);
  if (
    annotations[assignedToKey] === identity &&
    vm.metadata.labels?.[assignedToKey] === label &&
    annotations[claimedAtAnnotation] === claimedAt
  ) {
    return;
  }
  await ctx.cluster.patchVm(vm.metadata.namespace ?? '', vm.metadata.name ?? '', {
    metadata: {
      labels: { [assignedToKey]: label },
      annotations: { [assignedToKey]: identity, [claimedAtAnnotation]: claimedAt },
    },
  });
}

/**
 * Resets a member and ends its claim: the one release path, used by holders, administrators and the reclaim
 * policy. A persistent member is stopped (its disks stay); an ephemeral one is recreated from its golden VM.
 * Only after that does the Lease go, deleted with its uid and resourceVersion as preconditions, and then the
 * VM's presentation copy. A failed reset keeps the claim, so the next call can retry.
 *
 * @throws {@link VdiError} `CLAIM_ENDED`, `NOT_HOLDER`, `CLAIM_CHANGED`, `STOP_FAILED`, `RECREATE_FAILED`,
 *   `MEMBER_NOT_FOUND`.
 */
export async function releaseMember(ctx: VdiContext, options: ReleaseMemberOptions): Promise<ReleaseResult> {
  const { namespace, member, actor, asAdmin } = options;
  const desktopId = formatDesktopId({ kind: 'vm', namespace, member });
  const lease = await ctx.cluster.getLease(namespace, leaseNameFor(member));
  const found = await ctx.cluster.getVm(namespace, member);
  // A claimed ephemeral member whose VM is gone or going was mid-recreate: the release finishes the recreate.
  const interrupted =
    lease !== undefined && (found === undefined || found.metadata.deletionTimestamp !== undefined);
  const vm = interrupted ? undefined : await readMember(ctx, namespace, member);
  // with the VM gone or going, the Lease alone says who holds the member
  const state = classifyMember({
    vm: vm ?? { metadata: { name: member }, spec: {} },
    lease,
    identity: actor,
    now: ctx.clock.now(),
  });
  const decision = canRelease({ state, identity: actor, isAdmin: asAdmin, desktopId });
  if (decision.kind === 'refused') throw refusalError(decision);
  const holder = decision.holder ?? actor;
  if (
    options.expectedSessionId !== undefined &&
    lease?.metadata.annotations?.[sessionIdAnnotation] !== options.expectedSessionId
  ) {
    throw new VdiError(
      'CLAIM_CHANGED',
      `Desktop ${desktopId} was claimed again since it was read; nothing was released.`,
      {
        details: { desktopId },
      },
    );
  }
  const force = holder !== actor;
  const action = options.auditAction ?? (force ? 'vdi force-release' : 'vdi release');
  const auditTarget = force ? `${desktopId} (holder ${holder})` : desktopId;
  const ephemeral = vm === undefined || vm.metadata.labels?.[ephemeralLabel] === 'true';
  try {
    if (ephemeral) await recreateMember(ctx, { namespace, vm: vm ?? member });
    else await ctx.cluster.stopVm(namespace, member);
  } catch (error) {
    const failed = new VdiError(
      ephemeral ? 'RECREATE_FAILED' : 'STOP_FAILED',
      `Could not ${ephemeral ? 'recreate' : 'stop'} ${desktopId}, so it stays claimed by ${holder}: ${(error as Error).message} Release it again once the cause is fixed.`,
      { retryable: true, details: { desktopId }, cause: error },
    );
    await recordAudit(ctx, { action, user: actor, target: auditTarget, error: failed });
    throw failed;
  }
  if (lease) {
    try {
      await ctx.cluster.deleteLease(namespace, lease.metadata.name ?? '', {
        uid: lease.metadata.uid ?? '',
        resourceVersion: lease.metadata.resourceVersion ?? '',
      });
    } catch (error) {
      if (!isVdiError(error, 'CONFLICT')) throw error;
      const changed = new VdiError(
        'CLAIM_CHANGED',
        `The claim on ${desktopId} changed while it was being released; read the desktop again before deciding.`,
        {
          details: { desktopId },
          cause: error,
        },
      );
      await recordAudit(ctx, { action, user: actor, target: auditTarget, error: changed });
      throw changed;
    }
  }
  await clearPresentation(ctx, namespace, member, holder);
  await recordAudit(ctx, { action, user: actor, target: auditTarget });
  ctx.events.emit('released', { desktopId, identity: actor, holder, force });
  return { desktopId, holder, force, reset: ephemeral ? 'recreated' : 'stopped' };
}

// Removes the presentation copy only while it still names the released holder: a new claim may have begun.
async function clearPresentation(
  ctx: VdiContext,
  namespace: string,
  member: string,
  holder: string,
): Promise<void> {
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const vm = await ctx.cluster.getVm(namespace, member);
    if (!vm) return;
    const annotated = presentedHolder(vm);
    const labeled = vm.metadata.labels?.[assignedToKey];
    const ours =
      annotated === holder || (annotated === undefined && labeled !== undefined && labeled === holder);
    if (!ours) return;
    try {
      await ctx.cluster.patchVm(namespace, member, {
        metadata: {
          resourceVersion: vm.metadata.resourceVersion,
          labels: { [assignedToKey]: null },
          annotations: { [assignedToKey]: null, [claimedAtAnnotation]: null },
        },
      });
      return;
    } catch (error) {
      if (!isConflictReason(error, 'Conflict')) throw error;
    }
  }
}

function shuffled<T>(items: T[]): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i -= 1) {
    const j = Math.floor(Math.random() * (i + 1));
    [copy[i], copy[j]] = [copy[j] as T, copy[i] as T];
  }
  return copy;
}

/** The claim primitives every front end uses. Create it with `createVdi`. @category claims */
export interface ClaimsService {
  /**
   * Claims a free member of a pool for `identity` and starts it. A retry returns the desktop the identity
   * already holds (same session). Members are tried in random order, so concurrent claimants rarely collide;
   * a claimant that loses a Lease race reads the pool again and tries a member that is still free.
   *
   * Guarantees: no member ever has two holders (the Lease create is first-writer-wins, a stale Lease is
   * replaced with its resourceVersion). A failed VM update or start keeps the claim, so no second user gets a
   * half-configured desktop; a start failure is returned as `startError`.
   *
   * @throws {@link VdiError} `NO_FREE_MEMBER`, `POOL_NOT_FOUND`, `INVALID_INPUT`.
   */
  claim(options: ClaimOptions): Promise<ClaimResult>;
  /**
   * Claims on behalf of a named user (an administrator's assign); the same rules as {@link ClaimsService.claim},
   * except that the lowest free member (in natural order) is taken.
   */
  assign(options: ClaimOptions & { actor?: string }): Promise<ClaimResult>;
  /**
   * Releases a desktop: stops it (or recreates an ephemeral member), then ends the claim. Only the holder, or
   * an administrator (`asAdmin`, recorded as a force-release), may release.
   *
   * @throws {@link VdiError} `NOT_HOLDER`, `CLAIM_ENDED`, `CLAIM_CHANGED`, `STOP_FAILED`, `RECREATE_FAILED`,
   *   `MEMBER_NOT_FOUND`.
   */
  release(options: MemberOptions): Promise<ReleaseResult>;
  /** The CLI's name for {@link ClaimsService.release}: the same call, the same rules. */
  unassign(options: MemberOptions): Promise<ReleaseResult>;
  /**
   * Starts the caller's desktop; a running desktop is left alone.
   *
   * @throws {@link VdiError} `NOT_HOLDER`, `CLAIM_ENDED`, `CLAIM_EXPIRED`, `START_FAILED`.
   */
  start(options: MemberOptions): Promise<DesktopView>;
  /**
   * Renews the caller's claim for another Lease duration.
   *
   * @throws {@link VdiError} `NOT_HOLDER`, `CLAIM_ENDED`, `CLAIM_EXPIRED`, `CLAIM_CHANGED`.
   */
  renew(options: MemberOptions): Promise<DesktopView>;
  /** One desktop. @throws {@link VdiError} `MEMBER_NOT_FOUND`, `INVALID_INPUT`. */
  getDesktop(options: { member: string; namespace?: string }): Promise<DesktopView>;
  /**
   * The desktops someone holds (a live Lease, a v0.6.0 assignment, or a running member whose Lease is gone), of
   * `identity` when given; with `all`, every pool member. An expired claim is nobody's desktop, as for a claim.
   */
  listDesktops(options: ListDesktopsOptions): Promise<DesktopView[]>;
}

/** Builds the claims service on a context. */
export function createClaimsService(ctx: VdiContext): ClaimsService {
  async function requireHolder(options: MemberOptions, call: string) {
    const { member, identity, namespace: asked, asAdmin } = parseOptions(memberSchema, options, call);
    const namespace = validateNamespace(asked ?? ctx.defaultNamespace);
    const desktopId = formatDesktopId({ kind: 'vm', namespace, member });
    const vm = await readMember(ctx, namespace, member);
    const lease = await ctx.cluster.getLease(namespace, leaseNameFor(member));
    const state = classifyMember({ vm, lease, identity, now: ctx.clock.now() });
    const decision = canStart({ state, identity, isAdmin: asAdmin ?? false, desktopId });
    if (decision.kind === 'refused') throw refusalError(decision);
    return { namespace, member, identity, desktopId, vm, lease };
  }

  async function startMember(
    namespace: string,
    member: string,
    identity: string,
  ): Promise<string | undefined> {
    const desktopId = formatDesktopId({ kind: 'vm', namespace, member });
    try {
      await ctx.cluster.startVm(namespace, member);
      ctx.events.emit('started', { desktopId, identity });
      return undefined;
    } catch (error) {
      const message = (error as Error).message;
      ctx.events.emit('start-failed', { desktopId, identity, error: message });
      return message;
    }
  }

  async function claimAs(
    options: ClaimOptions,
    actor: string | undefined,
    order: 'random' | 'lowest',
  ): Promise<ClaimResult> {
    const { pool, identity, namespace: asked } = parseOptions(claimSchema, options, 'claim');
    const namespace = validateNamespace(asked ?? ctx.defaultNamespace);
    const poolId = formatPoolId({ kind: 'vm', namespace, pool });
    const user = actor ?? identity;
    try {
      const result = await claimMember(namespace, pool, identity, order);
      await recordAudit(ctx, {
        action: 'vdi claim',
        user,
        target: result.id,
        ...(result.startError === undefined
          ? {}
          : { error: new Error(`claimed, but the start failed: ${result.startError}`) }),
      });
      ctx.events.emit('claimed', {
        desktopId: result.id,
        identity,
        sessionId: result.sessionId,
        adopted: result.adopted,
        retried: result.retried,
      });
      return result;
    } catch (error) {
      await recordAudit(ctx, { action: 'vdi claim', user, target: poolId, error });
      throw error;
    }
  }

  async function claimMember(
    namespace: string,
    pool: string,
    identity: string,
    order: 'random' | 'lowest',
  ): Promise<ClaimResult> {
    // Every lost race means another claimant won a member, so the rounds are bounded by the pool's size.
    for (let round = 0; ; round += 1) {
      const [vms, leases] = await Promise.all([
        ctx.cluster.listVms(namespace, poolSelector(pool)),
        ctx.cluster.listLeases(namespace, `${leasePoolLabel}=${pool}`),
      ]);
      if (vms.length === 0) {
        throw new VdiError(
          'POOL_NOT_FOUND',
          `There is no pool "${pool}" in namespace "${namespace}"; list the pools to see what exists.`,
          {
            details: { namespace, pool },
          },
        );
      }
      if (round > vms.length + 2) {
        throw new VdiError(
          'CLAIM_CHANGED',
          `The claims of pool "${pool}" kept changing while claiming; try again.`,
          {
            retryable: true,
            details: { namespace, pool },
          },
        );
      }
      const leaseByName = new Map(leases.map((lease) => [lease.metadata.name, lease]));
      const now = ctx.clock.now();
      const states = vms.map((vm) => {
        const lease = leaseByName.get(leaseNameFor(vm.metadata.name ?? ''));
        return {
          vm,
          lease,
          state: classifyMember({ vm, lease, identity, now }),
          claimable: isClaimable(classifyClaim({ vm, lease, now })),
        };
      });

      const held = states.find((entry) => entry.state.kind === 'held-by-caller');
      if (held?.lease) {
        const renewed = await renewLease(held.lease).catch((error: unknown) => {
          if (isVdiError(error, 'CONFLICT', 'NOT_FOUND')) return undefined;
          throw error;
        });
        if (!renewed) continue; // released or changed meanwhile: plan again
        return await finishClaim(held.vm, renewed, identity, { retried: true, adopted: false });
      }
      const adoptable = states.find(
        (entry) => entry.state.kind === 'legacy-adoptable' || entry.state.kind === 'orphan-adoptable',
      );
      const open = states.filter((entry) => entry.claimable);
      const free =
        order === 'random'
          ? shuffled(open)
          : open.sort((left, right) =>
              compareNatural(left.vm.metadata.name ?? '', right.vm.metadata.name ?? ''),
            );
      const candidate = adoptable ?? free[0];
      if (candidate) {
        const member = candidate.vm.metadata.name ?? '';
        const lease = newLease(ctx, namespace, pool, member, identity);
        try {
          const written = candidate.lease
            ? await ctx.cluster.replaceLease(namespace, {
                metadata: { ...lease.metadata, resourceVersion: candidate.lease.metadata.resourceVersion },
                spec: { ...lease.spec, leaseTransitions: (candidate.lease.spec.leaseTransitions ?? 0) + 1 },
              })
            : await ctx.cluster.createLease(namespace, lease);
          const adopted = candidate === adoptable;
          return await finishClaim(candidate.vm, written, identity, { retried: false, adopted });
        } catch (error) {
          if (!isVdiError(error, 'CONFLICT', 'NOT_FOUND')) throw error;
          // lost the race: read the pool again rather than trying members that may be taken too
          ctx.events.emit('claim-conflict', {
            desktopId: formatDesktopId({ kind: 'vm', namespace, member }),
            identity,
          });
          continue;
        }
      }
      throw new VdiError(
        'NO_FREE_MEMBER',
        `Pool "${pool}" in namespace "${namespace}" has no free member: every member has a user. Release (unassign) one, or grow the pool.`,
        { details: { namespace, pool, members: vms.length } },
      );
    }
  }

  async function renewLease(lease: LeaseObject): Promise<LeaseObject> {
    return await ctx.cluster.replaceLease(lease.metadata.namespace ?? '', {
      ...lease,
      spec: { ...lease.spec, renewTime: ctx.clock.now().toISOString() },
    });
  }

  async function finishClaim(
    vm: VirtualMachine,
    lease: LeaseObject,
    identity: string,
    how: { retried: boolean; adopted: boolean },
  ): Promise<ClaimResult> {
    const namespace = vm.metadata.namespace ?? '';
    const member = vm.metadata.name ?? '';
    // The claim already holds; a failure here keeps it, and the holder's retry repairs the VM.
    await presentClaim(ctx, vm, identity, lease.spec.acquireTime ?? ctx.clock.now().toISOString());
    const startError =
      vm.status?.printableStatus === 'Running' ? undefined : await startMember(namespace, member, identity);
    const current = (await ctx.cluster.getVm(namespace, member)) ?? vm;
    const view = toDesktopView(current, lease);
    return {
      ...view,
      owner: identity,
      sessionId: view.sessionId ?? '',
      ...how,
      ...(startError === undefined ? {} : { startError }),
    };
  }

  async function listDesktops(options: ListDesktopsOptions): Promise<DesktopView[]> {
    const { identity, all, namespaces: asked, pool } = parseOptions(listSchema, options, 'listDesktops');
    const namespaces = (asked ?? [ctx.defaultNamespace]).map(validateNamespace);
    const views: DesktopView[] = [];
    for (const namespace of namespaces) {
      const [vms, leases] = await Promise.all([
        ctx.cluster.listVms(namespace, pool === undefined ? poolLabel : poolSelector(pool)),
        ctx.cluster.listLeases(namespace, pool === undefined ? leasePoolLabel : `${leasePoolLabel}=${pool}`),
      ]);
      const leaseByName = new Map(leases.map((lease) => [lease.metadata.name, lease]));
      const now = ctx.clock.now();
      for (const vm of vms) {
        const lease = leaseByName.get(leaseNameFor(vm.metadata.name ?? ''));
        const holder = claimHolder(classifyClaim({ vm, lease, now }));
        if (all || (holder !== undefined && (identity === undefined || holder === identity))) {
          views.push(toDesktopView(vm, lease));
        }
      }
    }
    return views;
  }

  async function releaseAs(options: MemberOptions, call: string): Promise<ReleaseResult> {
    const { member, identity, namespace: asked, asAdmin } = parseOptions(memberSchema, options, call);
    return await releaseMember(ctx, {
      namespace: validateNamespace(asked ?? ctx.defaultNamespace),
      member,
      actor: identity,
      asAdmin: asAdmin ?? false,
    });
  }

  return {
    claim: (options) => claimAs(options, undefined, 'random'),
    // an administrator hands out members in order, as people expect; self-service spreads claimants out
    assign: ({ actor, ...options }) => claimAs(options, actor, 'lowest'),
    release: (options) => releaseAs(options, 'release'),
    unassign: (options) => releaseAs(options, 'unassign'),
    async start(options) {
      const { namespace, member, identity, desktopId, vm, lease } = await requireHolder(options, 'start');
      const startError = await startMember(namespace, member, identity);
      await recordAudit(ctx, {
        action: 'vdi start',
        user: identity,
        target: desktopId,
        ...(startError === undefined ? {} : { error: new Error(startError) }),
      });
      if (startError !== undefined) {
        throw new VdiError(
          'START_FAILED',
          `Could not start ${desktopId}: ${startError} The claim stays; start it again once the cause is fixed.`,
          {
            retryable: true,
            details: { desktopId },
          },
        );
      }
      return toDesktopView((await ctx.cluster.getVm(namespace, member)) ?? vm, lease);
    },
    async renew(options) {
      const { vm, lease, desktopId } = await requireHolder(options, 'renew');
      // an administrator passes the start rule for a v0.6.0 or Lease-less member, but there is nothing to renew
      if (lease === undefined) {
        throw new VdiError('CLAIM_ENDED', `${desktopId} has no claim Lease to renew; claim its pool first.`, {
          details: { desktopId },
        });
      }
      try {
        return toDesktopView(vm, await renewLease(lease));
      } catch (error) {
        if (!isVdiError(error, 'CONFLICT', 'NOT_FOUND')) throw error;
        throw new VdiError(
          'CLAIM_CHANGED',
          `The claim on ${desktopId} changed while renewing; read the desktop again.`,
          {
            details: { desktopId },
            cause: error,
          },
        );
      }
    },
    async getDesktop(options) {
      const { member, namespace: asked } = parseOptions(
        z.object({ member: memberNameSchema, namespace: namespaceSchema.optional() }),
        options,
        'getDesktop',
      );
      const namespace = validateNamespace(asked ?? ctx.defaultNamespace);
      const vm = await readMember(ctx, namespace, member);
      return toDesktopView(vm, await ctx.cluster.getLease(namespace, leaseNameFor(member)));
    },
    listDesktops,
  };
}
