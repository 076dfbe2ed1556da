import type { ClusterSession } from './cluster-session.js';
import { type CommandInput, type CommandSpec, clusterOptions, stringFlag } from './command-spec.js';
import { toDesktopJson } from './json-views.js';
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
      terminal.printJson({
        desktop: toDesktopJson(result),
        retried: result.retried,
        adopted: result.adopted,
        warm: result.warm,
        startError: result.startError ?? null,
        connect,
      });
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

/** `assign` and `unassign`. */
export const desktopCommands: readonly CommandSpec[] = [assign, unassign];
