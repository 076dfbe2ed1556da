import { VdiError } from '../errors.js';
import { spareAnnotation } from '../keys.js';
import { poolSettingsOf } from '../pool-settings.js';
import type { MemberMakingPoolKind } from '../pools/pool-member-factory.js';
import { readPoolSettingsConfigMap, readPoolSettingsIn } from '../pools/pool-settings-store.js';
import { freeSinceOf } from '../schedules/free-since.js';
import { readSpares } from '../spares/keep-spares.js';
import { readMinReady } from '../spares/min-ready.js';
import { createVmMemberFactory } from './vm-pool-members.js';

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
    const marked = new Set(
      read.vms
        .filter((vm) => vm.metadata.annotations?.[spareAnnotation] !== undefined)
        .map((vm) => vm.metadata.name ?? ''),
    );
    return {
      members: read.members,
      leases: read.leases,
      minReady: readMinReady(read.vms),
      marked,
      freeSince: freeSinceOf(read.vms),
      settings,
    };
  },

  memberFactory: createVmMemberFactory,
};
