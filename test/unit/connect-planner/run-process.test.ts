import { chmodSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isVdiError } from '../../../src/errors.js';
import { findExecutable, type OutputStream, runProcess } from '../../../src/launch/run-process.js';
import { createFakeCommands, type FakeCommands, fakeBehaviours } from './fake-commands.js';

// The scripts here stand in for virtctl (which cannot be installed where these tests run); see fake-commands.ts.
let fakes: FakeCommands;
beforeEach(() => {
  fakes = createFakeCommands();
  fakes.usePath('first');
});
afterEach(() => fakes.remove());

function collect(): {
  lines: Array<[OutputStream, string]>;
  onOutput: (line: string, stream: OutputStream) => void;
} {
  const lines: Array<[OutputStream, string]> = [];
  return { lines, onOutput: (line, stream) => lines.push([stream, line]) };
}

function untilLine(lines: Array<[OutputStream, string]>, text: string): Promise<void> {
  return new Promise((resolve) => {
    const check = () => (lines.some(([, line]) => line === text) ? resolve() : setImmediate(check));
    check();
  });
}

describe('runProcess', () => {
  it('passes every argument as is, without a shell, and the exit code through', async () => {
    fakes.install('virtctl', fakeBehaviours.exits);
    const { lines, onOutput } = collect();
    const argv = ['virtctl', 'usbredir', '1050:0407', 'vm; rm -rf ~', '-n', '$HOME'] as const;
    const exit = await runProcess(argv, { stdio: 'pipe', neededFor: 'in a test', onOutput });
    expect(fakes.argvOf('virtctl')).toEqual(['usbredir', '1050:0407', 'vm; rm -rf ~', '-n', '$HOME']);
    expect(exit).toEqual({ exitCode: 3, signal: null });
    expect(lines.filter(([stream]) => stream === 'stdout').map(([, line]) => line)).toEqual([
      'attaching usbredir to 1050:0407',
      'giving up',
    ]);
    expect(lines.filter(([stream]) => stream === 'stderr').map(([, line]) => line)).toEqual([
      'usbredirect: no such device',
    ]);
  });

  it('asks the program to stop with SIGINT when the signal aborts, and reports that it did', async () => {
    fakes.install('virtctl', fakeBehaviours.interruptible);
    const { lines, onOutput } = collect();
    const controller = new AbortController();
    const running = runProcess(['virtctl', 'usbredir'], {
      stdio: 'pipe',
      neededFor: 'in a test',
      onOutput,
      signal: controller.signal,
    });
    await untilLine(lines, 'ready');
    controller.abort();
    expect(await running).toEqual({ exitCode: 130, signal: null, stoppedBy: 'abort' });
    expect(lines.at(-1)).toEqual(['stdout', 'got SIGINT, detaching']);
  });

  it('follows up with SIGTERM when the program ignores SIGINT past the grace period', async () => {
    fakes.install('virtctl', fakeBehaviours.stubborn);
    const { lines, onOutput } = collect();
    const controller = new AbortController();
    const running = runProcess(['virtctl'], {
      stdio: 'pipe',
      neededFor: 'in a test',
      onOutput,
      signal: controller.signal,
      stopGraceMs: 100,
    });
    await untilLine(lines, 'ready');
    controller.abort();
    expect(await running).toEqual({ exitCode: 143, signal: null, stoppedBy: 'abort' });
    expect(lines.map(([, line]) => line)).toEqual(['ready', 'ignoring SIGINT', 'got SIGTERM']);
  });

  it('passes SIGINT to this process on to the program while it runs', async () => {
    fakes.install('virtctl', fakeBehaviours.interruptible);
    const { lines, onOutput } = collect();
    const running = runProcess(['virtctl'], { stdio: 'pipe', neededFor: 'in a test', onOutput });
    await untilLine(lines, 'ready');
    process.emit('SIGINT', 'SIGINT');
    expect(await running).toEqual({ exitCode: 130, signal: null, stoppedBy: 'sigint' });
    expect(process.listenerCount('SIGINT')).toBe(0);
  });

  it('reports a program killed by a signal with 128 plus its number', async () => {
    fakes.install('virtctl', ['kill -KILL $$']);
    expect(await runProcess(['virtctl'], { stdio: 'ignore', neededFor: 'in a test' })).toEqual({
      exitCode: 137,
      signal: 'SIGKILL',
    });
  });

  it('starts nothing when the signal was aborted before the call', async () => {
    fakes.install('virtctl', fakeBehaviours.exits);
    const error = await runProcess(['virtctl', 'x'], {
      stdio: 'ignore',
      neededFor: 'in a test',
      signal: AbortSignal.abort(),
    }).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ name: 'AbortError' });
    expect(() => fakes.argvOf('virtctl')).toThrow();
  });

  it('reports a program that is not on the PATH as COMMAND_NOT_FOUND with how to install it', async () => {
    fakes.usePath('only');
    const error = await runProcess(['virtctl', 'vnc'], {
      stdio: 'ignore',
      neededFor: 'to open the VNC console',
    }).catch((caught: unknown) => caught);
    expect(isVdiError(error, 'COMMAND_NOT_FOUND')).toBe(true);
    expect((error as Error).message).toMatch(
      /^virtctl is not on your PATH; it is needed to open the VNC console\./,
    );
    expect((error as Error).message).toContain('kubectl krew install virt');
  });
});

describe('findExecutable', () => {
  it('finds an executable on the PATH and skips a file that is not executable', async () => {
    fakes.install('virtctl', fakeBehaviours.exits);
    expect(await findExecutable('virtctl')).toBe(`${fakes.dir}/virtctl`);
    fakes.install('usbredirect', []);
    chmodSync(`${fakes.dir}/usbredirect`, 0o644);
    fakes.usePath('only');
    expect(await findExecutable('usbredirect')).toBeUndefined();
  });
});
