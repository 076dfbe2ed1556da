import { recordAudit } from '../audit.js';
import { finishTakeover } from '../claims/finish-takeover.js';
import { releaseMember } from '../claims/release-desktop.js';
import { isReleasing } from '../claims/releasing-mark.js';
import { poolKindFor, type VdiContext } from '../context.js';
import {
  type DesktopBackend,
  type DesktopKind,
  defaultDesktopKind,
  type MemberFacts,
  type ResetHow,
} from '../desktop-backend.js';
import { isVdiError, VdiError } from '../errors.js';
import { forEachBounded } from '../for-each-bounded.js';
import { formatDesktopId } from '../ids.js';
import {
  leasePoolLabel,
  notEntitledAtAnnotation,
  reclaimNotifiedAnnotation,
  reclaimWarnedAnnotation,
  sessionIdAnnotation,
} from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import { leaseNameFor } from '../lease-name.js';
import type { PoolSettings } from '../pool-settings.js';
import { claimKeyOf, claimKindOf, isSameClaim } from './claim-key.js';
import { type ConsoleTracker, consoleEndFor, releaseCauseOf } from './console-tracker.js';
import type { InputTracker } from './input-tracker.js';
import { type LeftCopy, planCopySweep } from './plan-copy-sweep.js';
import { type ReclaimPolicy, warnedMark } from './plan-reclaim.js';
import { notifiedMark, planReclaimPass, planSessionStep, type SessionStep } from './plan-reclaim-pass.js';
import { postReclaimWebhook } from './reclaim-webhook.js';
import { updateClaimLease } from './update-claim-lease.js';

/** The identity the reclaim policy acts as, in the audit log and on events. @category sessions */
export const reclaimActor = 'corral-vdi/broker';

/** What one pass did. @category sessions */
export interface SessionPassResult {
  /** Live claims looked at. */
  desktops: number;
  /** Leases renewed. */
  renewed: number;
  /** Leases whose session marks were written because an earlier write failed. */
  marked: number;
  reclaimed: number;
  /** Reclaims of `notify` pools reported instead of carried out; their claims stay. */
  notified: number;
  /** Holders warned that their desktop is reclaimed soon (idle, maximum age). */
  warned: number;
  /** Claims marked because their pool no longer lets their holder in; each is reclaimed after the grace. */
  notEntitled: number;
  /** Marks of claims whose pool lets their holder in again, cleared. */
  entitledAgain: number;
  /**
   * Releases that had stopped half way (member gone, or marked longer ago than the bound), and takeover resets whose
   * recreate failed half way (member gone), finished by this pass.
   */
  resumed: number;
  /** Reclaims, resumed releases and takeover resets that failed; their claims stay and the next pass tries again. */
  failed: number;
  /** Presentation copies removed because their claims had ended (a claim's take-back of its copy failed). */
  cleared: number;
  /** Lists and writes that failed; the next pass tries again. Failed reclaims are in the audit log instead. */
  errors: VdiError[];
}

/** What a pass works with: the served namespaces, the consoles of this process, the policy and the members. */
export interface ReclaimPassSetup {
  namespaces: readonly string[];
  tracker: ConsoleTracker;
  inputs: InputTracker;
  /** The pools' own settings as the last pass read them, by namespace: for views between passes. */
  poolSettings: Map<string, ReadonlyMap<string, PoolSettings>>;
  /** The backend of each served kind; a claim is reset through the one of its member's kind. */
  backends: readonly DesktopBackend[];
  policy: ReclaimPolicy;
  renewIntervalMs: number | undefined;
  processStartedAt: Date;
  /** Called before each write; a throw stops the pass's writes (see {@link SessionEngineOptions.fence}). */
  fence: (() => Promise<void>) | undefined;
}

type Due<Kind extends SessionStep['kind']> = Extract<SessionStep, { kind: Kind }>;

const writeConcurrency = 16;
const reclaimConcurrency = 4;

function asVdiError(error: unknown): VdiError {
  return isVdiError(error) ? error : new VdiError('INTERNAL', String(error), { cause: error });
}

/**
 * One pass over the served namespaces: each namespace's claim Leases are read with one list request (none when
 * the namespace's watch cache runs),
 * {@link planReclaimPass} decides, and the steps run: renewals and missed marks first, then reclaims through the
 * same path as a release. Failures are counted and collected, never thrown.
 */
export async function runReclaimPass(ctx: VdiContext, setup: ReclaimPassSetup): Promise<SessionPassResult> {
  const result: SessionPassResult = {
    desktops: 0,
    renewed: 0,
    marked: 0,
    reclaimed: 0,
    notified: 0,
    warned: 0,
    notEntitled: 0,
    entitledAgain: 0,
    resumed: 0,
    failed: 0,
    cleared: 0,
    errors: [],
  };
  // the first refusal stops every later write of the pass, and is reported once
  let refusal: VdiError | undefined;
  const fence = async () => {
    if (refusal) throw refusal;
    try {
      await setup.fence?.();
    } catch (error) {
      refusal ??= asVdiError(error);
      throw refusal;
    }
  };
  const collect = (error: unknown) => {
    if (error !== refusal) result.errors.push(asVdiError(error));
  };
  await Promise.all(
    setup.namespaces.map((namespace) => passOver(ctx, { ...setup, fence }, namespace, result, collect)),
  );
  if (refusal) result.errors.push(refusal);
  return result;
}

async function passOver(
  ctx: VdiContext,
  setup: ReclaimPassSetup,
  namespace: string,
  result: SessionPassResult,
  collect: (error: unknown) => void,
): Promise<void> {
  try {
    await passOverNamespace(ctx, setup, namespace, result, collect);
  } catch (error) {
    collect(error);
  }
}

async function passOverNamespace(
  ctx: VdiContext,
  setup: ReclaimPassSetup,
  namespace: string,
  result: SessionPassResult,
  collect: (error: unknown) => void,
): Promise<void> {
  for (const failure of await setup.inputs.flush(namespace)) result.errors.push(asVdiError(failure));
  // with the namespace's watch cache started, a pass lists nothing: the cache and this process's writes suffice
  const cached = ctx.cluster.isCaching(namespace);
  const leases = await ctx.cluster.listLeases(namespace, leasePoolLabel, { cached });
  const input = {
    leases,
    consoles: setup.tracker.trackedIn(namespace),
    replicaId: setup.tracker.replicaId,
    inputs: setup.inputs.inputsIn(namespace),
    now: ctx.clock.now(),
    policy: setup.policy,
    renewIntervalMs: setup.renewIntervalMs,
    processStartedAt: setup.processStartedAt,
  };
  let plan = planReclaimPass(input);
  let settings: ReadonlyMap<string, PoolSettings> | undefined;
  // a pass with nothing due and nobody connected through the broker reads only the Leases
  if (plan.needsSettings) {
    settings = await readSettingsIn(ctx, namespace, leases);
    setup.poolSettings.set(namespace, settings);
    plan = planReclaimPass({ ...input, settings });
  }
  // only the kinds the claims name are listed; a claim that names none may be of any kind
  const kinds = new Set(leases.map(claimKindOf));
  const needed = plan.needsMembers
    ? setup.backends.filter((backend) => kinds.has(backend.kind) || kinds.has(undefined))
    : [];
  // the watch caches hold the members of a backend that follows them there (VMs and their instances, not Pods):
  // with them those members cost no request
  const fromCaches = cached
    ? setup.backends.filter((backend) => backend.followMembers !== undefined && !needed.includes(backend))
    : [];
  const listed = (
    await Promise.all(
      [...needed, ...fromCaches].map((backend) => backend.listMembers(namespace, undefined, { cached })),
    )
  ).flat();
  if (plan.needsMembers) {
    plan = planReclaimPass({
      ...input,
      settings,
      members: listed.map((facts) => facts.member),
      deleting: listed.filter((facts) => facts.deleting).map((facts) => facts.member),
    });
  }
  result.desktops += plan.desktops;
  const writes = plan.steps.filter(
    (step): step is Due<'renew' | 'mark'> => step.kind === 'renew' || step.kind === 'mark',
  );
  const warnings = plan.steps.filter((step): step is Due<'warn'> => step.kind === 'warn');
  const entitlements = plan.steps.filter((step): step is Due<'entitlement'> => step.kind === 'entitlement');
  const reclaims = plan.steps.filter(
    (step): step is Due<'reclaim' | 'resume' | 'finish-reset'> =>
      step.kind === 'reclaim' || step.kind === 'resume' || step.kind === 'finish-reset',
  );
  await forEachBounded(writes, writeConcurrency, (step) =>
    write(ctx, setup, namespace, step, result).catch(collect),
  );
  await forEachBounded(warnings, writeConcurrency, (step) =>
    warn(ctx, setup, namespace, settings, step, result).catch(collect),
  );
  await forEachBounded(entitlements, writeConcurrency, (step) =>
    markEntitlement(ctx, setup, namespace, step, result).catch(collect),
  );
  await forEachBounded(reclaims, reclaimConcurrency, (step) =>
    (step.kind === 'reclaim'
      ? reclaim(ctx, setup, namespace, settings, step, result)
      : step.kind === 'resume'
        ? resume(ctx, setup, namespace, step, result)
        : finishReset(ctx, setup, namespace, step, result)
    ).catch(collect),
  );
  await forEachBounded(planCopySweep(leases, listed), writeConcurrency, (copy) =>
    clearLeftCopy(ctx, setup, copy, result).catch(collect),
  );
}

/** Removes a copy whose claim ended, once a read of the member's Lease after the members' list confirms it. */
async function clearLeftCopy(
  ctx: VdiContext,
  setup: ReclaimPassSetup,
  { facts, holder, sessionId }: LeftCopy,
  result: SessionPassResult,
): Promise<void> {
  const backend = setup.backends.find((candidate) => candidate.kind === facts.kind);
  if (!backend) return;
  const { namespace, member } = facts;
  // the Leases were listed before the members: a claim that wrote its Lease and then its copy in between shows here
  const lease = await ctx.cluster.getLease(namespace, leaseNameFor(member));
  if (lease?.spec.holderIdentity === holder) return;
  await setup.fence?.();
  if (await backend.clearPresentation({ namespace, member }, holder, sessionId)) result.cleared += 1;
}

/**
 * The namespace's pools' own settings, as each kind stores them: the default kind's always (a claim that names no
 * kind is of it), another kind's when a claim is of it (pool names are unique across kinds in a namespace).
 */
async function readSettingsIn(
  ctx: VdiContext,
  namespace: string,
  leases: readonly LeaseObject[],
): Promise<Map<string, PoolSettings>> {
  const kinds = new Set([defaultDesktopKind, ...leases.flatMap((lease) => claimKindOf(lease) ?? [])]);
  // cached settings a moment old plan as a pass a moment earlier would; a reclaim reads its claim fresh to act
  const how = { cached: ctx.cluster.isCaching(namespace) };
  const read = await Promise.all(
    [...kinds]
      .filter((kind) => ctx.poolKinds[kind] !== undefined)
      .map((kind) => poolKindFor(ctx, kind).readSettingsIn(ctx, namespace, how)),
  );
  return new Map(read.flatMap((settings) => [...settings]));
}

async function write(
  ctx: VdiContext,
  { tracker, fence }: ReclaimPassSetup,
  namespace: string,
  step: Due<'renew' | 'mark'>,
  result: SessionPassResult,
): Promise<void> {
  const { member, lease } = step;
  await fence?.();
  const renew = step.kind === 'renew';
  const entry = tracker.trackedFor(namespace, member, lease);
  const version = entry?.version ?? 0;
  const outcome = await updateClaimLease(
    ctx,
    { namespace, name: lease.metadata.name ?? '', claim: claimKeyOf(lease), known: lease },
    (current) => {
      // this replica's entry goes with the write, and dead replicas' entries are dropped
      const marked = tracker.mark(current, entry, true) ?? current;
      // a claim whose release began since the list is left to that release
      if (isReleasing(current)) return undefined;
      if (!renew) return marked === current ? undefined : marked;
      return { ...marked, spec: { ...marked.spec, renewTime: ctx.clock.now().toISOString() } };
    },
  );
  if (outcome.kind === 'gone') {
    if (entry) tracker.forget(namespace, member, entry);
    return;
  }
  if (entry && entry.written < version) {
    if (outcome.kind === 'written') result.marked += 1;
    tracker.noteWritten(namespace, member, entry, version);
  }
  if (renew && outcome.kind === 'written') {
    result.renewed += 1;
    ctx.events.emit('renewed', {
      desktopId: formatDesktopId({ kind: claimKindOf(lease) ?? defaultDesktopKind, namespace, member }),
      holder: lease.spec.holderIdentity ?? '',
    });
  }
}

/**
 * Warns the holder that the desktop is reclaimed at `reclaimAt` for `reason`, once: the Lease records the reason and
 * instant warned about, written conditionally on the Lease as read, so of several replicas warning at once one wins
 * the write, and only it emits the event and calls the pool's webhook.
 */
async function warn(
  ctx: VdiContext,
  setup: ReclaimPassSetup,
  namespace: string,
  settings: ReadonlyMap<string, PoolSettings> | undefined,
  { member, lease, reason, reclaimAt }: Due<'warn'>,
  result: SessionPassResult,
): Promise<void> {
  const mark = warnedMark({ reason, at: reclaimAt });
  await setup.fence?.();
  const outcome = await updateClaimLease(
    ctx,
    { namespace, name: lease.metadata.name ?? '', claim: claimKeyOf(lease), known: lease },
    (current) => {
      if (isReleasing(current) || current.metadata.annotations?.[reclaimWarnedAnnotation] === mark)
        return undefined;
      const annotations = { ...current.metadata.annotations, [reclaimWarnedAnnotation]: mark };
      return { ...current, metadata: { ...current.metadata, annotations } };
    },
  );
  if (outcome.kind !== 'written') return;
  result.warned += 1;
  const kind = await kindOfClaim(setup, namespace, member, lease);
  const desktopId = formatDesktopId({ kind, namespace, member });
  const pool = lease.metadata.labels?.[leasePoolLabel] ?? '';
  const holder = lease.spec.holderIdentity ?? '';
  const facts = { desktopId, pool, holder, reason, reclaimAt: reclaimAt.toISOString() };
  const webhook = settings?.get(pool)?.reclaimWebhook;
  // after the mark, so a crash in between loses this call rather than repeating it
  const delivery =
    webhook === undefined ? undefined : await postReclaimWebhook(webhook, 'reclaim-warning', facts);
  ctx.events.emit('reclaim-warning', { ...facts, ...(delivery ? { webhook: delivery } : {}) });
  if (reason === 'idle') ctx.events.emit('idle-warning', { desktopId, holder, idleAt: facts.reclaimAt });
}

/**
 * Marks a claim whose pool no longer lets its holder in with the instant its grace runs from, or clears the mark of
 * one that is let in again. The mark is the first of two writes: a process that stops before the reclaim leaves it,
 * and the next pass (of any replica) reclaims once the grace since it has passed.
 */
async function markEntitlement(
  ctx: VdiContext,
  setup: ReclaimPassSetup,
  namespace: string,
  { member, lease, notEntitledAt }: Due<'entitlement'>,
  result: SessionPassResult,
): Promise<void> {
  await setup.fence?.();
  const outcome = await updateClaimLease(
    ctx,
    { namespace, name: lease.metadata.name ?? '', claim: claimKeyOf(lease), known: lease },
    (current) => {
      const { [notEntitledAtAnnotation]: marked, ...rest } = current.metadata.annotations ?? {};
      // a release under way owns the claim; a mark written meanwhile by another pass stands
      if (isReleasing(current) || (marked !== undefined) === (notEntitledAt !== undefined)) return undefined;
      const annotations =
        notEntitledAt === undefined
          ? rest
          : { ...rest, [notEntitledAtAnnotation]: notEntitledAt.toISOString() };
      return { ...current, metadata: { ...current.metadata, annotations } };
    },
  );
  if (outcome.kind !== 'written') return;
  if (notEntitledAt === undefined) {
    result.entitledAgain += 1;
    return;
  }
  result.notEntitled += 1;
  const kind = await kindOfClaim(setup, namespace, member, lease);
  ctx.events.emit('not-entitled', {
    desktopId: formatDesktopId({ kind, namespace, member }),
    holder: lease.spec.holderIdentity ?? '',
    reclaimAt: new Date(notEntitledAt.getTime() + setup.policy.disconnectGraceMs).toISOString(),
  });
}

async function reclaim(
  ctx: VdiContext,
  setup: ReclaimPassSetup,
  namespace: string,
  settings: ReadonlyMap<string, PoolSettings> | undefined,
  { member, lease: listed }: Due<'reclaim'>,
  result: SessionPassResult,
): Promise<void> {
  const { tracker } = setup;
  const holder = listed.spec.holderIdentity ?? '';
  // the list may be old by now: act only if this very claim is still due
  const lease = await ctx.cluster.getLease(namespace, leaseNameFor(member));
  if (!lease || !isSameClaim(claimKeyOf(lease), claimKeyOf(listed))) return;
  const kind = await kindOfClaim(setup, namespace, member, lease);
  const desktopId = formatDesktopId({ kind, namespace, member });
  const tracked = tracker.trackedFor(namespace, member, lease);
  const input = setup.inputs.inputsIn(namespace).get(member);
  const step = planSessionStep(lease, {
    consoles: new Map(tracked ? [[member, tracked]] : []),
    replicaId: tracker.replicaId,
    inputs: new Map(input ? [[member, input]] : []),
    settings,
    members: [member],
    now: ctx.clock.now(),
    policy: setup.policy,
    renewIntervalMs: setup.renewIntervalMs,
    processStartedAt: setup.processStartedAt,
  });
  if (step.kind !== 'reclaim') return;
  await setup.fence?.();
  if (step.notify) {
    const pool = lease.metadata.labels?.[leasePoolLabel] ?? '';
    await notify(ctx, { desktopId, pool, lease, step, webhook: settings?.get(pool)?.reclaimWebhook });
    result.notified += 1;
    return;
  }
  const sessionId = lease.metadata.annotations?.[sessionIdAnnotation];
  const end = consoleEndFor(step.reason);
  const expectedEnd = tracker.expectEnd(namespace, member, end);
  let reset: ResetHow;
  try {
    ({ reset } = await releaseMember(ctx, {
      kind,
      namespace,
      member,
      actor: reclaimActor,
      asAdmin: true,
      auditAction: `vdi reclaim (${step.reason})`,
      cause: releaseCauseOf(end),
      ...(sessionId === undefined ? {} : { expectedSessionId: sessionId }),
      ...fenceOf(setup),
    }));
  } catch (error) {
    // released by someone else meanwhile: nothing is left to reclaim
    if (isVdiError(error, 'CLAIM_ENDED', 'CLAIM_CHANGED')) return;
    // a fenced replica stops, as a crash would: the leader finishes the reclaim
    if (isVdiError(error, 'NOT_LEADER')) throw error;
    result.failed += 1;
    const message = error instanceof Error ? error.message : String(error);
    ctx.events.emit('reclaim-failed', { desktopId, holder, reason: step.reason, error: message });
    return;
  } finally {
    // on success the end below takes over in the same turn
    expectedEnd();
  }
  const entry = tracker.trackedFor(namespace, member, lease);
  if (entry) tracker.forget(namespace, member, entry);
  // a console outlives the claim until the guest goes (a max-duration reclaim has consoles open); a failed reset
  // kept them, so they end only now
  void tracker.endConsolesWhenDown({ kind, namespace, member, reset }, end).catch(() => undefined);
  result.reclaimed += 1;
  ctx.events.emit('reclaimed', { desktopId, holder, reason: step.reason });
}

function fenceOf({ fence }: ReclaimPassSetup): { fence?: () => Promise<void> } {
  return fence === undefined ? {} : { fence };
}

/**
 * Reports a due reclaim of a `notify` pool instead of carrying it out: the `reclaim-notified` event, the audit
 * record, a POST of the same facts to the pool's webhook when it has one, then the mark on the Lease that keeps
 * the next passes from reporting it again. A process that stops between the POST and the mark reports it once more.
 */
async function notify(
  ctx: VdiContext,
  input: {
    desktopId: string;
    pool: string;
    lease: LeaseObject;
    step: Due<'reclaim'>;
    webhook: string | undefined;
  },
): Promise<void> {
  const { desktopId, pool, lease, step, webhook } = input;
  const holder = lease.spec.holderIdentity ?? '';
  const facts = { desktopId, pool, holder, reason: step.reason, dueAt: step.dueAt.toISOString() };
  const delivery =
    webhook === undefined ? undefined : await postReclaimWebhook(webhook, 'reclaim-notified', facts);
  ctx.events.emit('reclaim-notified', { ...facts, ...(delivery ? { webhook: delivery } : {}) });
  await recordAudit(ctx, {
    action: 'vdi reclaim notify',
    user: reclaimActor,
    target: `${desktopId} (${step.reason})`,
    ...(delivery && !delivery.ok
      ? {
          error: new VdiError('INTERNAL', `The reclaim webhook failed: ${delivery.error ?? delivery.status}`),
        }
      : {}),
  });
  const mark = notifiedMark(step.reason, step.dueAt);
  await updateClaimLease(
    ctx,
    {
      namespace: lease.metadata.namespace ?? '',
      name: lease.metadata.name ?? '',
      claim: claimKeyOf(lease),
      known: lease,
    },
    (current) => {
      if (current.metadata.annotations?.[reclaimNotifiedAnnotation] === mark) return undefined;
      const annotations = { ...current.metadata.annotations, [reclaimNotifiedAnnotation]: mark };
      return { ...current, metadata: { ...current.metadata, annotations } };
    },
  );
}

/**
 * The kind of a claim's member: as its Lease records it, or for a Lease written before claims recorded it, the
 * kind of the backend that has the member (a VM when none has it: claims of that time were all of VMs).
 */
async function kindOfClaim(
  setup: ReclaimPassSetup,
  namespace: string,
  member: string,
  lease: LeaseObject,
): Promise<DesktopKind> {
  const recorded = claimKindOf(lease);
  if (recorded) return recorded;
  for (const backend of setup.backends) {
    // an object of that name that is no pool member (another kind's) is not this backend's member
    const facts = await backend.readMember({ namespace, member }).catch((error: unknown) => {
      if (isVdiError(error, 'MEMBER_NOT_FOUND')) return undefined;
      throw error;
    });
    if (facts) return backend.kind;
  }
  return defaultDesktopKind;
}

/**
 * Resumes a release that stopped half way (its member gone or going, or its process dead), pinned to the session it
 * marked, audited as the release it finishes: the member is reset and the claim ends. A failure keeps the claim, is
 * in the audit log, and the next pass tries again.
 */
async function resume(
  ctx: VdiContext,
  setup: ReclaimPassSetup,
  namespace: string,
  { member, lease }: Due<'resume'>,
  result: SessionPassResult,
): Promise<void> {
  try {
    await releaseMember(ctx, {
      kind: await kindOfClaim(setup, namespace, member, lease),
      namespace,
      member,
      actor: reclaimActor,
      asAdmin: true,
      auditAction: 'vdi release',
      expectedSessionId: lease.metadata.annotations?.[sessionIdAnnotation] ?? '',
      ...fenceOf(setup),
    });
  } catch (error) {
    // finished or claimed again meanwhile: nothing is left to resume
    if (isVdiError(error, 'CLAIM_ENDED', 'CLAIM_CHANGED')) return;
    if (isVdiError(error, 'NOT_LEADER')) throw error;
    result.failed += 1;
    return;
  }
  result.resumed += 1;
}

/**
 * Makes again a member that a claim took over and whose recreate failed half way, and clears the claim's reset
 * mark: the claim stays its holder's, who gets the fresh member on their next claim or start.
 */
async function finishReset(
  ctx: VdiContext,
  setup: ReclaimPassSetup,
  namespace: string,
  { member, lease }: Due<'finish-reset'>,
  result: SessionPassResult,
): Promise<void> {
  const kind = claimKindOf(lease) ?? defaultDesktopKind;
  const backend = setup.backends.find((candidate) => candidate.kind === kind);
  if (!backend) return;
  const pool = lease.metadata.labels?.[leasePoolLabel] ?? '';
  try {
    await finishTakeover(ctx, backend, {
      facts: goneMember({ kind, namespace, member, pool }),
      lease,
      actor: reclaimActor,
      ...fenceOf(setup),
    });
  } catch (error) {
    // claimed again or released meanwhile: the claim that did so owns the member now
    if (isVdiError(error, 'CLAIM_CHANGED')) return;
    if (isVdiError(error, 'NOT_LEADER')) throw error;
    result.failed += 1;
    return;
  }
  result.resumed += 1;
}

/** The facts of a member that does not exist: nothing runs on it, and only its reset makes it again. */
function goneMember(at: { kind: DesktopKind; namespace: string; member: string; pool: string }): MemberFacts {
  return {
    ...at,
    desktopId: formatDesktopId(at),
    uid: '',
    resourceVersion: '',
    deleting: false,
    power: 'stopped',
    phase: 'Gone',
    address: undefined,
    node: undefined,
    consoles: [],
    devices: [],
    // a member made again from its golden VM, whatever its pool keeps otherwise
    ephemeral: true,
    source: undefined,
    presentation: { holder: undefined, label: undefined, claimedAt: undefined, sessionId: undefined },
    previousInstance: false,
    usesLegacyRunField: false,
  };
}
