import { z } from 'zod';
import { readGoldenVm } from '../capacity/capacity-service.js';
import type { VdiContext } from '../context.js';
import { VdiError } from '../errors.js';
import { formatPoolId } from '../ids.js';
import { parseRfc3339 } from '../parse-time.js';
import { defaultPoolActor } from '../pool-options.js';
import { checkMaxUnavailable, defaultMaxUnavailable, type PoolRollout } from '../pool-rollout.js';
import { poolSettingsOf } from '../pool-settings.js';
import { readPoolSettingsConfigMap, writePoolSettings } from '../pools/pool-settings-store.js';
import { readVmPoolFor } from '../pools/read-pool.js';
import { runAudited } from '../pools/run-audited.js';
import {
  goldenNameSchema,
  identitySchema,
  namespaceSchema,
  parseOptions,
  poolNameSchema,
  validateNamespace,
} from '../validate.js';

/** Options of {@link startPoolRollout}. @category rollouts */
export interface StartPoolRolloutOptions {
  name: string;
  namespace?: string;
  /** The new golden VM, in the pool's namespace. */
  from: string;
  /** How many members may be rebuilding at once, 1 to 100. @defaultValue 1 */
  maxUnavailable?: number;
  /**
   * When claimed members not yet rebuilt are taken back with the pool's reclaim action, their holders warned ahead
   * (a `Date` or RFC 3339, in the future). @defaultValue none: they wait for their holders' release
   */
  deadline?: Date | string;
  identity?: string;
}

/** What {@link startPoolRollout} returns: the roll-out as stored, and the members on its golden VM already. @category rollouts */
export interface StartPoolRolloutResult {
  id: string;
  rollOut: PoolRollout;
  onTarget: number;
  total: number;
}

const startSchema = z.object({
  name: poolNameSchema,
  namespace: namespaceSchema.optional(),
  from: goldenNameSchema,
  maxUnavailable: z.unknown().optional(),
  deadline: z.union([z.date(), z.string()]).optional(),
  identity: identitySchema.optional(),
});

function deadlineOf(value: Date | string | undefined, now: Date): string | undefined {
  if (value === undefined) return undefined;
  const at = value instanceof Date ? value : parseRfc3339(value);
  if (at === undefined || Number.isNaN(at.getTime()) || at.getTime() <= now.getTime()) {
    throw new VdiError(
      'INVALID_INPUT',
      `The roll-out deadline ${String(value instanceof Date ? value.toISOString() : value)} is not a time after now (${now.toISOString()}); give an RFC 3339 time to come, or none to wait for releases.`,
      { details: { field: 'deadline' } },
    );
  }
  return at.toISOString();
}

/**
 * Moves a VM pool to a new golden VM. The broker's leader then rebuilds its free members from `from` at once, at
 * most `maxUnavailable` at a time and never taking its free running members below the pool's buffer (its
 * schedule's, else its `minReady`); claimed members are rebuilt once released, or with a `deadline`, their holders
 * are warned (`reclaim-warning`, reason `roll-out`) and then the desktops are reclaimed with the pool's reclaim
 * action. New members of a grow are cloned from `from` too. The roll-out is stored in the pool's settings ConfigMap
 * (`roll-out`), so whichever broker leads next goes on with it; a new one replaces one under way.
 *
 * @example
 * ```ts
 * await startPoolRollout(vdi.context, { name: 'devpool', from: 'golden-v2', maxUnavailable: 2, deadline: '2026-07-03T18:00:00Z' });
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` (a `maxUnavailable` outside 1 to 100, a deadline not to come, a golden VM
 *   that is one of the pool's members); `POOL_NOT_FOUND`; `UNSUPPORTED_BACKEND` for a container pool; `GOLDEN_NOT_FOUND`. Nothing is written on any of these.
 * @category rollouts
 */
export async function startPoolRollout(
  ctx: VdiContext,
  options: StartPoolRolloutOptions,
): Promise<StartPoolRolloutResult> {
  const parsed = parseOptions(startSchema, options, 'startPoolRollout');
  const namespace = validateNamespace(parsed.namespace ?? ctx.defaultNamespace);
  const { name, from } = parsed;
  const id = formatPoolId({ kind: 'vm', namespace, pool: name });
  const maxUnavailable =
    parsed.maxUnavailable === undefined ? defaultMaxUnavailable : checkMaxUnavailable(parsed.maxUnavailable);
  const now = ctx.clock.now();
  const deadline = deadlineOf(parsed.deadline, now);
  return await runAudited(
    ctx,
    { action: 'vdi pool roll-out', user: parsed.identity ?? defaultPoolActor, target: `${id} (to ${from})` },
    async () => {
      const { pool } = await readVmPoolFor(ctx, namespace, name, {
        feature: 'a roll-out',
        instead:
          "a container pool's image change is its roll-out: apply its spec with the new image (docs/ct-pools.md#image-changes)",
      });
      if (pool.members.some((member) => member.name === from)) {
        throw new VdiError(
          'INVALID_INPUT',
          `"${from}" is a member of pool ${id}, not a golden VM; name the VM the members are to be made from.`,
          { details: { field: 'from', from } },
        );
      }
      await readGoldenVm(ctx, namespace, from);
      const rollOut: PoolRollout = {
        to: from,
        maxUnavailable,
        startedAt: now.toISOString(),
        ...(deadline === undefined ? {} : { deadline }),
        rebuilding: [],
      };
      // the rebuilds a replaced roll-out began stay in the journal, to be finished from the new golden VM
      const stored = await writePoolSettings(ctx, namespace, name, (current) => ({
        ...current,
        rollOut: { ...rollOut, rebuilding: current.rollOut?.rebuilding ?? [] },
      }));
      const onTarget = pool.members.filter((member) => member.source === from).length;
      return { id, rollOut: stored.rollOut as PoolRollout, onTarget, total: pool.members.length };
    },
  );
}

/** Options of {@link setPoolRolloutPaused}. @category rollouts */
export interface SetPoolRolloutPausedOptions {
  name: string;
  namespace?: string;
  /** `true` pauses: the rebuilds under way finish and no new one starts; `false` resumes. */
  paused: boolean;
  identity?: string;
}

const pausedSchema = z.object({
  name: poolNameSchema,
  namespace: namespaceSchema.optional(),
  paused: z.boolean(),
  identity: identitySchema.optional(),
});

/**
 * Pauses a pool's roll-out, or resumes it. A paused roll-out finishes the rebuilds under way and starts none; its
 * deadline still stands (claims past it are reclaimed and rebuilt once the roll-out resumes).
 *
 * @example
 * ```ts
 * await setPoolRolloutPaused(vdi.context, { name: 'devpool', paused: true });
 * ```
 * @throws {@link VdiError} `INVALID_INPUT`; `POOL_NOT_FOUND` when the pool has no roll-out under way.
 * @category rollouts
 */
export async function setPoolRolloutPaused(
  ctx: VdiContext,
  options: SetPoolRolloutPausedOptions,
): Promise<PoolRollout> {
  const parsed = parseOptions(pausedSchema, options, 'setPoolRolloutPaused');
  const namespace = validateNamespace(parsed.namespace ?? ctx.defaultNamespace);
  const { name, paused } = parsed;
  const id = formatPoolId({ kind: 'vm', namespace, pool: name });
  return await runAudited(
    ctx,
    {
      action: `vdi pool roll-out ${paused ? 'pause' : 'resume'}`,
      user: parsed.identity ?? defaultPoolActor,
      target: id,
    },
    async () => {
      const underway = (rollOut: PoolRollout | undefined) => rollOut !== undefined && !rollOut.finishedAt;
      if (!underway(poolSettingsOf(await readPoolSettingsConfigMap(ctx, namespace, name)).rollOut)) {
        // a container pool records its image roll-out beside its spec
        for (const other of Object.values(ctx.poolKinds)) {
          const written = await other?.setRolloutPaused?.(ctx, namespace, name, paused);
          if (written) return written;
        }
        throw new VdiError(
          'POOL_NOT_FOUND',
          `Pool ${id} has no roll-out under way; start one with "corral-vdi pool set ${name} --from GOLDEN".`,
          { details: { pool: name, namespace } },
        );
      }
      let changed: PoolRollout | undefined;
      await writePoolSettings(ctx, namespace, name, (stored) => {
        const { rollOut } = stored;
        // one that finished meanwhile stays finished
        if (!rollOut || !underway(rollOut)) return stored;
        const { paused: _, ...rest } = rollOut;
        changed = paused ? { ...rest, paused: true } : rest;
        return { ...stored, rollOut: changed };
      });
      return (
        changed ??
        (poolSettingsOf(await readPoolSettingsConfigMap(ctx, namespace, name)).rollOut as PoolRollout)
      );
    },
  );
}
