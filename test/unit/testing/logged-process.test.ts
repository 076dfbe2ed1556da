import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { startLoggedProcess } from '../../../src/testing/logged-process.js';
import { waitFor } from '../../../src/testing/wait-for.js';

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

// A failed kube-apiserver start closed stdout first and went on writing to stderr; a plain script crashed on it.
it('keeps logging a process that writes to stderr after its stdout closed, and ends the log once it exits', async () => {
  const folder = mkdtempSync(join(tmpdir(), 'corral-logged-'));
  folders.push(folder);
  const logPath = join(folder, 'process.log');
  const child = startLoggedProcess(
    'sh',
    ['-c', 'echo first; exec 1>&-; sleep 0.2; echo "late on stderr" >&2'],
    logPath,
  );
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  expect(code).toBe(0);
  // the log is written asynchronously: wait for the line after the close, then for nothing more
  const logged = await waitFor(() => readFileSync(logPath, 'utf8'), {
    describe: 'the late stderr line in the log',
    until: (text) => text.includes('late on stderr'),
  });
  expect(logged).toBe('first\nlate on stderr\n');
});
