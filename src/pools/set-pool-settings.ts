import { z } from 'zod';
import type { VdiContext } from '../context.js';
import { formatPoolId } from '../ids.js';
import { defaultPoolActor } from '../pool-options.js';
import {
  checkPoolSettings,
  type PoolSettings,
  type ReclaimAction,
  reclaimActionOf,
} from '../pool-settings.js';
import {
  identitySchema,
  namespaceSchema,
  parseOptions,
  poolNameSchema,
  validateNamespace,
} from '../validate.js';
import { writePoolSettings } from './pool-settings-store.js';
import { readPool } from './read-pool.js';
import { runAudited } from './run-audited.js';

/** Options of {@link setPoolSettings}: the pool, and the settings to change; those left out stay. @category pools */
export interface SetPoolSettingsOptions extends PoolSettings {
  name: string;
  namespace?: string;
  /** Accept an http webhook on localhost, 127.0.0.1 or ::1. @defaultValue false */
  allowLoopbackHttpWebhook?: boolean;
  /** Who acts, for the audit record. @defaultValue {@link defaultPoolActor} */
  identity?: string;
}

/** What {@link setPoolSettings} returns: the pool's settings now, and the action in force. @category pools */
export interface SetPoolSettingsResult {
  id: string;
  settings: PoolSettings;
  reclaimAction: ReclaimAction;
}

/** The schema of the settings a create or a set takes; the values are checked by {@link checkPoolSettings}. */
export const poolSettingsOptionsSchema = {
  reclaimAction: z.string().optional(),
  reclaimWebhook: z.string().optional(),
  idleTimeoutMs: z.number().optional(),
  allowedGroups: z.array(z.string()).optional(),
  allowedUsers: z.array(z.string()).optional(),
  maxDesktopsPerUser: z.number().optional(),
  allowLoopbackHttpWebhook: z.boolean().optional(),
};

const setSchema = z.object({
  name: poolNameSchema,
  namespace: namespaceSchema.optional(),
  identity: identitySchema.optional(),
  ...poolSettingsOptionsSchema,
});

/** The settings named in `options`, without the other fields. */
export function settingsIn(options: PoolSettings): PoolSettings {
  return {
    ...(options.reclaimAction === undefined ? {} : { reclaimAction: options.reclaimAction }),
    ...(options.reclaimWebhook === undefined ? {} : { reclaimWebhook: options.reclaimWebhook }),
    ...(options.idleTimeoutMs === undefined ? {} : { idleTimeoutMs: options.idleTimeoutMs }),
    ...(options.allowedGroups === undefined ? {} : { allowedGroups: options.allowedGroups }),
    ...(options.allowedUsers === undefined ? {} : { allowedUsers: options.allowedUsers }),
    ...(options.maxDesktopsPerUser === undefined ? {} : { maxDesktopsPerUser: options.maxDesktopsPerUser }),
  };
}

/**
 * Changes a pool's own settings: its reclaim action (`stop`, `recreate` or `notify`), the webhook `notify` POSTs
 * to, its idle timeout, who may claim from it (`allowedGroups`, `allowedUsers`: a list given replaces the stored
 * one, an empty list lets everyone), and how many desktops a user may hold to claim from it (`maxDesktopsPerUser`,
 * `0` for no limit). Settings left out keep their stored value, except that an action other than
 * `notify` drops the webhook. The settings live in the ConfigMap `corral-vdi-pool-<pool>`, written once; a bad value is
 * refused before anything is written.
 *
 * @example
 * ```ts
 * await setPoolSettings(vdi.context, { name: 'devpool', reclaimAction: 'notify', reclaimWebhook: 'https://hooks.example.com/vdi' });
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` (an unknown action, an action that is not the pool's reset or notify, a
 *   webhook that is not https, a negative idle timeout, a limit that is no whole number of 0 or more);
 *   `POOL_NOT_FOUND`.
 * @category pools
 */
export async function setPoolSettings(
  ctx: VdiContext,
  options: SetPoolSettingsOptions,
): Promise<SetPoolSettingsResult> {
  const parsed = parseOptions(setSchema, options, 'setPoolSettings');
  const namespace = validateNamespace(parsed.namespace ?? ctx.defaultNamespace);
  const { name } = parsed;
  const id = formatPoolId({ kind: 'vm', namespace, pool: name });
  const asked = settingsIn(parsed as PoolSettings);
  return await runAudited(
    ctx,
    { action: 'vdi pool set', user: parsed.identity ?? defaultPoolActor, target: id },
    async () => {
      const { pool } = await readPool(ctx, namespace, name);
      const ephemeral = pool.members[0]?.ephemeral ?? false;
      const context = { pool: name, ephemeral, allowLoopbackHttp: parsed.allowLoopbackHttpWebhook ?? false };
      const settings = await writePoolSettings(ctx, namespace, name, (stored) => {
        const merged = { ...stored, ...asked };
        if (merged.reclaimAction !== 'notify') delete merged.reclaimWebhook;
        checkPoolSettings(merged, context);
        // 0 is no limit, which is what an unset one means
        if (merged.maxDesktopsPerUser === 0) delete merged.maxDesktopsPerUser;
        return merged;
      });
      return { id, settings, reclaimAction: reclaimActionOf(settings, ephemeral) };
    },
  );
}
