import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { planLaunch } from '../../../src/connect-planner/launch-plan.js';
import { isVdiError } from '../../../src/errors.js';
import { runLaunchPlan } from '../../../src/launch/run-launch-plan.js';
import { createFakeCommands, type FakeCommands, fakeBehaviours } from './fake-commands.js';

// xfreerdp and virtctl cannot be installed where these tests run: small scripts stand in for them.
let fakes: FakeCommands;
beforeEach(() => {
  fakes = createFakeCommands();
  fakes.usePath('first');
});
afterEach(() => fakes.remove());

describe('runLaunchPlan', () => {
  it('starts the planned RDP client with the guest address and passes its exit code through', async () => {
    fakes.install('xfreerdp', ['exit 7']);
    const plan = planLaunch({ protocol: 'rdp', host: '10.244.1.17', port: 3389 });
    expect(await runLaunchPlan(plan, { stdio: 'ignore' })).toEqual({ exitCode: 7, signal: null });
    expect(fakes.argvOf('xfreerdp')).toEqual(['/v:10.244.1.17']);
  });

  it('starts virtctl vnc for a VNC plan', async () => {
    fakes.install('virtctl', ['exit 0']);
    const plan = planLaunch({ protocol: 'vnc', namespace: 'corral-vms', vm: 'devpool-1' });
    expect((await runLaunchPlan(plan, { stdio: 'ignore' })).exitCode).toBe(0);
    expect(fakes.argvOf('virtctl')).toEqual(['vnc', 'devpool-1', '-n', 'corral-vms']);
  });

  it('closes the console when the signal aborts', async () => {
    fakes.install('virtctl', fakeBehaviours.interruptible);
    const controller = new AbortController();
    const plan = planLaunch({ protocol: 'serial', namespace: 'corral-vms', vm: 'devpool-1' });
    const running = runLaunchPlan(plan, { stdio: 'ignore', signal: controller.signal });
    // the script writes its argv before it waits, so once that file is there it is running
    await new Promise<void>((resolve) => {
      const check = () => {
        try {
          fakes.argvOf('virtctl');
          resolve();
        } catch {
          setImmediate(check);
        }
      };
      check();
    });
    controller.abort();
    expect(await running).toMatchObject({ exitCode: 130, stoppedBy: 'abort' });
  });

  it.each([
    ['xfreerdp', planLaunch({ protocol: 'rdp', host: '10.0.0.1', port: 3389 }), 'apt install freerdp2-x11'],
    ['virtctl', planLaunch({ protocol: 'serial', namespace: 'ns', vm: 'vm' }), 'KubeVirt release page'],
    [
      'kubectl',
      planLaunch({ protocol: 'terminal', namespace: 'ns', pod: 'pod', shell: '/bin/sh' }),
      'Install kubectl',
    ],
  ])('reports a missing %s with an install hint', async (program, plan, hint) => {
    fakes.usePath('only');
    const error = await runLaunchPlan(plan, { stdio: 'ignore' }).catch((caught: unknown) => caught);
    expect(isVdiError(error, 'COMMAND_NOT_FOUND')).toBe(true);
    expect((error as Error).message).toContain(`${program} is not on your PATH`);
    expect((error as Error).message).toContain(hint);
  });
});
