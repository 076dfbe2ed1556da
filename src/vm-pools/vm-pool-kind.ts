import type { PoolFacts } from '../context.js';
import type { MemberFacts } from '../desktop-backend.js';
import { VdiError } from '../errors.js';
import { poolLabel, spareAnnotation } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import type { VirtualMachine } from '../kubevirt-types.js';
import { type PoolSettings, poolSettingsOf } from '../pool-settings.js';
import type { MemberMakingPoolKind } from '../pools/pool-member-factory.js';
import { readPoolSettingsConfigMap, readPoolSettingsIn } from '../pools/pool-settings-store.js';
import { freeSinceOf } from '../schedules/free-since.js';
import { readSpares } from '../spares/keep-spares.js';
import { readMinReady } from '../spares/min-ready.js';
import { listVmPoolMembers } from '../vm/vm-backend.js';
import { createVmMemberFactory } from './vm-pool-members.js';

function factsOf(
  vms: readonly VirtualMachine[],
  members: MemberFacts[],
  leases: LeaseObject[],
  settings: PoolSettings | undefined,
): PoolFacts {
  const marked = new Set(
    vms
      .filter((vm) => vm.metadata.annotations?.[spareAnnotation] !== undefined)
      .map((vm) => vm.metadata.name ?? ''),
  );
  return { members, leases, minReady: readMinReady(vms), marked, freeSince: freeSinceOf(vms), settings };
}

/**
 * VM pools: a pool is its member VMs (labelled `corral.dev/vdi-pool=<pool>`), its settings are the ConfigMap
 * `corral-vdi-pool-<pool>`, its warm spares are marked on the VMs, and its members are cloned from a golden VM.
 *
 * @category pools
 */
export const vmPoolKind: MemberMakingPoolKind = {
  kind: 'vm',

  async readSettings(ctx, namespace, pool) {
    const configMap = await readPoolSettingsConfigMap(ctx, namespace, pool);
    return configMap && poolSettingsOf(configMap);
  },

  readSettingsIn: (ctx, namespace, options) => readPoolSettingsIn(ctx, namespace, options),

  async readPoolFacts(ctx, namespace, pool) {
    const [read, settings] = await Promise.all([
      readSpares(ctx, namespace, pool),
      vmPoolKind.readSettings(ctx, namespace, pool),
    ]);
    if (read.vms.length === 0) {
      throw new VdiError(
        'POOL_NOT_FOUND',
        `Pool "${pool}" has no members in namespace "${namespace}"; check the name and the namespace (a container pool needs --kind ct).`,
        { details: { pool, namespace } },
      );
    }
    return factsOf(read.vms, read.members, read.leases, settings);
  },

  async readPlannedPoolFacts(ctx, namespace, options = {}) {
    const settings = await readPoolSettingsIn(ctx, namespace, options);
    const planned = [...settings].filter(
      ([, own]) => own.schedule !== undefined || own.rollOut !== undefined,
    );
    if (planned.length === 0) return new Map();
    const [{ vms, members }, leases] = await Promise.all([
      listVmPoolMembers(ctx.cluster, namespace, undefined, options),
      ctx.cluster.listLeases(namespace, undefined, options),
    ]);
    const facts = new Map<string, PoolFacts>();
    for (const [pool, own] of planned) {
      const poolVms = vms.filter((vm) => vm.metadata.labels?.[poolLabel] === pool);
      // a VM pool is its members: settings left by a deleted pool describe nothing
      if (poolVms.length === 0) continue;
      const poolMembers = members.filter((member) => member.pool === pool);
      facts.set(pool, factsOf(poolVms, poolMembers, leases, own));
    }
    return facts;
  },

  memberFactory: createVmMemberFactory,
};
