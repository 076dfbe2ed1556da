import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const resolveHook = fileURLToPath(new URL('./transform-ts.ts', import.meta.url));

/**
 * Starts a TypeScript file as a process of its own, for a test to kill, with `config` as JSON on its command line;
 * each line it writes is parsed as JSON into `lines`.
 */
export function startTsProcess<Line>(entry: string, config: unknown, lines: Line[]): ChildProcess {
  const child = spawn(process.execPath, ['--import', resolveHook, entry, JSON.stringify(config)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) =>
    lines.push(JSON.parse(line) as Line),
  );
  return child;
}
