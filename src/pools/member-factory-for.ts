import type { VdiContext } from '../context.js';
import { createVmMemberFactory } from '../vm/vm-pool-members.js';
import type { PoolMemberFactory } from './pool-member-factory.js';

/** The member factory pools use: every pool is a VM pool until the context carries one per kind. */
export function memberFactoryFor(ctx: VdiContext): PoolMemberFactory {
  return createVmMemberFactory(ctx);
}
