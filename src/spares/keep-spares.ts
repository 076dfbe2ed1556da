import { z } from 'zod';
import { planAdmission, readGoldenVm } from '../capacity/capacity-service.js';
import { readDeviceNeeds } from '../capacity/device-needs.js';
import { deleteLeaseAsRead } from '../claims/lease-writes.js';
import { takeRemovalLease } from '../claims/removal-lease.js';
import { backendFor, poolKindFor, type VdiContext } from '../context.js';
import type { MemberFacts } from '../desktop-backend.js';
import { isVdiError } from '../errors.js';
import { formatPoolId } from '../ids.js';
import { poolLabel, spareAnnotation } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import type { VirtualMachine } from '../kubevirt-types.js';
import { leaseNameFor } from '../lease-name.js';
import { namespaceSchema, parseOptions, poolNameSchema, validateNamespace } from '../validate.js';
import { listVmPoolMembers } from '../vm/vm-backend.js';
import { readMinReady } from './min-ready.js';
import { planSpares, type SparesPlan } from './plan-spares.js';
import { markSpare } from './spare-writes.js';

/** What one keeper pass did to a pool. @category spares */
export interface KeepSparesResult {
  /** `vm/<namespace>/<pool>`. */
  id: string;
  minReady: number;
  /** Free members running or starting when the pass read the pool. */
  ready: string[];
  /** Free stopped members this pass started as spares. */
  started: string[];
  /** Marked spares beyond `minReady` this pass stopped. */
  stopped: string[];
  /** Members the plan named that a claim (or a removal) took first: left alone. */
  skipped: string[];
  /** Spares still missing: too few stopped free members, or no device room for more. */
  short: number;
}

/** One keeper read of a VM pool: its member objects, their facts and the namespace's Leases. */
export interface SparesRead {
  namespace: string;
  pool: string;
  minReady: number;
  vms: VirtualMachine[];
  members: MemberFacts[];
  leases: LeaseObject[];
}

const poolSchema = z.object({ name: poolNameSchema, namespace: namespaceSchema.optional() });
const namespaceOnly = z.object({ namespace: namespaceSchema.optional() });

/**
 * Reads what a keeper pass of one VM pool plans from; `minReady` is 0 when no member carries one. With `cached`,
 * from this process's synced watch caches: every write of the pass is conditional on what it read, so a stale read
 * costs a refused write or a pass's delay, never a member taken from its holder.
 */
export async function readSpares(
  ctx: VdiContext,
  namespace: string,
  pool: string,
  options: { cached?: boolean } = {},
): Promise<SparesRead> {
  // one list of the pool's VMs gives both their marks and their facts
  const [{ vms, members }, leases] = await Promise.all([
    listVmPoolMembers(ctx.cluster, namespace, pool, options),
    ctx.cluster.listLeases(namespace, undefined, options),
  ]);
  return { namespace, pool, minReady: readMinReady(vms) ?? 0, vms, members, leases };
}

// how many more members the golden VM's devices leave room for; undefined when it asks for none
async function readFits(ctx: VdiContext, read: SparesRead, wanted: number): Promise<number | undefined> {
  const source = read.members.find((member) => member.source !== undefined)?.source;
  if (source === undefined) return undefined;
  let golden: VirtualMachine;
  try {
    golden = await readGoldenVm(ctx, read.namespace, source);
  } catch (error) {
    // without the golden VM the devices are unknown: starting is how to find out
    if (isVdiError(error, 'GOLDEN_NOT_FOUND')) return undefined;
    throw error;
  }
  if (readDeviceNeeds(golden, {}).length === 0) return undefined;
  const plan = await planAdmission(ctx, { golden, size: wanted, namespace: read.namespace });
  return plan.fits ?? wanted;
}

/** Plans a keeper pass from a read: the members' marks, and the device room when it would start any. */
export async function planFromRead(ctx: VdiContext, read: SparesRead): Promise<SparesPlan> {
  const marked = new Set(
    read.vms
      .filter((vm) => vm.metadata.annotations?.[spareAnnotation] !== undefined)
      .map((vm) => vm.metadata.name ?? ''),
  );
  const input = {
    minReady: read.minReady,
    members: read.members,
    leases: read.leases,
    marked,
    now: ctx.clock.now(),
  };
  const plan = planSpares(input);
  if (plan.start.length === 0) return plan;
  return planSpares({ ...input, fits: await readFits(ctx, read, plan.start.length) });
}

/**
 * Carries out a keeper plan made from `read`. A start marks the member first, so a member that runs without the
 * mark is always one somebody else started. A stop takes the member's claim Lease first (holder
 * `corral-vdi/resize`, conditional on the Lease read), so a claim that landed since the read keeps its member
 * running; then it stops the member and gives the Lease back.
 */
export async function carryOutSpares(
  ctx: VdiContext,
  read: SparesRead,
  plan: SparesPlan,
): Promise<KeepSparesResult> {
  const { namespace, pool } = read;
  const backend = backendFor(ctx, 'vm');
  const vmOf = new Map(read.vms.map((vm) => [vm.metadata.name ?? '', vm]));
  const leaseOf = new Map(read.leases.map((lease) => [lease.metadata.name ?? '', lease]));
  const result: KeepSparesResult = {
    id: formatPoolId({ kind: 'vm', namespace, pool }),
    minReady: read.minReady,
    ready: plan.ready,
    started: [],
    stopped: [],
    skipped: [],
    short: plan.short,
  };
  for (const member of plan.unmark) {
    const vm = vmOf.get(member);
    if (vm) await markSpare(ctx, vm, null);
  }
  for (const member of plan.start) {
    const vm = vmOf.get(member);
    if (!vm || !(await markSpare(ctx, vm, ctx.clock.now().toISOString()))) {
      result.skipped.push(member);
      continue;
    }
    // a claim that took the member meanwhile wants it running too, so the start needs no Lease
    await backend.startMember({ namespace, member });
    result.started.push(member);
  }
  for (const member of plan.stop) {
    const taken = await takeRemovalLease(ctx, { namespace, pool, member }, leaseOf.get(leaseNameFor(member)));
    if (!taken) {
      result.skipped.push(member);
      continue;
    }
    // Held from here: a claim now waits for the Lease to go, and finds the member stopping.
    try {
      await backend.stopMember({ namespace, member });
    } finally {
      await deleteLeaseAsRead(ctx, taken);
    }
    result.stopped.push(member);
  }
  return result;
}

/**
 * One pass of the spare keeper over a VM pool: read the pool, ask {@link planSpares}, carry the plan out. It keeps
 * at least the pool's `minReady` free members running, so a claim gets a desktop that is already up, and stops
 * the spares it started once there are more than `minReady` (a claim or a lower `minReady`). Starts are capped by
 * the devices the cluster has room for now. The broker runs it for every pool with `minReady` on its interval.
 *
 * @example
 * ```ts
 * const pass = await keepPoolSpares(vdi.context, { name: 'devpool' });
 * console.log(`${pass.ready.length + pass.started.length}/${pass.minReady} warm`);
 * ```
 * @throws {@link VdiError} `INVALID_INPUT`; `START_FAILED` / `STOP_FAILED` when KubeVirt refuses (the next pass
 *   tries again).
 * @category spares
 */
export async function keepPoolSpares(
  ctx: VdiContext,
  options: { name: string; namespace?: string },
): Promise<KeepSparesResult> {
  const parsed = parseOptions(poolSchema, options, 'keepPoolSpares');
  const namespace = validateNamespace(parsed.namespace ?? ctx.defaultNamespace);
  return await keepReadPool(ctx, await readSpares(ctx, namespace, parsed.name));
}

async function keepReadPool(ctx: VdiContext, read: SparesRead): Promise<KeepSparesResult> {
  return await carryOutSpares(ctx, read, await planFromRead(ctx, read));
}

/** What a keeper pass over a namespace did. @category spares */
export interface KeepSparesPassResult {
  /** Each pool's pass that finished. */
  kept: KeepSparesResult[];
  /** Each pool whose pass failed, with why; the next pass tries again. */
  failed: Array<{ id: string; error: string }>;
}

/**
 * One keeper pass over every VM pool of a namespace whose members carry a `minReady` (see {@link keepPoolSpares}),
 * but those with a schedule, whose own keeper keeps their spares (`keepSchedules`).
 * A pool whose pass fails is reported in `failed` and the others go on.
 *
 * @throws {@link VdiError} `INVALID_INPUT` for a bad namespace; what listing the pools throws.
 * @category spares
 */
export async function keepSpares(
  ctx: VdiContext,
  options: { namespace?: string } = {},
): Promise<KeepSparesPassResult> {
  const parsed = parseOptions(namespaceOnly, options, 'keepSpares');
  const namespace = validateNamespace(parsed.namespace ?? ctx.defaultNamespace);
  // with the namespace's watch caches started (as in a broker), a pass with nothing to do asks nothing
  const cached = ctx.cluster.isCaching(namespace);
  const [vms, settings] = await Promise.all([
    ctx.cluster.listVms(namespace, poolLabel, { cached }),
    // a scheduled pool's spares are its schedule's keeper's
    poolKindFor(ctx, 'vm').readSettingsIn(ctx, namespace, { cached }),
  ]);
  const pools = new Map<string, VirtualMachine[]>();
  for (const vm of vms) {
    const pool = vm.metadata.labels?.[poolLabel] ?? '';
    pools.set(pool, [...(pools.get(pool) ?? []), vm]);
  }
  const result: KeepSparesPassResult = { kept: [], failed: [] };
  for (const [pool, members] of [...pools].sort(([left], [right]) => left.localeCompare(right))) {
    if (readMinReady(members) === undefined || settings.get(pool)?.schedule) continue;
    try {
      result.kept.push(await keepReadPool(ctx, await readSpares(ctx, namespace, pool, { cached })));
    } catch (error) {
      result.failed.push({
        id: formatPoolId({ kind: 'vm', namespace, pool }),
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }
  return result;
}
