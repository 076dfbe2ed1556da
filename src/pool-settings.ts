import { VdiError } from './errors.js';
import { poolLabel, poolSettingsLabel } from './keys.js';
import type { ConfigMapObject } from './kube-objects.js';
import { formatDuration, parseDuration } from './parse-duration.js';
import { type PoolRollout, readPoolRollout } from './pool-rollout.js';
import { type PoolSchedule, parsePoolSchedule } from './pool-schedule.js';
import { maxIdentityLength } from './validate.js';

/**
 * What the reclaim policy does with a desktop it takes back: `stop` it (a persistent pool's reset, disks kept),
 * `recreate` it from its golden VM (an ephemeral pool's reset), or `notify`: emit `reclaim-notified`, POST it to the
 * pool's webhook when one is set, and keep the claim.
 *
 * @category pools
 */
export type ReclaimAction = 'stop' | 'recreate' | 'notify';

/** The reclaim actions, in the order help texts name them. @category pools */
export const reclaimActions: readonly ReclaimAction[] = ['stop', 'recreate', 'notify'];

/**
 * A pool's own settings, stored in its ConfigMap `corral-vdi-pool-<pool>`. A field left out takes the default:
 * the pool's reset (`stop` or `recreate`), no webhook, the broker's idle timeout.
 *
 * @category pools
 */
export interface PoolSettings {
  reclaimAction?: ReclaimAction;
  /** Where `notify` POSTs its JSON body: an https URL (http only for a loopback host, when allowed). */
  reclaimWebhook?: string;
  /** The pool's idle timeout in ms, overriding the broker's; `0` turns idle reclaim off for the pool. */
  idleTimeoutMs?: number;
  /** Groups whose members may claim from the pool; with `allowedUsers` empty too, everyone may. See `canUsePool`. */
  allowedGroups?: string[];
  /** Logins that may claim from the pool; with `allowedGroups` empty too, everyone may. */
  allowedUsers?: string[];
  /**
   * How many desktops one user may hold, in all pools of the namespace together, and still claim from this pool;
   * `0` (or unset) sets no limit. See `planUserLimit`.
   */
  maxDesktopsPerUser?: number;
  /** When and how the pool's size follows the working day; see `setPoolSchedule`. */
  schedule?: PoolSchedule;
  /** The pool's size outside every period of its schedule: its member count when the schedule was set. */
  plainSize?: number;
  /** The last failures of the schedule's keeper in a row, so the next keeper backs off; see `keepPoolSchedule`. */
  scheduleFailure?: ScheduleFailure;
  /** The pool's move to a new golden VM, under way or finished; see `startPoolRollout`. */
  rollOut?: PoolRollout;
}

/** Failures of a schedule's keeper in a row: the last one's time (RFC 3339) and words. @category schedules */
export interface ScheduleFailure {
  at: string;
  attempts: number;
  error: string;
}

/** What {@link checkPoolSettings} needs to know besides the settings. @category pools */
export interface PoolSettingsContext {
  pool: string;
  /** Whether the pool's members are recreated on release. */
  ephemeral: boolean;
  /** Accept an http webhook on localhost, 127.0.0.1 or ::1, for tests and a receiver on the same host. */
  allowLoopbackHttp?: boolean;
}

const loopbackHosts = new Set(['localhost', '127.0.0.1', '[::1]']);

function invalid(message: string, details: Record<string, unknown>): VdiError {
  return new VdiError('INVALID_INPUT', message, { details });
}

/**
 * Checks a pool's settings before anything is written. A reset action must be the pool's own (a persistent pool
 * stops, an ephemeral one recreates: the other would keep a holder's disk for the next one, or throw a persistent
 * desktop's disk away); a webhook goes only with `notify` and must be https, or http to a loopback host when
 * `allowLoopbackHttp`.
 *
 * @example
 * ```ts
 * checkPoolSettings({ reclaimAction: 'notify', reclaimWebhook: 'https://hooks.example.com/vdi' }, { pool: 'devpool', ephemeral: false });
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` naming the setting and what it takes.
 * @category pools
 */
export function checkPoolSettings(settings: PoolSettings, context: PoolSettingsContext): void {
  const { reclaimAction: action, reclaimWebhook: webhook, idleTimeoutMs } = settings;
  const { pool, ephemeral } = context;
  if (action !== undefined && !reclaimActions.includes(action)) {
    throw invalid(`Reclaim action "${String(action)}" is not known; use ${reclaimActions.join(', ')}.`, {
      pool,
      reclaimAction: action,
    });
  }
  const reset = ephemeral ? 'recreate' : 'stop';
  if (action !== undefined && action !== 'notify' && action !== reset) {
    throw invalid(
      `Pool "${pool}" is ${ephemeral ? 'ephemeral' : 'persistent'}, so its reclaim resets by ${reset}; use --reclaim-action ${reset} or notify.`,
      { pool, reclaimAction: action, ephemeral },
    );
  }
  if (webhook !== undefined) {
    if (action !== 'notify') {
      throw invalid(
        `A reclaim webhook is called only by the notify action; pass --reclaim-action notify with it.`,
        {
          pool,
        },
      );
    }
    checkWebhook(webhook, pool, context.allowLoopbackHttp ?? false);
  }
  checkAllowList(settings.allowedGroups, 'allowedGroups', 'group', pool);
  checkAllowList(settings.allowedUsers, 'allowedUsers', 'login', pool);
  checkMaxDesktopsPerUser(settings.maxDesktopsPerUser, pool);
  if (idleTimeoutMs !== undefined && (!Number.isSafeInteger(idleTimeoutMs) || idleTimeoutMs < 0)) {
    throw invalid(
      `Idle timeout ${String(idleTimeoutMs)} is not valid; use whole milliseconds of 0 or more (0 turns idle reclaim off for the pool).`,
      { pool, idleTimeoutMs },
    );
  }
}

/**
 * Checks a per-user limit, a pool's or the broker's: a whole number of 0 (no limit) or more.
 *
 * @throws {@link VdiError} `INVALID_INPUT` naming the value.
 * @category pools
 */
export function checkMaxDesktopsPerUser(limit: unknown, pool?: string): void {
  if (limit === undefined || (Number.isSafeInteger(limit) && (limit as number) >= 0)) return;
  throw invalid(
    `Max desktops per user ${String(limit)} is not valid; use a whole number of 1 or more, or 0 for no limit.`,
    { ...(pool === undefined ? {} : { pool }), maxDesktopsPerUser: limit },
  );
}

// an entry the identity header could never carry would let nobody in through it
function checkAllowList(list: unknown, field: string, what: string, pool: string): void {
  if (list === undefined) return;
  const bad = Array.isArray(list)
    ? list.find(
        (entry) =>
          typeof entry !== 'string' ||
          entry === '' ||
          entry.length > maxIdentityLength ||
          entry.trim() !== entry ||
          entry.includes(',') ||
          /\p{Cc}/u.test(entry),
      )
    : list;
  if (bad === undefined) return;
  throw invalid(
    `Allowed ${what} ${JSON.stringify(bad)} is not one; each is 1 to ${maxIdentityLength} characters, without commas, control characters or surrounding spaces.`,
    { pool, [field]: list },
  );
}

function checkWebhook(webhook: string, pool: string, allowLoopbackHttp: boolean): void {
  let url: URL;
  try {
    url = new URL(webhook);
  } catch {
    throw invalid(`Reclaim webhook "${webhook}" is not a URL; use https://host/path.`, { pool });
  }
  if (url.username !== '' || url.password !== '') {
    throw invalid('A reclaim webhook URL may not carry credentials; put a token in its path instead.', {
      pool,
    });
  }
  if (url.protocol === 'https:') return;
  const loopback = url.protocol === 'http:' && loopbackHosts.has(url.hostname);
  if (loopback && allowLoopbackHttp) return;
  throw invalid(
    loopback
      ? `Reclaim webhook ${url.origin} is plain http; it is taken for localhost only when allowed (--allow-http-webhook).`
      : `Reclaim webhook ${url.origin} is not https; use an https URL.`,
    { pool, protocol: url.protocol },
  );
}

/** The name of the ConfigMap that holds a pool's settings: `corral-vdi-pool-<pool>`. @category pools */
export function poolSettingsName(pool: string): string {
  return `corral-vdi-pool-${pool}`;
}

const keys = {
  action: 'reclaim-action',
  webhook: 'reclaim-webhook',
  idle: 'idle-timeout',
  groups: 'allowed-groups',
  users: 'allowed-users',
  limit: 'max-desktops-per-user',
  schedule: 'schedule',
  plainSize: 'plain-size',
  failure: 'schedule-failure',
  rollOut: 'roll-out',
} as const;

// a value edited by hand into something unreadable counts as unset
function readJson<T>(text: string | undefined, read: (raw: unknown) => T): T | undefined {
  if (text === undefined) return undefined;
  try {
    return read(JSON.parse(text));
  } catch {
    return undefined;
  }
}

function readFailure(raw: unknown): ScheduleFailure {
  const { at, attempts, error } = raw as Partial<ScheduleFailure>;
  if (typeof at !== 'string' || !Number.isSafeInteger(attempts) || typeof error !== 'string') {
    throw new Error('not a failure record');
  }
  return { at, attempts: attempts as number, error };
}

/**
 * A keeper's failure record as stored (JSON text); `undefined` when there is none or it cannot be read.
 *
 * @category schedules
 */
export function readScheduleFailure(text: string | undefined): ScheduleFailure | undefined {
  return readJson(text, readFailure);
}

// one entry a line: entries have no line breaks, as checkPoolSettings makes sure
const listOf = (text: string | undefined) => text?.split('\n').filter((entry) => entry !== '') ?? [];

/**
 * The settings a pool's ConfigMap holds. A value edited by hand into something unreadable counts as unset, so a
 * reclaim pass never stops on it.
 *
 * @category pools
 */
export function poolSettingsOf(configMap: ConfigMapObject | undefined): PoolSettings {
  const data = configMap?.data ?? {};
  const action = data[keys.action];
  const idle = data[keys.idle];
  const limit = Number(data[keys.limit]);
  let idleTimeoutMs: number | undefined;
  try {
    idleTimeoutMs = idle === undefined ? undefined : parseDuration(idle);
  } catch {
    idleTimeoutMs = undefined;
  }
  return {
    ...(reclaimActions.includes(action as ReclaimAction) ? { reclaimAction: action as ReclaimAction } : {}),
    ...(data[keys.webhook] ? { reclaimWebhook: data[keys.webhook] } : {}),
    ...(idleTimeoutMs === undefined ? {} : { idleTimeoutMs }),
    ...(listOf(data[keys.groups]).length > 0 ? { allowedGroups: listOf(data[keys.groups]) } : {}),
    ...(listOf(data[keys.users]).length > 0 ? { allowedUsers: listOf(data[keys.users]) } : {}),
    ...(Number.isSafeInteger(limit) && limit > 0 ? { maxDesktopsPerUser: limit } : {}),
    ...optional('schedule', readJson(data[keys.schedule], parsePoolSchedule)),
    ...optional(
      'plainSize',
      /^\d{1,4}$/.test(data[keys.plainSize] ?? '') ? Number(data[keys.plainSize]) : undefined,
    ),
    ...optional('scheduleFailure', readScheduleFailure(data[keys.failure])),
    ...optional('rollOut', readJson(data[keys.rollOut], readPoolRollout)),
  };
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

/** The ConfigMap that stores `settings`, to create, or to replace `current` under its resourceVersion. */
export function buildPoolSettingsConfigMap(
  pool: string,
  settings: PoolSettings,
  current: ConfigMapObject | undefined,
): ConfigMapObject {
  const data: Record<string, string> = {};
  if (settings.reclaimAction) data[keys.action] = settings.reclaimAction;
  if (settings.reclaimWebhook) data[keys.webhook] = settings.reclaimWebhook;
  if (settings.idleTimeoutMs !== undefined) data[keys.idle] = formatDuration(settings.idleTimeoutMs);
  if (settings.allowedGroups?.length) data[keys.groups] = settings.allowedGroups.join('\n');
  if (settings.allowedUsers?.length) data[keys.users] = settings.allowedUsers.join('\n');
  if (settings.maxDesktopsPerUser) data[keys.limit] = String(settings.maxDesktopsPerUser);
  if (settings.schedule) data[keys.schedule] = JSON.stringify(settings.schedule);
  if (settings.plainSize !== undefined) data[keys.plainSize] = String(settings.plainSize);
  if (settings.scheduleFailure) data[keys.failure] = JSON.stringify(settings.scheduleFailure);
  if (settings.rollOut) data[keys.rollOut] = JSON.stringify(settings.rollOut);
  return {
    metadata: {
      name: poolSettingsName(pool),
      labels: { [poolLabel]: pool, [poolSettingsLabel]: 'true' },
      ...(current ? { resourceVersion: current.metadata.resourceVersion } : {}),
    },
    data,
  };
}

/**
 * The reclaim action in force for a pool: its own setting, else its reset (`recreate` for an ephemeral pool,
 * `stop` otherwise).
 *
 * @category pools
 */
export function reclaimActionOf(settings: PoolSettings, ephemeral: boolean): ReclaimAction {
  return settings.reclaimAction ?? (ephemeral ? 'recreate' : 'stop');
}
