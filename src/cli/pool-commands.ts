import type { PoolStatus } from '../pool-status/pool-status.js';
import type { ClusterSession } from './cluster-session.js';
import {
  booleanFlag,
  type CommandInput,
  type CommandSpec,
  clusterOptions,
  countFlag,
  requiredFlag,
  stringFlag,
} from './command-spec.js';
import { asksForPage, memberPageOptions, memberPageRequest, pageOfMembers } from './member-page.js';
import {
  cloneTimeoutMs,
  cloneTimeoutOption,
  minReadyFlag,
  minReadyOption,
  settingsFlags,
  settingsOptions,
} from './pool-flags.js';
import {
  capacityTable,
  nameOfStatusMember,
  planSummary,
  poolStatusLines,
  printPool,
  settingsText,
  toMemberJson,
} from './pool-text.js';
import { rolloutFlags, rolloutOptions } from './rollout-flags.js';
import { scheduleFlags, scheduleOptions } from './schedule-flags.js';
import { UsageError } from './usage-error.js';

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
  // a slower make, or a snapshot left behind, is worth a line of its own
  const onSnapshot = (event: { step: string; reason?: string }) => {
    if (event.reason === undefined) return;
    bar.clear();
    input.terminal.note(
      event.step === 'skipped'
        ? `one snapshot per member: ${event.reason}`
        : `snapshot left: ${event.reason}`,
    );
  };
  const cancel = new AbortController();
  const onInterrupt = () => {
    bar.clear();
    input.terminal.note('interrupted: undoing what was made so far (press Ctrl-C again to quit at once)');
    cancel.abort();
  };
  session.vdi.events.on('pool-progress', onProgress);
  session.vdi.events.on('pool-snapshot', onSnapshot);
  if (cancellable) process.once('SIGINT', onInterrupt);
  try {
    return await run(cancel.signal);
  } finally {
    process.off('SIGINT', onInterrupt);
    session.vdi.events.off('pool-progress', onProgress);
    session.vdi.events.off('pool-snapshot', onSnapshot);
    bar.clear();
  }
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
