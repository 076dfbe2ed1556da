import { VdiError } from '../errors.js';

/** A command line the CLI cannot run as typed: exit code 2, with a pointer to the command's help. */
export class UsageError extends VdiError {
  /** The command's words, for the help hint; empty for the top level. */
  readonly command: readonly string[];

  constructor(message: string, command: readonly string[]) {
    super('INVALID_INPUT', message, { details: { usage: true } });
    this.command = command;
  }
}

/** Whether `error` is a {@link UsageError}. */
export function isUsageError(error: unknown): error is UsageError {
  return error instanceof UsageError;
}
