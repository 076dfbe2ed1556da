import { afterEach, describe, expect, it } from 'vitest';
import { type LocalProcess, startLocalProcess } from '../../../src/testing/node-agent/local-process.js';
import { waitFor } from '../../../src/testing/wait-for.js';

const started: LocalProcess[] = [];

function startShell(): { shell: LocalProcess; printed: () => string } {
  const shell = startLocalProcess(['sh'], {
    cwd: process.cwd(),
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', PS1: '$ ' },
    tty: true,
    endGroupOnExit: true,
  });
  started.push(shell);
  let text = '';
  shell.on('output', (_stream: string, chunk: Buffer) => {
    text += chunk.toString('utf8');
  });
  return { shell, printed: () => text };
}

afterEach(async () => {
  for (const shell of started.splice(0)) {
    shell.kill('SIGKILL');
    await shell.exited;
  }
});

describe('a local process under a pseudo-terminal', () => {
  it('applies a resize before input that arrives after it, as the resize channel and stdin arrived', async () => {
    const { shell, printed } = startShell();
    // Quotes split the markers so that the terminal's echo of the command line never matches them.
    shell.write(Buffer.from('echo "rea""dy"\n'));
    await waitFor(async () => printed(), {
      describe: 'the shell to start',
      until: (text) => text.includes('ready'),
    });
    for (const [cols, rows] of [
      [132, 40],
      [90, 31],
      [201, 67],
    ] as const) {
      shell.resize({ Width: cols, Height: rows });
      shell.write(Buffer.from(`stty size; echo "mea""sured-${cols}"\n`));
      const answer = await waitFor(async () => printed(), {
        describe: `the shell to report its size after the resize to ${cols}x${rows}`,
        until: (text) => text.includes(`measured-${cols}`),
      });
      const reported = answer.match(new RegExp(`(\\d+ \\d+)\\r?\\nmeasured-${cols}`))?.[1];
      expect(reported).toBe(`${rows} ${cols}`);
    }
  });
});
