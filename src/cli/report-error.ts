import { isVdiError } from '../errors.js';
import type { Terminal } from './terminal.js';
import { isUsageError } from './usage-error.js';

/** Exit code of a command that failed. */
export const failureExitCode = 1;
/** Exit code of a command line that could not be run as typed. */
export const usageExitCode = 2;

function causeLines(error: unknown): string[] {
  const lines: string[] = [];
  const seen = new Set<unknown>();
  for (let cause = (error as { cause?: unknown }).cause; cause !== undefined && !seen.has(cause); ) {
    seen.add(cause);
    const text = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
    lines.push(`  caused by: ${text.replaceAll('\n', '\n    ')}`);
    cause = (cause as { cause?: unknown }).cause;
  }
  return lines;
}

/**
 * Writes a failure to stderr as `error: <message>` (later lines of a long message indented below it) and, with
 * `-o json`, as `{"error": {…}}` on stdout; `--verbose` adds the code and the causes. Returns the exit code.
 */
export function reportError(
  error: unknown,
  terminal: Terminal,
  options: { verbose: boolean; hint?: string | undefined },
): number {
  const vdiError = isVdiError(error) ? error : undefined;
  const message = error instanceof Error ? error.message : String(error);
  const [first = '', ...rest] = (vdiError ? message : `unexpected failure: ${message}`).split('\n');
  terminal.error(options.hint === undefined ? first : `${first} ${options.hint}`);
  for (const line of rest) terminal.note(`  ${line}`);
  if (isUsageError(error)) {
    const words = error.command.length === 0 ? '' : ` ${error.command.join(' ')}`;
    terminal.note(`Run "corral-vdi${words} --help" to see how it is used.`);
  } else if (options.verbose) {
    terminal.note(`  code: ${vdiError?.code ?? 'INTERNAL'}`);
    for (const line of causeLines(error)) terminal.note(line);
    if (!vdiError && error instanceof Error && error.stack) terminal.note(error.stack);
  } else if (!vdiError) {
    terminal.note('Run it again with --verbose to see where it failed.');
  }
  if (terminal.json) {
    terminal.printJson({
      error: {
        code: vdiError?.code ?? 'INTERNAL',
        message,
        retryable: vdiError?.retryable ?? false,
        details: vdiError?.details ?? {},
      },
    });
  }
  return isUsageError(error) ? usageExitCode : failureExitCode;
}
