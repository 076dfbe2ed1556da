import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { brokerCommands } from './broker-command.js';
import type { ClusterSession } from './cluster-session.js';
import { parseCommandLine } from './command-line.js';
import type { CommandInput, CommandSpec } from './command-spec.js';
import { connectCommands } from './connect-command.js';
import { ctPoolCommands } from './ct-pool-commands.js';
import { desktopCommands } from './desktop-commands.js';
import { devClusterCommands } from './dev-cluster-commands.js';
import { cliHintFor } from './error-hints.js';
import { renderCommandHelp, renderOverview } from './help.js';
import { poolCommands } from './pool-commands.js';
import { reportError } from './report-error.js';
import { type CliIo, Terminal } from './terminal.js';
import { usbCommands } from './usb-commands.js';

/** Every command, in the order help lists them. */
export const cliCommands: readonly CommandSpec[] = [
  ...poolCommands,
  ...ctPoolCommands,
  ...desktopCommands,
  ...connectCommands,
  ...usbCommands,
  ...devClusterCommands,
  ...brokerCommands,
];

/** The package version, from the package's own package.json, found by name wherever the bundler put this code. */
export function readCliVersion(): string {
  const path = createRequire(import.meta.url).resolve('@corral/vdi/package.json');
  const manifest = JSON.parse(readFileSync(path, 'utf8')) as {
    version?: string;
  };
  return manifest.version ?? 'unknown';
}

// Before the command line is parsed, an error is still reported as JSON when JSON was asked for.
function asksForJson(argv: readonly string[]): boolean {
  return argv.some(
    (token, index) =>
      token === '--output=json' ||
      token === '-ojson' ||
      ((token === '-o' || token === '--output') && argv[index + 1] === 'json'),
  );
}

/**
 * Runs one command line of the CLI and resolves with its exit code: 0 on success, 1 when the command failed,
 * 2 when the command line is wrong. Output goes to `io.stdout`; errors, notices and progress to `io.stderr`.
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  let terminal = new Terminal(io, { json: asksForJson(argv) });
  const verbose = argv.includes('--verbose');
  let words: readonly string[] = [];
  try {
    const line = parseCommandLine(argv, cliCommands);
    if (line.kind === 'version') {
      terminal.print(readCliVersion());
      return 0;
    }
    if (line.kind === 'help') {
      terminal.print(
        line.command ? renderCommandHelp(line.command) : renderOverview(cliCommands, line.group),
      );
      return 0;
    }
    terminal = new Terminal(io, { json: line.flags.output === 'json' });
    words = line.command.words;
    const flags = line.flags;
    let session: ClusterSession | undefined;
    const input: CommandInput = {
      args: line.args,
      flags,
      terminal,
      env: io.env,
      async cluster() {
        // Loaded on demand: help, usage errors and local commands start without the Kubernetes client.
        const { openClusterSession } = await import('./cluster-session.js');
        session ??= openClusterSession(
          {
            kubeconfig: flags.kubeconfig as string | undefined,
            context: flags.context as string | undefined,
            namespace: flags.namespace as string | undefined,
          },
          io.env,
        );
        return session;
      },
    };
    return (await line.command.run(input)) ?? 0;
  } catch (error) {
    return reportError(error, terminal, { verbose, hint: cliHintFor(error, words) });
  }
}
