import { z } from 'zod';
import { VdiError } from './errors.js';
import { identitySchema, namespaceSchema } from './validate.js';

/** The most members one pool may have. @category pools */
export const maxPoolSize = 1000;
/** The identity audit records name when a pool call names none. @category pools */
export const defaultPoolActor = 'corral-vdi';

/** The options a create and a resize share: where, how fast, and what to keep after a failure. */
// Pure, so a page that imports a function of ./core bundles none of these schemas and no zod.
export const makeOptionsSchema = {
  namespace: /* @__PURE__ */ namespaceSchema.optional(),
  concurrency: /* @__PURE__ */ z.number().int().min(1).max(64).optional(),
  cloneTimeoutMs: /* @__PURE__ */ z.number().int().positive().optional(),
  keepPartial: /* @__PURE__ */ z.boolean().optional(),
  signal: /* @__PURE__ */ z.instanceof(AbortSignal).optional(),
  identity: /* @__PURE__ */ identitySchema.optional(),
};

/**
 * Checks a pool size at the boundary.
 *
 * @throws {@link VdiError} `INVALID_INPUT` unless it is a whole number from 1 to {@link maxPoolSize}.
 */
export function validateSize(size: number): void {
  if (!Number.isSafeInteger(size) || size < 1 || size > maxPoolSize) {
    throw new VdiError(
      'INVALID_INPUT',
      `Pool size ${size} is not valid; pass a whole number from 1 to ${maxPoolSize}. To remove a pool, delete it.`,
      { details: { size, maxPoolSize } },
    );
  }
}
