import { z } from 'zod';
import type { VdiContext } from '../context.js';
import { VdiError } from '../errors.js';
import { nodeKind } from '../kube/resource-kinds.js';
import type { VirtualMachine } from '../kubevirt-types.js';
import { goldenNameSchema, namespaceSchema, parseOptions } from '../validate.js';
import { type AdmissionPlan, admitPool } from './admit-pool.js';
import { readDeviceNeeds } from './device-needs.js';

/**
 * Options of {@link planCapacity}.
 *
 * @category capacity
 */
export interface PlanCapacityOptions {
  /** The golden VM the members would be cloned from. */
  from: string;
  /** How many members must fit at once. */
  size: number;
  /** Where the golden VM lives; defaults to the SDK's namespace. Other namespaces are never searched. */
  namespace?: string;
}

const planSchema = z.object({
  from: goldenNameSchema,
  size: z.number().int().min(0),
  namespace: namespaceSchema.optional(),
});

/**
 * Reads the golden VM a pool is cloned from, in the one namespace given.
 *
 * @throws {@link VdiError} `GOLDEN_NOT_FOUND` when `namespace` has no VM of that name; the message says to pass
 *   the namespace where it lives, because other namespaces are never searched.
 * @category capacity
 */
export async function readGoldenVm(
  ctx: VdiContext,
  namespace: string,
  name: string,
): Promise<VirtualMachine> {
  const golden = await ctx.cluster.getVm(namespace, name);
  if (golden) return golden;
  throw new VdiError(
    'GOLDEN_NOT_FOUND',
    `golden VM "${name}" not found in namespace "${namespace}". Other namespaces are not searched: pass the ` +
      'namespace where the golden VM lives.',
    { details: { golden: name, namespace } },
  );
}

/**
 * Runs {@link admitPool} against the cluster: the KubeVirt CR's permitted devices, the nodes, and the VMIs of
 * every namespace. A golden VM that asks for no device is admitted without reading any of them.
 *
 * `members` names pool members that already exist: each one without an active VMI needs room too, so a pool
 * that grows is admitted only when all of its members could run at once; running members already count as in
 * use on their nodes, and members whose VMI waits for a node count with the other unscheduled VMIs.
 */
export async function planAdmission(
  ctx: VdiContext,
  input: { golden: VirtualMachine; size: number; namespace: string; members?: readonly string[] },
): Promise<AdmissionPlan> {
  const { golden, size, namespace, members = [] } = input;
  if (readDeviceNeeds(golden, {}).length === 0) {
    return admitPool({ golden, size, permittedHostDevices: {}, nodes: [], vmis: [] });
  }
  const [permittedHostDevices, nodes, vmis] = await Promise.all([
    ctx.cluster.getPermittedHostDevices(),
    ctx.cluster.resource(nodeKind).list(),
    ctx.cluster.listVmis(),
  ]);
  const running = new Set(
    vmis
      .filter(
        (vmi) =>
          vmi.metadata.namespace === namespace && !['Succeeded', 'Failed'].includes(vmi.status?.phase ?? ''),
      )
      .map((vmi) => vmi.metadata.name),
  );
  const idle = members.filter((member) => !running.has(member)).length;
  return admitPool({ golden, size: size + idle, permittedHostDevices, nodes, vmis });
}

/**
 * {@link planAdmission}, throwing when the answer is no.
 *
 * @throws {@link VdiError} `INSUFFICIENT_CAPACITY` with the plan's message and, in `details`, the per-node
 *   `table`, the `shortfall`, `fits`, `needs`, the `unscheduled` VMIs and `reason`.
 */
export async function requireCapacity(
  ctx: VdiContext,
  input: { golden: VirtualMachine; size: number; namespace: string; members?: readonly string[] },
): Promise<AdmissionPlan> {
  const plan = await planAdmission(ctx, input);
  if (plan.kind === 'admit') return plan;
  throw new VdiError('INSUFFICIENT_CAPACITY', plan.message, {
    details: {
      golden: input.golden.metadata.name,
      namespace: input.namespace,
      size: plan.size,
      fits: plan.fits,
      shortfall: plan.shortfall,
      reason: plan.reason,
      needs: plan.needs,
      unscheduled: plan.unscheduled,
      table: plan.table,
    },
  });
}

/**
 * Answers "can I make (or grow to) `size` members cloned from `from`?" without changing anything: the same
 * admission a pool create runs, with its per-node table, for front ends to show before they ask.
 *
 * @example
 * ```ts
 * const plan = await planCapacity(vdi.context, { from: 'golden-desktop', size: 8 });
 * if (plan.kind === 'reject') console.log(plan.message);
 * else console.table(plan.table);
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` for bad options; `GOLDEN_NOT_FOUND` when the namespace has no such VM.
 * @category capacity
 */
export async function planCapacity(ctx: VdiContext, options: PlanCapacityOptions): Promise<AdmissionPlan> {
  const parsed = parseOptions(planSchema, options, 'planCapacity');
  const namespace = parsed.namespace ?? ctx.defaultNamespace;
  const golden = await readGoldenVm(ctx, namespace, parsed.from);
  return planAdmission(ctx, { golden, size: parsed.size, namespace });
}
