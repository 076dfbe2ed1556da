import { durationSchema } from '../validate.js';
import type { ClusterSession } from './cluster-session.js';
import {
  booleanFlag,
  type CommandInput,
  type CommandSpec,
  clusterOptions,
  stringFlag,
} from './command-spec.js';
import { toClaimJson } from './json-views.js';
import { UsageError } from './usage-error.js';

/** `-n <ns>` for a hint, when the namespace is not the one the CLI picks without flags. */
export function namespaceArgs(session: ClusterSession): string {
  return session.namespaceFlagged ? ` -n ${session.namespace}` : '';
}

const kindOption = {
  kind: {
    type: 'string',
    value: 'vm|ct',
    help: 'The kind of the pool: vm (default) or ct, a container pool.',
  },
} as const;

function kindFlag(input: CommandInput, command: CommandSpec): 'vm' | 'ct' {
  const kind = stringFlag(input, 'kind') ?? 'vm';
  if (kind !== 'vm' && kind !== 'ct')
    throw new UsageError(`--kind takes vm or ct, not "${kind}"`, command.words);
  return kind;
}

const assign: CommandSpec = {
  words: ['assign'],
  summary: 'Give a free member of a pool to a user, and start it.',
  args: ['pool', 'user'],
  options: { ...clusterOptions, ...kindOption },
  notes: [
    'The CLI acts as an administrator here; the audit names you ($USER, else the kubeconfig user). Assigning the ' +
      'same user again returns the member they already hold and retries its start. When the start fails, the ' +
      'member stays assigned (so nobody else gets a half-started desktop) and the command exits 1.',
  ],
  examples: [
    '$ corral-vdi assign devpool alice',
    '$ corral-vdi assign devpool alice@example.com -n team-a -o json',
  ],
  async run(input) {
    const kind = kindFlag(input, assign);
    const session = await input.cluster();
    const pool = input.args.pool ?? '';
    const user = input.args.user ?? '';
    const result = await session.vdi.assign({
      pool,
      identity: user,
      namespace: session.namespace,
      actor: session.actor,
      kind,
    });
    const connect = `corral-vdi connect ${result.member}${namespaceArgs(session)}${kind === 'ct' ? ' --kind ct' : ''}`;
    const { terminal } = input;
    if (terminal.json) {
      terminal.printJson(toClaimJson(result, connect));
    } else {
      terminal.print(
        `${result.retried ? 'already assigned' : 'assigned'} ${terminal.paint.bold(result.member)} → ${user}`,
      );
      if (result.startError === undefined) terminal.print(`connect:  ${connect}`);
    }
    if (result.startError === undefined) return 0;
    terminal.error(
      `${result.member} is assigned to ${user} but did not start: ${result.startError} It stays assigned; fix the ` +
        `cause and run "corral-vdi assign ${pool} ${user}${namespaceArgs(session)}" again to retry the start, or ` +
        `"corral-vdi unassign ${result.member}${namespaceArgs(session)}" to back out.`,
    );
    return 1;
  },
};

function waitTimeoutMs(input: CommandInput, command: CommandSpec): number | undefined {
  const text = stringFlag(input, 'wait-timeout');
  if (text === undefined) return undefined;
  if (!booleanFlag(input, 'wait')) throw new UsageError('--wait-timeout needs --wait', command.words);
  const parsed = durationSchema.safeParse(text);
  if (!parsed.success) {
    throw new UsageError(`--wait-timeout: ${parsed.error.issues[0]?.message}`, command.words);
  }
  if (parsed.data <= 0) throw new UsageError('--wait-timeout must be longer than 0', command.words);
  return parsed.data;
}

const claim: CommandSpec = {
  words: ['claim'],
  summary: 'Claim a free member of a pool for yourself (or --user), and start it; --wait queues for one.',
  args: ['pool'],
  options: {
    ...clusterOptions,
    ...kindOption,
    user: { type: 'string', value: 'LOGIN', help: 'Claim for this user instead of you ($USER).' },
    wait: {
      type: 'boolean',
      help: "When no member is free, join the pool's queue and wait for one, first come first served.",
    },
    'wait-timeout': {
      type: 'string',
      value: 'DURATION',
      help: 'With --wait, give up after this long, such as 90s or 10m. Default: wait until Ctrl-C.',
    },
  },
  notes: [
    'Claiming again returns the desktop the user already holds. With --wait, the position in the queue is printed ' +
      'on stderr whenever it moves; Ctrl-C leaves the queue. A wait that times out exits 1 with WAIT_TIMED_OUT ' +
      'and leaves the queue too.',
  ],
  examples: [
    '$ corral-vdi claim devpool',
    '$ corral-vdi claim devpool --wait --wait-timeout 10m --user alice',
  ],
  async run(input) {
    const kind = kindFlag(input, claim);
    const wait = booleanFlag(input, 'wait');
    const timeout = waitTimeoutMs(input, claim);
    const session = await input.cluster();
    const pool = input.args.pool ?? '';
    const user = stringFlag(input, 'user') ?? session.actor;
    const { terminal } = input;
    const cancel = new AbortController();
    const onInterrupt = () => {
      terminal.note('interrupted: leaving the queue');
      cancel.abort();
    };
    if (wait) process.once('SIGINT', onInterrupt);
    let result: Awaited<ReturnType<typeof session.vdi.claim>>;
    try {
      result = await session.vdi.claim({
        pool,
        identity: user,
        namespace: session.namespace,
        kind,
        ...(wait
          ? {
              wait,
              signal: cancel.signal,
              onPosition: ({ position, waiters }) =>
                terminal.note(`waiting for a member of ${pool}: ${position} of ${waiters} in the queue`),
              ...(timeout === undefined ? {} : { waitTimeoutMs: timeout }),
            }
          : {}),
      });
    } finally {
      process.off('SIGINT', onInterrupt);
    }
    const connect = `corral-vdi connect ${result.member}${namespaceArgs(session)}${kind === 'ct' ? ' --kind ct' : ''}`;
    if (terminal.json) {
      terminal.printJson(toClaimJson(result, connect));
    } else {
      terminal.print(
        `${result.retried ? 'already claimed' : 'claimed'} ${terminal.paint.bold(result.member)} → ${user}`,
      );
      if (result.startError === undefined) terminal.print(`connect:  ${connect}`);
    }
    if (result.startError === undefined) return 0;
    terminal.error(
      `${result.member} is claimed by ${user} but did not start: ${result.startError} It stays claimed; run the ` +
        `same claim again once the cause is fixed to retry the start.`,
    );
    return 1;
  },
};

const unassign: CommandSpec = {
  words: ['unassign'],
  summary: 'Take a member back from its user: stop it (or recreate an ephemeral one), then end the claim.',
  args: ['member'],
  options: { ...clusterOptions, ...kindOption },
  notes: [
    'The CLI acts as an administrator, so it unassigns whoever holds the member, also an assignment made by ' +
      'v0.6.0. When the stop fails, the user keeps the member and the command exits 1; run it again once the ' +
      'cause is fixed.',
  ],
  examples: ['$ corral-vdi unassign devpool-1'],
  async run(input) {
    const kind = kindFlag(input, unassign);
    const session = await input.cluster();
    const member = input.args.member ?? '';
    const result = await session.vdi.unassign({
      member,
      identity: session.actor,
      namespace: session.namespace,
      asAdmin: true,
      kind,
    });
    const { terminal } = input;
    if (terminal.json) {
      terminal.printJson({
        desktop: result.desktopId,
        member,
        namespace: session.namespace,
        holder: result.holder,
        reset: result.reset,
      });
      return 0;
    }
    const how =
      result.reset === 'stopped'
        ? 'stopped, its disks kept'
        : `recreated from its ${kind === 'ct' ? 'image' : 'golden VM'}`;
    terminal.print(`unassigned ${terminal.paint.bold(member)} from ${result.holder}: ${how}`);
    return 0;
  },
};

/** `claim`, `assign` and `unassign`. */
export const desktopCommands: readonly CommandSpec[] = [claim, assign, unassign];
