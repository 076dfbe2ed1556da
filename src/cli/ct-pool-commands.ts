import { readFileSync } from 'node:fs';
import type { CtPoolView } from '../ct-pools/ct-pool-service.js';
import { formatPeriod } from '../pool-schedule.js';
import {
  booleanFlag,
  type CommandInput,
  type CommandSpec,
  clusterOptions,
  stringFlag,
} from './command-spec.js';
import { minReadyOption, settingsFlags, settingsOptions } from './pool-flags.js';
import { settingsText } from './pool-text.js';
import { ctScheduleOptions, scheduleFlags } from './schedule-flags.js';
import type { Terminal } from './terminal.js';
import { UsageError } from './usage-error.js';

/** The fields of a spec the flags may set, by flag name. */
const specFlags = {
  image: {
    type: 'string',
    value: 'IMAGE',
    help: 'The image every member runs, such as ghcr.io/acme/devbox:1.4.',
  },
  size: { type: 'string', value: 'N', help: 'How many members the reconciler keeps (0 to 1000).' },
  shell: { type: 'string', value: 'PATH', help: 'The shell a terminal runs. Default /bin/sh.' },
  'home-size': {
    type: 'string',
    value: 'SIZE',
    help: 'Give each member a home volume of this size, such as 10Gi.',
  },
  'home-on-release': {
    type: 'string',
    value: 'wipe|keep',
    help: 'What a release does with the home volume. Default wipe.',
  },
  ...minReadyOption,
  'max-unavailable': {
    type: 'string',
    value: 'N',
    help: 'How many free members an image change replaces at once, extra members included (1 to 100, default 1); the Ready free members never fall below the buffer.',
  },
  ...settingsOptions,
  ...ctScheduleOptions,
  'reclaim-action': {
    type: 'string',
    value: 'ACTION',
    help: 'What the reclaim policy does with a desktop: recreate (the default) or notify (report it and keep the claim). A container cannot be stopped.',
  },
} as const;

async function readSpecFile(path: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = readFileSync(path === '-' ? 0 : path, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read ${path}: ${(error as Error).message}`, ['ct-pool', 'apply']);
  }
  const { readCtPoolSpecText } = await import('../ct-pools/read-spec-text.js');
  return readCtPoolSpecText(text, path === '-' ? 'standard input' : path);
}

const whole = (text: string) => (/^\d+$/.test(text) ? Number(text) : text);

// flags override the file's fields; a count that is not a number is left for the spec check to name
async function specFrom(input: CommandInput, command: CommandSpec): Promise<Record<string, unknown>> {
  const file = stringFlag(input, 'filename');
  const spec: Record<string, unknown> = file === undefined ? {} : await readSpecFile(file);
  if (input.args.name) spec.name = input.args.name;
  const image = stringFlag(input, 'image');
  if (image !== undefined) spec.image = image;
  const size = stringFlag(input, 'size');
  if (size !== undefined) spec.size = whole(size);
  const minReady = stringFlag(input, 'min-ready');
  if (minReady !== undefined) spec.minReady = whole(minReady);
  const maxUnavailable = stringFlag(input, 'max-unavailable');
  if (maxUnavailable !== undefined) spec.maxUnavailable = whole(maxUnavailable);
  const { allowLoopbackHttpWebhook: _, ...settings } = settingsFlags(input, command);
  Object.assign(spec, settings);
  const shell = stringFlag(input, 'shell');
  if (shell !== undefined) spec.shell = shell;
  const homeSize = stringFlag(input, 'home-size');
  const onRelease = stringFlag(input, 'home-on-release');
  if (homeSize !== undefined || onRelease !== undefined) {
    spec.home = {
      ...(typeof spec.home === 'object' && spec.home !== null ? spec.home : {}),
      ...(homeSize === undefined ? {} : { size: homeSize }),
      ...(onRelease === undefined ? {} : { onRelease }),
    };
  }
  const schedule = await scheduleFlags(input, command);
  if (schedule !== undefined) spec.schedule = schedule.schedule;
  if (file === undefined && spec.name === undefined) {
    throw new UsageError('"ct-pool apply" needs -f FILE, or a pool name with --image and --size', [
      'ct-pool',
      'apply',
    ]);
  }
  return spec;
}

function printPool(terminal: Terminal, pool: CtPoolView): void {
  const { paint } = terminal;
  const { spec } = pool;
  terminal.print(
    `${paint.bold(pool.name)}  (ns/${pool.namespace}, ${spec.size} member${spec.size === 1 ? '' : 's'} of ${spec.image}; ${settingsText({ reclaimAction: pool.reclaimAction, settings: spec })})`,
  );
  if (spec.schedule) {
    terminal.print(
      `  schedule (${spec.schedule.timeZone}, outside it ${spec.size}): ${spec.schedule.periods.map(formatPeriod).join('; ')}`,
    );
  }
  for (const member of pool.members) {
    const holder = member.owner ?? 'free';
    const shown = member.owner ? paint.yellow(holder.padEnd(25)) : paint.green(holder.padEnd(25));
    terminal.print(`  ${member.member.padEnd(25)}${shown}${member.phase}`);
  }
}

const apply: CommandSpec = {
  words: ['ct-pool', 'apply'],
  summary: 'Create a container pool, or change its spec, from a YAML file or flags.',
  args: ['name?'],
  options: {
    ...clusterOptions,
    filename: {
      type: 'string',
      short: 'f',
      value: 'FILE',
      help: 'The spec as YAML; - reads standard input.',
    },
    ...specFlags,
  },
  notes: [
    'The spec is checked before anything is written; a bad field is named. Apply makes no member: the ' +
      "broker's reconcile loop does, or run ct-pool reconcile once. docs/ct-pools.md lists every field.",
    'A schedule (schedule: in the file, --schedule-file, or --time-zone with --period) makes the pool follow the ' +
      'working day as a VM pool does (docs/schedules.md); --size is its size outside every period. The spec applied ' +
      'is the whole spec: applying one without a schedule takes the schedule away.',
    'A new --image is rolled out by the reconcile: free members are replaced --max-unavailable at a time, each new ' +
      'Pod Ready before it counts, extra members made first when the buffer (minReady, or the schedule) leaves none ' +
      'to take; claimed members get the image on release. "pool status NAME --kind ct" shows the progress, and ' +
      '"pool set NAME --pause-rollout" pauses it (docs/ct-pools.md#image-changes).',
  ],
  examples: [
    '$ corral-vdi ct-pool apply -f devbox.yaml',
    '$ corral-vdi ct-pool apply devbox --image ghcr.io/acme/devbox:1.4 --size 3 --home-size 5Gi',
    '$ corral-vdi ct-pool apply -f devbox.yaml --min-ready 1 --reclaim-action notify --reclaim-webhook https://hooks.example.com/vdi',
    '$ corral-vdi ct-pool apply -f devbox.yaml --image ghcr.io/acme/devbox:1.5 --max-unavailable 2',
    '$ corral-vdi ct-pool apply -f devbox.yaml --time-zone Europe/Berlin --period "peak mon-fri 08:00-18:00 buffer 20% min 2 max 30"',
  ],
  async run(input) {
    const spec = await specFrom(input, apply);
    const session = await input.cluster();
    const { applyCtPool } = await import('../ct-pools/ct-pool-service.js');
    const result = await applyCtPool(session.vdi.context, {
      spec,
      namespace: session.namespace,
      identity: session.actor,
      ...(booleanFlag(input, 'allow-http-webhook') ? { allowLoopbackHttpWebhook: true } : {}),
    });
    const { terminal } = input;
    if (terminal.json) terminal.printJson({ applied: result });
    else
      terminal.print(
        `container pool "${result.spec.name}" ${result.created ? 'created' : 'updated'}: ${result.spec.size} × ${result.spec.image}; run "corral-vdi ct-pool reconcile ${result.spec.name}" or let the broker make its members`,
      );
    return 0;
  },
};

const get: CommandSpec = {
  words: ['ct-pool', 'get'],
  summary: 'Show a container pool: its spec and each member with its holder and Pod phase.',
  args: ['name'],
  options: clusterOptions,
  examples: ['$ corral-vdi ct-pool get devbox', '$ corral-vdi ct-pool get devbox -o json'],
  async run(input) {
    const session = await input.cluster();
    const { getCtPool } = await import('../ct-pools/ct-pool-service.js');
    const pool = await getCtPool(session.vdi.context, {
      name: input.args.name ?? '',
      namespace: session.namespace,
    });
    if (input.terminal.json) input.terminal.printJson({ pool });
    else printPool(input.terminal, pool);
    return 0;
  },
};

const list: CommandSpec = {
  words: ['ct-pool', 'list'],
  summary: 'List the container pools of the namespace with their members.',
  args: [],
  options: clusterOptions,
  examples: ['$ corral-vdi ct-pool list', '$ corral-vdi ct-pool list -o json'],
  async run(input) {
    const session = await input.cluster();
    const { listCtPools } = await import('../ct-pools/ct-pool-service.js');
    const pools = await listCtPools(session.vdi.context, { namespace: session.namespace });
    const { terminal } = input;
    if (terminal.json) terminal.printJson({ pools });
    else if (pools.length === 0) terminal.print(`no container pools in namespace ${session.namespace}`);
    else for (const pool of pools) printPool(terminal, pool);
    return 0;
  },
};

const reconcile: CommandSpec = {
  words: ['ct-pool', 'reconcile'],
  summary:
    'Run one reconcile pass: make missing members, replace ended ones, remove free ones past the size.',
  args: ['name'],
  options: {
    ...clusterOptions,
    force: { type: 'boolean', help: "Run a scheduled pool's pass while it backs off after failures." },
  },
  notes: [
    'The broker runs the same pass in a loop; running it by hand as well is safe. A scheduled pool follows the ' +
      "period's targets, and after a failed pass waits 30 s, doubling up to 10 minutes, before the next.",
  ],
  examples: ['$ corral-vdi ct-pool reconcile devbox', '$ corral-vdi ct-pool reconcile devbox --force'],
  async run(input) {
    const session = await input.cluster();
    const { reconcileCtPool } = await import('../ct-pools/reconcile-ct-pool.js');
    const name = input.args.name ?? '';
    const result = await reconcileCtPool(session.vdi.context, {
      name,
      namespace: session.namespace,
      force: booleanFlag(input, 'force'),
    });
    const { terminal } = input;
    if (terminal.json) {
      const { capacity: _, ...rest } = result;
      terminal.printJson({ reconciled: rest });
      return 0;
    }
    if (result.backingOff) {
      const { attempts, retryAt, error } = result.backingOff;
      terminal.print(
        `container pool "${name}" backs off after ${attempts} failed pass${attempts === 1 ? '' : 'es'} in a row until ${retryAt} (--force runs it now): ${error}`,
      );
      return 0;
    }
    const changes = [
      ...result.created.map((member) => `  + ${member}`),
      ...result.completed.map((member) => `  ~ ${member} (completed)`),
      ...result.replaced.map((member) => `  ~ ${member} (replaced from the image)`),
      ...result.removed.map((member) => `  - ${member}`),
    ];
    terminal.print(
      changes.length === 0 ? `container pool "${name}" is up to date` : `container pool "${name}":`,
    );
    if (changes.length > 0) terminal.print(...changes);
    if (result.held.length > 0) terminal.print(`  left alone (claimed): ${result.held.join(', ')}`);
    if (result.schedule) {
      const { targets, claimed, waiters, settling } = result.schedule;
      terminal.print(
        `  schedule: ${targets.period === undefined ? 'outside every period' : `period ${targets.period}`}${targets.warmingFor ? `, warming for ${targets.warmingFor}` : ''}; ${targets.size} members for ${claimed} claimed and ${waiters} waiting${settling > 0 ? `; ${settling} free settling before removal` : ''}`,
      );
    }
    const rollOut = result.rollOut;
    if (rollOut && !rollOut.finished) {
      const state = rollOut.paused ? 'paused' : `replacing ${rollOut.rebuilding.join(', ') || 'nothing now'}`;
      terminal.print(`  roll-out: ${rollOut.onTarget}/${rollOut.total} on ${rollOut.to}; ${state}`);
    }
    return 0;
  },
};

const remove: CommandSpec = {
  words: ['ct-pool', 'delete'],
  summary: 'Delete a container pool: its spec and every member Pod, Service and home volume.',
  args: ['name'],
  options: {
    ...clusterOptions,
    force: { type: 'boolean', help: 'Delete even while members are claimed (their users lose them).' },
  },
  examples: ['$ corral-vdi ct-pool delete devbox', '$ corral-vdi ct-pool delete devbox --force'],
  async run(input) {
    const session = await input.cluster();
    const { deleteCtPool } = await import('../ct-pools/ct-pool-service.js');
    const result = await deleteCtPool(session.vdi.context, {
      name: input.args.name ?? '',
      namespace: session.namespace,
      force: booleanFlag(input, 'force'),
      identity: session.actor,
    });
    const { terminal } = input;
    if (terminal.json) terminal.printJson({ deleted: result });
    else {
      const count = result.deleted.length;
      terminal.print(
        `container pool "${input.args.name}" deleted: ${count} member${count === 1 ? '' : 's'}${result.forced ? ', claimed ones included' : ''}`,
      );
    }
    return 0;
  },
};

/** `ct-pool apply`, `get`, `list`, `reconcile` and `delete`. */
export const ctPoolCommands: readonly CommandSpec[] = [apply, get, list, reconcile, remove];
