import { z } from 'zod';
import { backendFor, type VdiContext } from '../context.js';
import { requireCtPool } from '../ct/ct-pool-store.js';
import { readPoolEntitlement } from '../entitlements/pool-entitlement.js';
import { VdiError } from '../errors.js';
import { formatPoolId } from '../ids.js';
import { leasePoolLabel, spareAnnotation } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import { poolSettingsOf } from '../pools/pool-settings.js';
import { readPoolSettingsConfigMap } from '../pools/pool-settings-store.js';
import { describeRollout } from '../rollouts/describe-rollout.js';
import { describeSchedule } from '../schedules/describe-schedule.js';
import { freeSinceOf } from '../schedules/free-since.js';
import { namespaceSchema, parseOptions, poolNameSchema, validateNamespace } from '../validate.js';
import { splitWaiterLeases } from '../waitlist/plan-waitlist.js';
import { readSpares } from './keep-spares.js';
import { readMinReady } from './min-ready.js';
import { describePoolStatus, type PoolStatus } from './pool-status.js';

/** Options of {@link readPoolStatus}. @category spares */
export interface PoolStatusOptions {
  name: string;
  namespace?: string;
  /** The pool's kind. @defaultValue `'vm'` */
  kind?: 'vm' | 'ct';
}

const statusSchema = z.object({
  name: poolNameSchema,
  namespace: namespaceSchema.optional(),
  kind: z.enum(['vm', 'ct']).optional(),
});

/**
 * Reads a pool as an operator watches it (see {@link describePoolStatus}): a VM pool from its member VMs, their
 * `minReady` and spare marks and its settings ConfigMap (who it lets in), a container pool from its Pods and its
 * spec; for both the claim Leases and the waiters' Leases.
 *
 * @example
 * ```ts
 * const status = await readPoolStatus(vdi.context, { name: 'devpool' });
 * for (const member of status.members) console.log(member.name, member.holder ?? 'free', member.session);
 * ```
 * @throws {@link VdiError} `INVALID_INPUT`; `POOL_NOT_FOUND` when the pool has no members (a VM pool) or no spec
 *   (a container pool).
 * @category spares
 */
export async function readPoolStatus(ctx: VdiContext, options: PoolStatusOptions): Promise<PoolStatus> {
  const parsed = parseOptions(statusSchema, options, 'readPoolStatus');
  const namespace = validateNamespace(parsed.namespace ?? ctx.defaultNamespace);
  const { name } = parsed;
  const kind = parsed.kind ?? 'vm';
  // waiters' Leases carry the pool label too, so the one list of the pool's Leases holds them
  const liveWaiters = (leases: readonly LeaseObject[]) =>
    splitWaiterLeases(leases, kind, ctx.clock.now()).live.length;
  if (kind === 'ct') {
    const stored = await requireCtPool(ctx, namespace, name);
    const [members, leases] = await Promise.all([
      backendFor(ctx, 'ct').listMembers(namespace, name),
      ctx.cluster.listLeases(namespace, `${leasePoolLabel}=${name}`),
    ]);
    return describePoolStatus({
      kind,
      namespace,
      pool: name,
      members,
      leases,
      marked: new Set(),
      minReady: stored.spec.minReady,
      waiters: liveWaiters(leases),
      now: ctx.clock.now(),
      entitlement: {
        poolId: formatPoolId({ kind, namespace, pool: name }),
        allowedGroups: stored.spec.allowedGroups,
        allowedUsers: stored.spec.allowedUsers,
      },
    });
  }
  const [read, entitlement, configMap] = await Promise.all([
    readSpares(ctx, namespace, name),
    readPoolEntitlement(ctx, { kind, namespace, pool: name }),
    readPoolSettingsConfigMap(ctx, namespace, name),
  ]);
  const settings = poolSettingsOf(configMap);
  if (read.vms.length === 0) {
    throw new VdiError(
      'POOL_NOT_FOUND',
      `Pool "${name}" has no members in namespace "${namespace}"; check the name and the namespace (a container pool needs --kind ct).`,
      { details: { pool: name, namespace } },
    );
  }
  const schedule = settings.schedule
    ? describeSchedule({
        settings: { ...settings, schedule: settings.schedule },
        members: read.members,
        leases: read.leases,
        freeSince: freeSinceOf(read.vms),
        minReady: read.minReady,
        waiters: liveWaiters(read.leases),
        now: ctx.clock.now(),
      })
    : undefined;
  const marked = new Set(
    read.vms
      .filter((vm) => vm.metadata.annotations?.[spareAnnotation] !== undefined)
      .map((vm) => vm.metadata.name ?? ''),
  );
  return describePoolStatus({
    kind,
    namespace,
    pool: name,
    members: read.members,
    leases: read.leases,
    marked,
    minReady: readMinReady(read.vms),
    waiters: liveWaiters(read.leases),
    now: ctx.clock.now(),
    entitlement,
    schedule,
    rollOut: settings.rollOut
      ? describeRollout({
          rollout: settings.rollOut,
          members: read.members,
          leases: read.leases,
          buffer: schedule?.targets.freeRunning ?? read.minReady,
          now: ctx.clock.now(),
        })
      : undefined,
  });
}
