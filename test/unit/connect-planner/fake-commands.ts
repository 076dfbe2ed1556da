import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Small shell scripts that stand in for virtctl, usbredirect and xfreerdp, which cannot be installed where these
 * tests run. Each records its arguments next to itself and then behaves as the test asks, so the runner is
 * tested with a real child process: real argv, real pipes, real exit codes and real signals.
 */
export const fakeBehaviours = {
  /** Prints to both streams and exits with code 3. */
  exits: [
    'echo "attaching $1 to $2"',
    'echo "usbredirect: no such device" >&2',
    'echo "giving up"',
    'exit 3',
  ],
  /** Runs until SIGINT, then says so and exits with 130. */
  interruptible: [
    'trap \'echo "got SIGINT, detaching"; kill $pid 2>/dev/null; exit 130\' INT',
    'sleep 30 & pid=$!',
    'echo ready',
    'wait $pid',
  ],
  /** Ignores SIGINT and ends only on SIGTERM, with 143. */
  stubborn: [
    'trap \'echo "ignoring SIGINT"\' INT',
    'trap \'echo "got SIGTERM"; kill $pid 2>/dev/null; exit 143\' TERM',
    'sleep 30 & pid=$!',
    'echo ready',
    'while kill -0 $pid 2>/dev/null; do wait $pid; done',
  ],
} as const;

export interface FakeCommands {
  /** The folder that holds the scripts. */
  dir: string;
  /** Writes an executable script `name` that behaves as `behaviour` says. */
  install(name: string, behaviour: readonly string[]): void;
  /** Removes the script `name`. */
  uninstall(name: string): void;
  /** The arguments the script `name` was last started with. */
  argvOf(name: string): string[];
  /** Puts only this folder on the PATH, or this folder before the system's (for `sleep`). */
  usePath(mode: 'only' | 'first'): void;
  /** Restores the PATH and removes the folder. */
  remove(): void;
}

export function createFakeCommands(): FakeCommands {
  const dir = mkdtempSync(join(tmpdir(), 'corral-vdi-fake-commands-'));
  const originalPath = process.env.PATH;
  return {
    dir,
    install(name, behaviour) {
      const path = join(dir, name);
      const script = ['#!/bin/sh', `printf '%s\\n' "$@" > '${path}.argv'`, ...behaviour, ''].join('\n');
      writeFileSync(path, script);
      chmodSync(path, 0o755);
    },
    uninstall(name) {
      rmSync(join(dir, name));
    },
    argvOf(name) {
      return readFileSync(join(dir, `${name}.argv`), 'utf8')
        .split('\n')
        .slice(0, -1);
    },
    usePath(mode) {
      process.env.PATH = mode === 'only' ? dir : `${dir}:${originalPath ?? ''}`;
    },
    remove() {
      process.env.PATH = originalPath;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
