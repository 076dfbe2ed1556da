import type { AdmissionPlan, CapacityRow } from '../capacity/admit-pool.js';
import type { PoolSettings, ReclaimAction } from '../pools/pool-settings.js';
import type { MemberState, PoolMemberView, PoolView } from '../pools/pool-view.js';
import { formatDuration } from '../sessions/parse-duration.js';
import type { PoolStatus } from '../spares/pool-status.js';
import { durationSchema } from '../validate.js';
import type { ClusterSession } from './cluster-session.js';
import {
  booleanFlag,
  type CommandInput,
  type CommandSpec,
  clusterOptions,
  countFlag,
  listFlag,
  requiredFlag,
  stringFlag,
} from './command-spec.js';
import {
  asksForPage,
  type MemberPage,
  memberPageLine,
  memberPageOptions,
  memberPageRequest,
  pageOfMembers,
} from './member-page.js';
import { rolloutFlags, rolloutLine, rolloutOptions } from './rollout-flags.js';
import { scheduleFlags, scheduleOptions } from './schedule-flags.js';
import type { Terminal } from './terminal.js';
import { UsageError } from './usage-error.js';

const cloneTimeoutOption = {
  'clone-timeout': {
    type: 'string',
    value: 'DURATION',
    help: 'How long one clone may take before the command gives up, such as 90s or 5m. Default 2m.',
  },
} as const;

/** The flags of a pool's own settings, shared by `pool create`, `pool set` and `ct-pool apply`. */
export const settingsOptions = {
  'reclaim-action': {
    type: 'string',
    value: 'ACTION',
    help: 'What the reclaim policy does with a desktop: stop (persistent default), recreate (ephemeral default) or notify (report it and keep the claim).',
  },
  'reclaim-webhook': {
    type: 'string',
    value: 'URL',
    help: 'An https URL that notify POSTs a JSON body to.',
  },
  'allow-http-webhook': {
    type: 'boolean',
    help: 'Accept an http webhook on localhost, 127.0.0.1 or ::1.',
  },
  'idle-timeout': {
    type: 'string',
    value: 'DURATION',
    help: "Reclaim a desktop whose broker consoles carried no input this long, such as 30m; 0 turns it off for the pool. Default: the broker's.",
  },
  'allow-group': {
    type: 'string',
    value: 'GROUP',
    multiple: true,
    help: "Let only members of this group (and the allowed users, and admins) claim from the pool; repeat for more. Replaces the stored list; --allow-group '' clears it.",
  },
  'allow-user': {
    type: 'string',
    value: 'LOGIN',
    multiple: true,
    help: "Let this login claim from the pool when groups or users are limited; repeat for more. Replaces the stored list; --allow-user '' clears it.",
  },
  'max-desktops-per-user': {
    type: 'string',
    value: 'N',
    help: 'Refuse a claim from the pool to a user who already holds N desktops in the namespace, in any pool; 0 clears it. Default: no limit of the pool (the broker may set one).',
  },
} as const;

/** A list flag where the one value `''` clears the list, as `--max-desktops-per-user 0` clears the limit. */
function allowListFlag(input: CommandInput, name: string, command: CommandSpec): string[] | undefined {
  const values = listFlag(input, name);
  if (values === undefined || !values.includes('')) return values;
  if (values.length > 1)
    throw new UsageError(
      `--${name} '' clears the list; give it alone, not beside other values`,
      command.words,
    );
  return [];
}

/** The pool settings the flags name; a bad duration is a usage error, a bad value the SDK's INVALID_INPUT. */
export function settingsFlags(input: CommandInput, command: CommandSpec) {
  const action = stringFlag(input, 'reclaim-action');
  const webhook = stringFlag(input, 'reclaim-webhook');
  const idle = stringFlag(input, 'idle-timeout');
  const allowedGroups = allowListFlag(input, 'allow-group', command);
  const allowedUsers = allowListFlag(input, 'allow-user', command);
  const limit = stringFlag(input, 'max-desktops-per-user');
  if (limit !== undefined && !/^\d+$/.test(limit)) {
    throw new UsageError(
      `--max-desktops-per-user takes a whole number (0 clears it), not "${limit}"`,
      command.words,
    );
  }
  let idleTimeoutMs: number | undefined;
  if (idle !== undefined) {
    const parsed = durationSchema.safeParse(idle);
    if (!parsed.success)
      throw new UsageError(`--idle-timeout: ${parsed.error.issues[0]?.message}`, command.words);
    idleTimeoutMs = parsed.data;
  }
  return {
    ...(action === undefined ? {} : { reclaimAction: action as ReclaimAction }),
    ...(webhook === undefined ? {} : { reclaimWebhook: webhook }),
    ...(idleTimeoutMs === undefined ? {} : { idleTimeoutMs }),
    ...(allowedGroups === undefined ? {} : { allowedGroups }),
    ...(allowedUsers === undefined ? {} : { allowedUsers }),
    ...(limit === undefined ? {} : { maxDesktopsPerUser: Number(limit) }),
    ...(booleanFlag(input, 'allow-http-webhook') ? { allowLoopbackHttpWebhook: true } : {}),
  };
}

/** A pool's settings in words, for `pool list` and `pool set`. */
export function settingsText(pool: { reclaimAction: ReclaimAction; settings: PoolSettings }): string {
  const { reclaimWebhook, idleTimeoutMs, allowedGroups, allowedUsers, maxDesktopsPerUser } = pool.settings;
  const parts = [
    `reclaim: ${pool.reclaimAction}${reclaimWebhook ? ` → ${new URL(reclaimWebhook).origin}` : ''}`,
  ];
  if (idleTimeoutMs !== undefined)
    parts.push(`idle timeout: ${idleTimeoutMs === 0 ? 'off' : formatDuration(idleTimeoutMs)}`);
  if (allowedGroups?.length) parts.push(`groups: ${allowedGroups.join(' ')}`);
  if (allowedUsers?.length) parts.push(`users: ${allowedUsers.join(' ')}`);
  if (maxDesktopsPerUser) parts.push(`max desktops per user: ${maxDesktopsPerUser}`);
  return parts.join(', ');
}

function cloneTimeoutMs(input: CommandInput, command: CommandSpec): number | undefined {
  const text = stringFlag(input, 'clone-timeout');
  if (text === undefined) return undefined;
  const parsed = durationSchema.safeParse(text);
  if (!parsed.success) {
    throw new UsageError(`--clone-timeout: ${parsed.error.issues[0]?.message}`, command.words);
  }
  const ms = parsed.data;
  if (ms <= 0) throw new UsageError('--clone-timeout must be longer than 0', command.words);
  return ms;
}

/** The `--min-ready` flag, shared by `pool create`, `pool set` and `ct-pool apply`. */
export const minReadyOption = {
  'min-ready': {
    type: 'string',
    value: 'N',
    help: 'How many free members to keep running as warm spares, 0 to the size. They use capacity all the time.',
  },
} as const;

// the SDK checks the number, so every bad value is the same INVALID_INPUT with the same message
function minReadyFlag(input: CommandInput): number | undefined {
  const text = stringFlag(input, 'min-ready');
  return text === undefined ? undefined : /^-?\d+$/.test(text) ? Number(text) : Number.NaN;
}

/**
 * Runs a pool change with a progress bar on stderr fed by the SDK's `pool-progress` events. The first Ctrl-C
 * of a `cancellable` change aborts `signal`, so the SDK removes the members it made; a second one quits at once.
 */
async function withProgress<T>(
  input: CommandInput,
  session: ClusterSession,
  run: (signal: AbortSignal) => Promise<T>,
  cancellable = true,
): Promise<T> {
  const bar = input.terminal.progressBar();
  const onProgress = (event: { member: string; step: string; done: number; total: number }) =>
    bar.update({ done: event.done, total: event.total, label: `${event.member} ${event.step}` });
  const cancel = new AbortController();
  const onInterrupt = () => {
    bar.clear();
    input.terminal.note('interrupted: undoing what was made so far (press Ctrl-C again to quit at once)');
    cancel.abort();
  };
  session.vdi.events.on('pool-progress', onProgress);
  if (cancellable) process.once('SIGINT', onInterrupt);
  try {
    return await run(cancel.signal);
  } finally {
    process.off('SIGINT', onInterrupt);
    session.vdi.events.off('pool-progress', onProgress);
    bar.clear();
  }
}

/** A member in `pool list -o json`. */
export interface PoolMemberJson {
  name: string;
  id: string;
  status: MemberState['kind'];
  holder: string | null;
  since: string | null;
  expiresAt: string | null;
  power: string;
  ephemeral: boolean;
  source: string | null;
}

function toMemberJson(member: PoolMemberView): PoolMemberJson {
  const { state } = member;
  const holder =
    state.kind === 'claimed' ? state.holder : state.kind === 'legacy-assigned' ? state.user : null;
  return {
    name: member.name,
    id: member.desktopId,
    status: state.kind,
    holder,
    since: state.kind === 'claimed' || state.kind === 'legacy-assigned' ? (state.since ?? null) : null,
    expiresAt: state.kind === 'claimed' ? (state.expiresAt ?? null) : null,
    power: member.power,
    ephemeral: member.ephemeral,
    source: member.source ?? null,
  };
}

function holderColumn(state: MemberState): string {
  switch (state.kind) {
    case 'free':
      return 'free';
    case 'claimed':
      return state.leaseMissing ? `${state.holder} (no Lease)` : state.holder;
    case 'legacy-assigned':
      return `${state.user} (v0.6.0)`;
    case 'deleting':
      return 'deleting';
  }
}

/** KubeVirt's printable status in lower-case words: `Stopped` → `stopped`, `ErrorUnschedulable` → `error unschedulable`. */
function powerText(printable: string): string {
  return printable.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
}

function printPool(terminal: Terminal, pool: PoolView, page: MemberPage<PoolView['members'][number]>): void {
  const { paint } = terminal;
  const count = pool.counts.members;
  terminal.print(
    `${paint.bold(pool.name)}  (ns/${pool.namespace}, ${count} member${count === 1 ? '' : 's'}; ${settingsText(pool)})`,
  );
  for (const member of page.members) {
    const holder = holderColumn(member.state);
    const shown =
      member.state.kind === 'free' ? paint.green(holder.padEnd(25)) : paint.yellow(holder.padEnd(25));
    terminal.print(`  ${member.name.padEnd(25)}${shown}${powerText(member.power)}`);
  }
  const pageLine = memberPageLine(page);
  if (pageLine !== undefined) terminal.print(`  ${paint.dim(pageLine)}`);
}

function table(rows: string[][]): string[] {
  const widths =
    rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length))) ?? [];
  return rows.map((row) =>
    row
      .map((cell, column) => cell.padEnd(widths[column] ?? 0))
      .join('  ')
      .trimEnd(),
  );
}

/** The per-node capacity table, as `pool plan` prints it. */
export function capacityTable(rows: readonly CapacityRow[]): string[] {
  const header = ['NODE', 'RESOURCE', 'KIND', 'ALLOCATABLE', 'IN USE', 'FREE', 'PER MEMBER', 'HOSTS'];
  return table([
    header,
    ...rows.map((row) => [
      row.excluded ? `${row.node} (${row.excluded})` : row.node,
      row.resource,
      row.kind,
      String(row.allocatable),
      String(row.inUse),
      String(row.free),
      String(row.perMember),
      String(row.hostsMembers),
    ]),
  ]);
}

const create: CommandSpec = {
  words: ['pool', 'create'],
  summary: 'Create a pool of N stopped clones of a golden VM.',
  args: ['name'],
  options: {
    ...clusterOptions,
    from: {
      type: 'string',
      value: 'GOLDEN',
      help: 'The golden VM to clone; it must be in the pool namespace.',
    },
    size: { type: 'string', value: 'N', help: 'How many members to make.' },
    ephemeral: { type: 'boolean', help: 'Recreate a member from the golden VM each time it is released.' },
    ...minReadyOption,
    ...cloneTimeoutOption,
    ...settingsOptions,
  },
  notes: [
    'Members are named <name>-1 … <name>-N. Device capacity is checked before anything is made; a clone ' +
      'failure part-way removes the members this command made.',
  ],
  examples: [
    '$ corral-vdi pool create devpool --from golden-desktop --size 3',
    '$ corral-vdi pool create kiosk --from golden-desktop --size 10 --ephemeral -n kiosks',
    '$ corral-vdi pool create devpool --from golden-desktop --size 5 --min-ready 2',
  ],
  async run(input) {
    const from = requiredFlag(input, create, 'from');
    const size = countFlag(input, create, 'size', 1);
    const timeout = cloneTimeoutMs(input, create);
    const minReady = minReadyFlag(input);
    const settings = settingsFlags(input, create);
    const session = await input.cluster();
    const { createPool } = await import('../pools/pool-service.js');
    const result = await withProgress(input, session, (signal) =>
      createPool(session.vdi.context, {
        signal,
        name: input.args.name ?? '',
        from,
        size,
        namespace: session.namespace,
        ephemeral: booleanFlag(input, 'ephemeral'),
        identity: session.actor,
        ...(minReady === undefined ? {} : { minReady }),
        ...(timeout === undefined ? {} : { cloneTimeoutMs: timeout }),
        ...settings,
      }),
    );
    const { terminal } = input;
    if (terminal.json) {
      const { id, name, namespace, source, ephemeral, members, reclaimAction } = result;
      terminal.printJson({
        pool: {
          id,
          name,
          namespace,
          source,
          ephemeral,
          minReady: result.minReady ?? null,
          members,
          reclaimAction,
          settings: result.settings,
        },
      });
      return 0;
    }
    const kind = result.ephemeral ? ' ephemeral' : '';
    terminal.print(
      `pool "${result.name}" created: ${result.members.length}${kind} member${result.members.length === 1 ? '' : 's'}`,
    );
    for (const member of result.members) terminal.print(`  ${member}`);
    if (result.minReady !== undefined)
      terminal.print(`keeps ${result.minReady} warm (the broker starts them)`);
    return 0;
  },
};

const list: CommandSpec = {
  words: ['pool', 'list'],
  summary: 'List the pools: each member, who has it, and its power state.',
  args: [],
  options: {
    ...clusterOptions,
    'all-namespaces': { type: 'boolean', short: 'A', help: 'List the pools of every namespace.' },
    ...memberPageOptions,
  },
  notes: [
    'The counts are always of the whole pool. With --limit, -o json gives each pool a "page" with the total, ' +
      'the members skipped and "next", the --after of the next page.',
  ],
  examples: [
    '$ corral-vdi pool list',
    '$ corral-vdi pool list -A -o json',
    '$ corral-vdi pool list --limit 50 --after devpool-50',
  ],
  async run(input) {
    const request = memberPageRequest(input, list);
    const paged = asksForPage(request);
    const session = await input.cluster();
    const all = booleanFlag(input, 'all-namespaces');
    if (all && stringFlag(input, 'namespace') !== undefined)
      throw new UsageError('pass either -n or -A, not both', list.words);
    const { listPools } = await import('../pools/pool-service.js');
    const namespaces = all ? await session.vdi.listPoolNamespaces() : [session.namespace];
    const pools = namespaces.length === 0 ? [] : await listPools(session.vdi.context, { namespaces });
    const { terminal } = input;
    if (terminal.json) {
      terminal.printJson({
        pools: pools.map((pool) => {
          const { members, ...page } = pageOfMembers(pool.members, (member) => member.name, request);
          return {
            id: pool.id,
            name: pool.name,
            namespace: pool.namespace,
            counts: pool.counts,
            reclaimAction: pool.reclaimAction,
            settings: pool.settings,
            members: members.map(toMemberJson),
            ...(paged ? { page } : {}),
          };
        }),
      });
      return 0;
    }
    if (pools.length === 0) {
      terminal.print(all ? 'no pools in any namespace' : `no pools in namespace ${session.namespace}`);
      return 0;
    }
    for (const pool of pools)
      printPool(
        terminal,
        pool,
        pageOfMembers(pool.members, (member) => member.name, request),
      );
    return 0;
  },
};

const remove: CommandSpec = {
  words: ['pool', 'delete'],
  summary: 'Delete a pool: its member VMs, their claims and leftover clone objects.',
  args: ['name'],
  options: {
    ...clusterOptions,
    force: { type: 'boolean', help: 'Delete even while members are assigned (their users lose them).' },
  },
  notes: ['Without --force it refuses while any member is assigned, and names them.'],
  examples: ['$ corral-vdi pool delete devpool', '$ corral-vdi pool delete devpool --force'],
  async run(input) {
    const session = await input.cluster();
    const { deletePool } = await import('../pools/pool-service.js');
    const result = await withProgress(
      input,
      session,
      () =>
        deletePool(session.vdi.context, {
          name: input.args.name ?? '',
          namespace: session.namespace,
          force: booleanFlag(input, 'force'),
          identity: session.actor,
        }),
      false,
    );
    const { terminal } = input;
    if (terminal.json) {
      terminal.printJson({ deleted: result });
      return 0;
    }
    const count = result.members.length;
    terminal.print(
      `pool "${input.args.name}" deleted: ${count} member${count === 1 ? '' : 's'}${result.forced ? ', assigned ones included' : ''}`,
    );
    return 0;
  },
};

const resize: CommandSpec = {
  words: ['pool', 'resize'],
  summary: 'Grow or shrink a pool to N members; shrinking removes only free members.',
  args: ['name'],
  options: {
    ...clusterOptions,
    size: { type: 'string', value: 'N', help: 'The number of members wanted.' },
    from: {
      type: 'string',
      value: 'GOLDEN',
      help: 'The golden VM for new members. Default: the one the members were cloned from.',
    },
    ...cloneTimeoutOption,
  },
  examples: ['$ corral-vdi pool resize devpool --size 5', '$ corral-vdi pool resize devpool --size 2'],
  async run(input) {
    const size = countFlag(input, resize, 'size', 1);
    const timeout = cloneTimeoutMs(input, resize);
    const from = stringFlag(input, 'from');
    const session = await input.cluster();
    const name = input.args.name ?? '';
    const { resizePool } = await import('../pools/pool-service.js');
    const result = await withProgress(input, session, (signal) =>
      resizePool(session.vdi.context, {
        signal,
        name,
        size,
        namespace: session.namespace,
        identity: session.actor,
        ...(from === undefined ? {} : { from }),
        ...(timeout === undefined ? {} : { cloneTimeoutMs: timeout }),
      }),
    );
    const { terminal } = input;
    if (terminal.json) {
      const { id, from: before, size: after, added, removed, skipped } = result;
      terminal.printJson({ resized: { id, from: before, size: after, added, removed, skipped } });
      return 0;
    }
    if (result.added.length === 0 && result.removed.length === 0 && result.skipped.length === 0) {
      terminal.print(`pool "${name}" already has ${result.size} members`);
      return 0;
    }
    terminal.print(`pool "${name}" resized: ${result.from} → ${result.size} members`);
    for (const member of result.added) terminal.print(`  + ${member}`);
    for (const member of result.removed) terminal.print(`  - ${member}`);
    for (const member of result.skipped) terminal.print(`  kept ${member}: it was assigned meanwhile`);
    return 0;
  },
};

function planSummary(plan: AdmissionPlan, golden: string): string {
  if (plan.needs.length === 0) return `${plan.size} members of "${golden}" fit: it asks for no host devices`;
  const needs = plan.needs.map((need) => `${need.perMember} × ${need.resource}`).join(', ');
  const verdict = plan.kind === 'admit' ? 'fit' : 'do not fit';
  return `${plan.size} members of "${golden}" ${verdict}: each needs ${needs} on one node; the nodes can host ${plan.fits ?? plan.size} now`;
}

const plan: CommandSpec = {
  words: ['pool', 'plan'],
  summary: 'Check, without changing anything, whether N clones of a golden VM fit the device capacity.',
  args: [],
  options: {
    ...clusterOptions,
    from: { type: 'string', value: 'GOLDEN', help: 'The golden VM; it must be in the namespace.' },
    size: { type: 'string', value: 'N', help: 'How many members would run at once.' },
  },
  notes: [
    'It runs the admission that pool create runs and prints the per-node table. It exits 0 when the members ' +
      'fit and 1 when they do not.',
  ],
  examples: ['$ corral-vdi pool plan --from golden-gpu --size 4'],
  async run(input) {
    const from = requiredFlag(input, plan, 'from');
    const size = countFlag(input, plan, 'size', 1);
    const session = await input.cluster();
    const { planCapacity } = await import('../capacity/capacity-service.js');
    const result = await planCapacity(session.vdi.context, { from, size, namespace: session.namespace });
    const { terminal } = input;
    if (terminal.json) terminal.printJson({ fits: result.kind === 'admit', plan: result });
    else {
      terminal.print(planSummary(result, from));
      if (result.table.length > 0) terminal.print('', ...capacityTable(result.table));
    }
    if (result.kind === 'admit') return 0;
    const [first = ''] = result.message.split('\n');
    const advice = result.message.split('\n').at(-1) ?? '';
    terminal.error(first === advice ? first : `${first} ${advice}`);
    return 1;
  },
};

const set: CommandSpec = {
  words: ['pool', 'set'],
  summary:
    "Change a pool's settings: --min-ready N keeps N free members running as warm spares; its reclaim action, webhook, idle timeout and who may claim from it.",
  args: ['name'],
  options: {
    ...clusterOptions,
    ...minReadyOption,
    ...settingsOptions,
    ...scheduleOptions,
    ...rolloutOptions,
  },
  notes: [
    'A schedule (--schedule-file, or --time-zone with --period) makes the pool follow the working day: in each ' +
      "period the broker's keeper keeps its buffer of free members running and its size between min and max; " +
      'outside them the plain size and --min-ready hold. It replaces the stored schedule; --no-schedule removes it.',
    "--from moves the pool to a new golden VM: the broker's leader rebuilds free members at once, --max-unavailable " +
      'at a time, never taking the free running members below the buffer; claimed members are rebuilt once released, ' +
      'or reclaimed at --rollout-deadline after a warning. "pool status" shows the progress.',
    "--min-ready is written on every member; the broker's keeper starts or stops spares on its next pass. A value " +
      'above the size, negative or not whole is refused and nothing is written.',
    'The other settings live in the ConfigMap corral-vdi-pool-<name>; those left out keep their value, and an ' +
      'action other than notify drops the webhook. A bad value changes nothing. Given together, they are written ' +
      'first and --min-ready after them: a refused --min-ready leaves them written, and says so.',
  ],
  examples: [
    '$ corral-vdi pool set devpool --min-ready 2',
    '$ corral-vdi pool set gpupool --allow-group ml --allow-group research --allow-user alice@example.com',
    '$ corral-vdi pool set devpool --reclaim-action notify --reclaim-webhook https://hooks.example.com/vdi',
    '$ corral-vdi pool set devpool --idle-timeout 45m',
    '$ corral-vdi pool set gpupool --max-desktops-per-user 1',
    '$ corral-vdi pool set devpool --time-zone Europe/Berlin --period "peak mon-fri 08:00-18:00 buffer 20% min 5 max 40" --plain-size 2',
    '$ corral-vdi pool set devpool --schedule-file working-day.yaml',
    '$ corral-vdi pool set devpool --from golden-v2 --max-unavailable 2 --rollout-deadline 8h',
    '$ corral-vdi pool set devpool --pause-rollout',
  ],
  async run(input) {
    const settings = settingsFlags(input, set);
    const minReady = minReadyFlag(input);
    const schedule = await scheduleFlags(input, set);
    const rollout = rolloutFlags(input, set);
    if (
      Object.keys(settings).length === 0 &&
      minReady === undefined &&
      schedule === undefined &&
      rollout === undefined
    ) {
      throw new UsageError(
        'name a setting to change, such as --min-ready, --reclaim-action, --idle-timeout, --allow-group, --schedule-file or --from',
        set.words,
      );
    }
    const session = await input.cluster();
    const name = input.args.name ?? '';
    const { terminal } = input;
    const changed: Record<string, unknown> = {};
    if (Object.keys(settings).length > 0) {
      const { setPoolSettings } = await import('../pools/pool-service.js');
      const result = await setPoolSettings(session.vdi.context, {
        name,
        namespace: session.namespace,
        identity: session.actor,
        ...settings,
      });
      Object.assign(changed, result);
      if (!terminal.json) terminal.print(`pool "${name}" set: ${settingsText(result)}`);
    }
    if (schedule !== undefined) {
      const result = await session.vdi.setPoolSchedule({
        name,
        namespace: session.namespace,
        identity: session.actor,
        ...schedule,
      });
      Object.assign(changed, result);
      if (!terminal.json) {
        terminal.print(
          result.schedule
            ? `pool "${name}" follows a schedule in ${result.schedule.timeZone} (${result.schedule.periods.length} period${result.schedule.periods.length === 1 ? '' : 's'}), plain size ${result.plainSize}`
            : `pool "${name}" has no schedule`,
        );
      }
    }
    if (rollout?.kind === 'start') {
      const { from, maxUnavailable, deadline, deadlineInMs } = rollout;
      const now = session.vdi.context.clock.now().getTime();
      const result = await session.vdi.startPoolRollout({
        name,
        namespace: session.namespace,
        identity: session.actor,
        from,
        ...(maxUnavailable === undefined ? {} : { maxUnavailable }),
        ...(deadline === undefined ? {} : { deadline }),
        ...(deadlineInMs === undefined ? {} : { deadline: new Date(now + deadlineInMs) }),
      });
      Object.assign(changed, result);
      if (!terminal.json) {
        const until = result.rollOut.deadline ? `, claimed ones reclaimed at ${result.rollOut.deadline}` : '';
        terminal.print(
          `pool "${name}" rolls out to ${result.rollOut.to}: ${result.onTarget}/${result.total} on it, ${result.rollOut.maxUnavailable} at a time${until}`,
        );
      }
    }
    if (rollout?.kind === 'pause') {
      const result = await session.vdi.setPoolRolloutPaused({
        name,
        namespace: session.namespace,
        identity: session.actor,
        paused: rollout.paused,
      });
      Object.assign(changed, { rollOut: result });
      if (!terminal.json)
        terminal.print(`pool "${name}": roll-out to ${result.to} ${result.paused ? 'paused' : 'resumed'}`);
    }
    if (minReady !== undefined) {
      const result = await session.vdi
        .setPool({ name, namespace: session.namespace, minReady, identity: session.actor })
        .catch((error: unknown) => {
          if (Object.keys(settings).length > 0)
            terminal.note('the other settings were written; --min-ready was not');
          throw error;
        });
      Object.assign(changed, result);
      if (!terminal.json)
        terminal.print(`pool "${name}": minReady ${result.minReady} on ${result.members.length} members`);
    }
    if (terminal.json) terminal.printJson({ pool: changed });
    return 0;
  },
};

function sessionText(member: PoolStatus['members'][number]): string {
  return member.session === 'none' ? '-' : member.session;
}

/** A scheduled pool's lines in `pool status`: the period, the next change, the targets and what is under way. */
export function scheduleLines(schedule: NonNullable<PoolStatus['schedule']>): string[] {
  const period = schedule.period === null ? 'outside every period' : `period ${schedule.period}`;
  const warming = schedule.warmingFor === null ? '' : `, warming for ${schedule.warmingFor}`;
  const next = schedule.nextChange
    ? `; next: ${schedule.nextChange.period ?? 'off hours'} at ${new Date(schedule.nextChange.at).toLocaleString('en-GB', { timeZone: schedule.timeZone, weekday: 'short', hour: '2-digit', minute: '2-digit' })}`
    : '';
  const { cloning, starting, stopping, removing, settling } = schedule.underway;
  const underway = Object.entries({ cloning, starting, stopping, removing, settling })
    .filter(([, count]) => count > 0)
    .map(([what, count]) => `${count} ${what}`);
  const lines = [
    `schedule (${schedule.timeZone}): ${period}${warming}${next}`,
    `targets: ${schedule.targets.size} members, ${schedule.targets.freeRunning} free running (plain size ${schedule.plainSize}); under way: ${underway.length === 0 ? 'nothing' : underway.join(', ')}`,
  ];
  if (schedule.failure) {
    lines.push(
      `keeper failing (${schedule.failure.attempts} in a row, retry at ${schedule.failure.retryAt}): ${schedule.failure.error}`,
    );
  }
  return lines;
}

/** The lines `pool status` prints for one reading of a pool. */
export function poolStatusLines(
  status: PoolStatus,
  page: MemberPage<PoolStatus['members'][number]> = pageOfMembers(status.members, nameOfStatusMember, {
    limit: undefined,
    after: undefined,
  }),
): string[] {
  const count = status.members.length;
  const spares =
    status.minReady === null
      ? `${status.warm} warm, no spares set`
      : `${status.warm}/${status.minReady} warm${status.short > 0 ? ` (${status.short} short)` : ''}`;
  const header = `${status.name}  (${status.kind}, ns/${status.namespace}, ${count} member${count === 1 ? '' : 's'})  ${spares}  waiters ${status.waiters}`;
  const rows = page.members.map((member) => [
    member.name,
    member.entitlement === 'not-entitled' ? `${member.holder} (not entitled)` : (member.holder ?? 'free'),
    member.phase,
    sessionText(member),
    member.spare ? 'spare' : member.warm ? 'warm' : '-',
  ]);
  const pageLine = memberPageLine(page);
  return [
    header,
    ...(status.schedule ? scheduleLines(status.schedule) : []),
    ...(status.rollOut ? [rolloutLine(status.rollOut)] : []),
    ...table([['MEMBER', 'HOLDER', 'PHASE', 'SESSION', 'WARM'], ...rows]),
    ...(pageLine === undefined ? [] : [pageLine]),
  ];
}

const nameOfStatusMember = (member: PoolStatus['members'][number]) => member.name;

const status: CommandSpec = {
  words: ['pool', 'status'],
  summary: 'Show a pool: each member with holder, phase, session and warm spare, and the waiters.',
  args: ['name'],
  options: {
    ...clusterOptions,
    kind: {
      type: 'string',
      value: 'vm|ct',
      help: 'The kind of the pool: vm (default) or ct, a container pool.',
    },
    watch: { type: 'boolean', short: 'w', help: 'Keep watching: print the pool again each time it changes.' },
    ...memberPageOptions,
  },
  notes: [
    'A holder the pool no longer lets in shows "(not entitled)": the session engine reclaims the desktop after ' +
      'the disconnect grace. ' +
      'WARM is "spare" for a free member the keeper started, "warm" for another free member that runs. ' +
      'With -w and -o json, each change prints one JSON document. ' +
      'The header counts the whole pool; with --limit, -o json adds a "page" with the total, the members ' +
      'skipped and "next", the --after of the next page.',
  ],
  examples: ['$ corral-vdi pool status devpool', '$ corral-vdi pool status devbox --kind ct -w -o json'],
  async run(input) {
    const request = memberPageRequest(input, status);
    const paged = asksForPage(request);
    const kind = stringFlag(input, 'kind') ?? 'vm';
    if (kind !== 'vm' && kind !== 'ct')
      throw new UsageError(`--kind takes vm or ct, not "${kind}"`, status.words);
    const session = await input.cluster();
    const { terminal } = input;
    const read = () =>
      session.vdi.readPoolStatus({ name: input.args.name ?? '', namespace: session.namespace, kind });
    const show = (reading: PoolStatus) => {
      const page = pageOfMembers(reading.members, nameOfStatusMember, request);
      const { members, ...position } = page;
      if (terminal.json)
        terminal.printJson({ status: { ...reading, members }, ...(paged ? { page: position } : {}) });
      else terminal.print(...poolStatusLines(reading, page));
    };
    if (!booleanFlag(input, 'watch')) {
      show(await read());
      return 0;
    }
    const { setTimeout: sleep } = await import('node:timers/promises');
    let shown = '';
    for (;;) {
      const reading = await read();
      const text = JSON.stringify(reading);
      if (text !== shown) {
        if (shown !== '' && !terminal.json) terminal.print('');
        show(reading);
        shown = text;
      }
      await sleep(watchIntervalMs);
    }
  },
};

// how often -w reads the pool again: a few reads a second would load the apiserver for nothing
const watchIntervalMs = 1000;

/** `pool create`, `list`, `delete`, `resize`, `set`, `status` and `plan`. */
export const poolCommands: readonly CommandSpec[] = [create, list, remove, resize, set, status, plan];
