import type { ConnectProtocol } from '../connect-facts.js';
import { type ConnectResult, connect } from '../connect-planner/connect.js';
import type { LaunchPlan } from '../connect-planner/launch-plan.js';
import type { ConnectOption } from '../connect-planner/plan-connect.js';
import { httpStatusByCode, VdiError, type VdiErrorCode } from '../errors.js';
import { runLaunchPlan } from '../launch/run-launch-plan.js';
import {
  booleanFlag,
  type CommandInput,
  type CommandSpec,
  clusterOptions,
  stringFlag,
} from './command-spec.js';
import type { Terminal } from './terminal.js';
import { UsageError } from './usage-error.js';

const protocolLabels: Readonly<Record<ConnectProtocol, string>> = {
  rdp: 'RDP',
  vnc: 'VNC',
  serial: 'serial console',
  terminal: 'terminal',
};

function describeOption(option: ConnectOption, launch: LaunchPlan | undefined): string {
  const label = protocolLabels[option.protocol];
  return launch === undefined ? label : `${label}: ${launch.argv.join(' ')}`;
}

/** Prints a connect answer as the walkthrough shows it: desktop, target, fallbacks, skipped protocols. */
export function printConnectResult(terminal: Terminal, result: ConnectResult): void {
  if (terminal.json) {
    terminal.printJson(result);
    return;
  }
  const { paint } = terminal;
  terminal.print(`desktop ${result.desktopId} (held by ${result.holder})`);
  terminal.print(`connect: ${paint.green(describeOption(result.target, result.launches[0]))}`);
  result.fallbacks.forEach((fallback, index) => {
    terminal.print(`fallback: ${describeOption(fallback, result.launches[index + 1])}`);
  });
  for (const skipped of result.skipped)
    terminal.print(paint.dim(`skipped: ${skipped.protocol}: ${skipped.reason}`));
}

function isErrorCode(code: unknown): code is VdiErrorCode {
  return typeof code === 'string' && Object.hasOwn(httpStatusByCode, code);
}

/** Asks a broker for the connect answer; the login is the one the proxy in front of the broker vouches for. */
async function connectThroughBroker(
  input: CommandInput,
  broker: string,
  kind: string,
): Promise<ConnectResult> {
  const { resolveCliNamespace } = await import('./cluster-session.js');
  const { namespace } = resolveCliNamespace(stringFlag(input, 'namespace'), input.env);
  const member = input.args.member ?? '';
  let url: URL;
  try {
    url = new URL(
      `api/vdi/desktops/${kind}/${encodeURIComponent(namespace)}/${encodeURIComponent(member)}/connect`,
      broker.endsWith('/') ? broker : `${broker}/`,
    );
  } catch (error) {
    throw new VdiError(
      'INVALID_INPUT',
      `The broker URL "${broker}" is not a URL; pass one such as https://corral.example.ts.net.`,
      { cause: error },
    );
  }
  let response: Response;
  try {
    response = await fetch(url, {
      headers: { accept: 'application/json' },
      signal: AbortSignal.timeout(30_000),
    });
  } catch (error) {
    throw new VdiError(
      'CLUSTER_UNAVAILABLE',
      `Cannot reach the broker at ${url.origin}: ${(error as Error).message}; check --broker or CORRAL_VDI_BROKER_URL.`,
      { retryable: true, details: { broker: url.origin }, cause: error },
    );
  }
  const body = (await response.json().catch(() => undefined)) as
    | { error?: { code?: unknown; message?: unknown } }
    | undefined;
  if (response.ok && body && !body.error) return body as unknown as ConnectResult;
  const said = body?.error;
  const code = isErrorCode(said?.code) ? said.code : response.status === 401 ? 'UNAUTHENTICATED' : 'INTERNAL';
  const message =
    typeof said?.message === 'string' ? said.message : `The broker answered HTTP ${response.status}.`;
  const advice =
    code === 'UNAUTHENTICATED'
      ? ' Reach the broker through the proxy that signs you in (such as tailscale serve).'
      : '';
  throw new VdiError(code, `${message}${advice}`, {
    details: { broker: url.origin, status: response.status },
  });
}

/** Opens the broker's page on the desktop's console, or prints its URL when no browser starts. */
async function openConsolePage(
  terminal: Terminal,
  broker: string,
  desktopId: string,
  env: Readonly<Record<string, string | undefined>>,
): Promise<void> {
  const page = new URL(broker.endsWith('/') ? broker : `${broker}/`);
  page.searchParams.set('connect', desktopId);
  const { openBrowser } = await import('./open-browser.js');
  if (await openBrowser(page.href, env)) terminal.note(`opened ${page.href} in the browser`);
  else terminal.print(`No browser could start; open ${page.href}`);
}

const command: CommandSpec = {
  words: ['connect'],
  summary: 'Pick the console for a claimed desktop (RDP, else VNC, else serial) and print how to open it.',
  args: ['member'],
  options: {
    ...clusterOptions,
    open: {
      type: 'boolean',
      help: "Also open the chosen console: xfreerdp for RDP, virtctl vnc, virtctl console, or a shell in a CT member; with --broker, the broker's console page in the browser ($BROWSER).",
    },
    user: {
      type: 'string',
      value: 'LOGIN',
      help: 'Require that this user holds the desktop. Default: act as an administrator.',
    },
    kind: { type: 'string', value: 'vm|ct', help: 'The member kind. Default vm.' },
    broker: {
      type: 'string',
      value: 'URL',
      help: 'Ask this broker instead of the cluster, as the login its proxy vouches for. Default: $CORRAL_VDI_BROKER_URL.',
    },
  },
  notes: [
    'Without a broker, the CLI reads the cluster with your kubeconfig and probes RDP from this machine, so RDP ' +
      'is offered only when TCP 3389 of the guest answers from here; without --user it acts as an ' +
      'administrator and connects to whoever holds the desktop. With --broker (or CORRAL_VDI_BROKER_URL) the ' +
      'broker decides, as the login of the proxy in front of it, and probes from where it runs. --open starts ' +
      'the console client on this machine; with --broker it opens the console page of the broker (served by ' +
      'broker serve --ui) in the browser named by $BROWSER or the desktop default, and prints the page URL when ' +
      'no browser can start.',
  ],
  examples: [
    '$ corral-vdi connect devpool-1',
    '$ corral-vdi connect devpool-1 --user alice --open',
    '$ corral-vdi connect devbox-1 --kind ct --open',
    '$ corral-vdi connect devpool-1 --broker https://corral.example.ts.net',
    '$ corral-vdi connect devpool-1 --broker https://corral.example.ts.net --open',
  ],
  async run(input) {
    const kind = stringFlag(input, 'kind') ?? 'vm';
    if (kind !== 'vm' && kind !== 'ct')
      throw new UsageError(`--kind takes vm or ct, not "${kind}"`, command.words);
    const broker = stringFlag(input, 'broker') ?? (input.env.CORRAL_VDI_BROKER_URL || undefined);
    const user = stringFlag(input, 'user');
    let result: ConnectResult;
    if (broker !== undefined) {
      if (user !== undefined)
        throw new UsageError(
          '--user does not go with --broker: the broker takes your login from its proxy',
          command.words,
        );
      result = await connectThroughBroker(input, broker, kind);
    } else {
      result = await connectDirectly(input, kind, user);
    }
    printConnectResult(input.terminal, result);
    if (broker !== undefined && booleanFlag(input, 'open')) {
      await openConsolePage(input.terminal, broker, result.desktopId, input.env);
      return 0;
    }
    const launch = result.launches[0];
    if (!booleanFlag(input, 'open') || launch === undefined) return 0;
    // the broker's own terminal is a websocket for the browser; the CLI attaches through the apiserver itself
    if (kind === 'ct' && broker === undefined) return await attachTerminal(input, result.desktopId, user);
    input.terminal.note(`opening ${protocolLabels[launch.protocol]}: ${launch.argv.join(' ')}`);
    const exit = await runLaunchPlan(launch);
    return exit.exitCode;
  },
};

async function connectDirectly(
  input: CommandInput,
  kind: 'vm' | 'ct',
  user: string | undefined,
): Promise<ConnectResult> {
  const session = await input.cluster();
  return await connect(session.vdi.context, {
    member: input.args.member ?? '',
    identity: user ?? session.actor,
    namespace: session.namespace,
    asAdmin: user === undefined,
    kind,
  });
}

/**
 * Attaches this terminal to a shell in a container desktop, as `kubectl exec -it` does; resolves with its exit code.
 * Input that is no terminal (a pipe, a file, a here-document) runs the shell without one, as `kubectl exec -i`.
 */
async function attachTerminal(
  input: CommandInput,
  desktopId: string,
  user: string | undefined,
): Promise<number> {
  const session = await input.cluster();
  const { stdin, stdout } = process;
  const raw = stdin.isTTY === true;
  const shell = await session.vdi.openTerminal(desktopId, {
    identity: user ?? session.actor,
    asAdmin: user === undefined,
    // a keystroke such as Ctrl-D means what the remote terminal makes of it when it comes; the end of a script's
    // input must reach the shell as the end of its input instead, whatever the shell is doing then
    tty: raw,
    // a terminal that reports no size (0 × 0) keeps the default one
    ...(stdout.columns > 0 && stdout.rows > 0 ? { columns: stdout.columns, rows: stdout.rows } : {}),
  });
  const onResize = () => shell.resize({ columns: stdout.columns, rows: stdout.rows });
  if (raw) stdin.setRawMode(true);
  stdout.on('resize', onResize);
  stdin.pipe(shell);
  shell.pipe(stdout, { end: false });
  try {
    return await shell.exitCode;
  } finally {
    stdin.unpipe(shell);
    stdin.pause();
    stdout.off('resize', onResize);
    if (raw) stdin.setRawMode(false);
  }
}

/** `connect`. */
export const connectCommands: readonly CommandSpec[] = [command];
