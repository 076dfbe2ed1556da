import { poolKindFor, type VdiContext } from '../context.js';
import { defaultDesktopKind } from '../desktop-backend.js';
import { VdiError } from '../errors.js';
import { makesMembers, type PoolMemberFactory } from './pool-member-factory.js';

/** The member factory the pool calls use: the one the pools' kind registers (every pool here is of the default kind). */
export function memberFactoryFor(ctx: VdiContext): PoolMemberFactory {
  const poolKind = poolKindFor(ctx, defaultDesktopKind);
  if (makesMembers(poolKind)) return poolKind.memberFactory(ctx);
  throw new VdiError(
    'UNSUPPORTED_BACKEND',
    `Pools of kind "${poolKind.kind}" make their members themselves, not through the pool calls.`,
    { details: { kind: poolKind.kind } },
  );
}
