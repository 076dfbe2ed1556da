import { z } from 'zod';
import type { AdmissionPlan } from '../capacity/admit-pool.js';
import type { VdiContext } from '../context.js';
import { VdiError } from '../errors.js';
import { formatPoolId } from '../ids.js';
import { poolLabel } from '../keys.js';
import { defaultPoolActor, makeOptionsSchema, maxPoolSize, validateSize } from '../pool-options.js';
import {
  checkPoolSettings,
  type PoolSettings,
  type ReclaimAction,
  reclaimActionOf,
} from '../pool-settings.js';
import { validateMinReady } from '../spares/min-ready.js';
import { writeMinReady } from '../spares/spare-writes.js';
import { goldenNameSchema, parseOptions, poolNameSchema, validateNamespace } from '../validate.js';
import { makeMembers } from './make-members.js';
import { memberFactoryFor } from './member-factory-for.js';
import { planPoolCreate } from './plan-pool-create.js';
import { writePoolSettings } from './pool-settings-store.js';
import { readPools } from './read-pool.js';
import { runAudited } from './run-audited.js';
import { poolSettingsOptionsSchema, settingsIn } from './set-pool-settings.js';

/** Options of {@link createPool}. @category pools */
export interface CreatePoolOptions {
  /** The pool's name: the `corral.dev/vdi-pool` label value and the stem of member names `<name>-<n>`. */
  name: string;
  /** The golden VM to clone, in `namespace`. */
  from: string;
  /** How many members to make, 1 to {@link maxPoolSize}. */
  size: number;
  /** Where the golden VM lives and the members go; defaults to the SDK's namespace. */
  namespace?: string;
  /** Members are destroyed and cloned again from the golden VM on release. @defaultValue `false` */
  ephemeral?: boolean;
  /**
   * How many free members the spare keeper keeps running, 0 to `size`; written on every member (see
   * {@link setPool}). @defaultValue none: the pool has no spares
   */
  minReady?: number;
  /** Clones under way at once. @defaultValue 4 */
  concurrency?: number;
  /** How long one clone may take. @defaultValue 120000 (2 minutes) */
  cloneTimeoutMs?: number;
  /** After a failure, keep the members that were made (and the failed clone objects) instead of removing them. */
  keepPartial?: boolean;
  /** Cancels the create; what was made is then removed like after a failure. */
  signal?: AbortSignal;
  /** Who acts, for the audit record. @defaultValue {@link defaultPoolActor} */
  identity?: string;
  /** What the reclaim policy does with its desktops. @defaultValue the pool's reset: `stop`, or `recreate` when ephemeral */
  reclaimAction?: ReclaimAction;
  /** Where the `notify` action POSTs: an https URL. */
  reclaimWebhook?: string;
  /** The pool's idle timeout in ms, overriding the broker's; `0` turns idle reclaim off for the pool. */
  idleTimeoutMs?: number;
  /** Groups whose members may claim; with no allowed users either, everyone may. */
  allowedGroups?: string[];
  /** Logins that may claim; with no allowed groups either, everyone may. */
  allowedUsers?: string[];
  /** How many desktops a user may hold, in all pools of the namespace, and still claim from this one; `0`: no limit. */
  maxDesktopsPerUser?: number;
  /** Accept an http webhook on localhost, 127.0.0.1 or ::1. @defaultValue false */
  allowLoopbackHttpWebhook?: boolean;
}

/** What {@link createPool} returns. @category pools */
export interface CreatePoolResult {
  /** `vm/<namespace>/<pool>`. */
  id: string;
  name: string;
  namespace: string;
  /** The member names, in order. */
  members: string[];
  ephemeral: boolean;
  /** The spares the keeper keeps running, when `minReady` was given. */
  minReady?: number;
  /** The golden VM. */
  source: string;
  /** The capacity admission that let the pool through. */
  capacity: AdmissionPlan;
  /** What the reclaim policy does with its desktops. */
  reclaimAction: ReclaimAction;
  /** The pool's own settings, as stored. */
  settings: PoolSettings;
}

const createSchema = z.object({
  name: poolNameSchema,
  from: goldenNameSchema,
  size: z.number(),
  ephemeral: z.boolean().optional(),
  minReady: z.unknown().optional(),
  ...makeOptionsSchema,
  ...poolSettingsOptionsSchema,
});

/**
 * Creates a pool: `size` members `<name>-1 … <name>-<size>` cloned from the golden VM `from` through
 * VirtualMachineClone, all in one namespace.
 *
 * Every refusal comes before any change: a bad name or size, a golden VM missing from the namespace (other
 * namespaces are never searched), a member name already taken or an existing pool of that name, and a capacity
 * admission that says the devices the golden VM asks for do not fit. Clones then run `concurrency` at a time;
 * each member counts only once its clone reached `Succeeded`, and each finished clone object is deleted.
 * Members start stopped, carry the pool label (and, when `ephemeral`, the ephemeral label), and record their
 * golden VM. A failure part-way is reported member by member in `details.members`, after the members that were
 * made are removed again, unless `keepPartial`. Settings (reclaim action, webhook, idle timeout) are checked first
 * and written once the members are made, to the ConfigMap `corral-vdi-pool-<name>`; a create that stops in
 * between leaves a pool with the default settings, which `setPoolSettings` completes.
 *
 * @example
 * ```ts
 * vdi.events.on('pool-progress', (event) => console.log(`${event.done}/${event.total} ${event.member} ${event.step}`));
 * const pool = await createPool(vdi.context, { name: 'devpool', from: 'golden-desktop', size: 3 });
 * console.log(pool.members); // ['devpool-1', 'devpool-2', 'devpool-3']
 * ```
 * With `minReady`, every member also carries the pool's spare setting, and the broker's keeper starts that many.
 *
 * @throws {@link VdiError} `INVALID_INPUT` (also a `minReady` that is not a whole number from 0 to `size`), `GOLDEN_NOT_FOUND`, `ALREADY_EXISTS`, `INSUFFICIENT_CAPACITY`,
 *   `UNSUPPORTED_BACKEND` when the cluster has no KubeVirt clone API (all before any change); `CLONE_FAILED`, `CLONE_TIMEOUT`, `FORBIDDEN` when the identity lacks a permission a member
 *   needed (the message names it), or `CANCELLED` when `signal` aborted it, with `details.members`.
 * @category pools
 */
export async function createPool(ctx: VdiContext, options: CreatePoolOptions): Promise<CreatePoolResult> {
  const parsed = parseOptions(createSchema, options, 'createPool');
  validateSize(parsed.size);
  const minReady = parsed.minReady === undefined ? undefined : validateMinReady(parsed.minReady, parsed.size);
  const namespace = validateNamespace(parsed.namespace ?? ctx.defaultNamespace);
  const { name, from, size } = parsed;
  const id = formatPoolId({ kind: 'vm', namespace, pool: name });
  const ephemeral = parsed.ephemeral ?? false;
  const settings = settingsIn(parsed as PoolSettings);
  checkPoolSettings(settings, {
    pool: name,
    ephemeral,
    allowLoopbackHttp: parsed.allowLoopbackHttpWebhook ?? false,
  });
  const factory = memberFactoryFor(ctx);
  return await runAudited(
    ctx,
    { action: 'vdi pool create', user: parsed.identity ?? defaultPoolActor, target: id },
    async () => {
      const source = await factory.readSource(namespace, from);
      const [{ pools }, taken] = await Promise.all([
        readPools(ctx, namespace, name),
        factory.listTakenNames(namespace),
      ]);
      const plan = planPoolCreate({
        namespace,
        pool: name,
        size,
        existing: pools[0]?.members.map((member) => member.name) ?? [],
        taken,
      });
      if (plan.kind === 'reject') {
        throw new VdiError(plan.code, plan.message, { details: { pool: name, namespace, ...plan.details } });
      }
      const { members } = plan;
      const capacity = await source.admit({ size });
      await makeMembers(factory, source, {
        namespace,
        pool: name,
        members,
        ephemeral,
        concurrency: parsed.concurrency,
        timeoutMs: parsed.cloneTimeoutMs,
        keepPartial: parsed.keepPartial,
        signal: parsed.signal,
        doing: `Creating pool "${name}"`,
      });
      // after the members: a create that stops between the writes leaves a pool with the default settings and
      // no spares; pool set writes either again
      if (Object.keys(settings).length > 0) await writePoolSettings(ctx, namespace, name, () => settings);
      const reclaimAction = reclaimActionOf(settings, ephemeral);
      const made = {
        id,
        name,
        namespace,
        members,
        ephemeral,
        source: from,
        capacity,
        reclaimAction,
        settings,
      };
      if (minReady === undefined) return made;
      await writeMinReady(ctx, await ctx.cluster.listVms(namespace, `${poolLabel}=${name}`), minReady);
      return { ...made, minReady };
    },
  );
}
