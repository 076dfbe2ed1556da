import { describe, expect, it } from 'vitest';
import { planLaunch } from '../../../src/connect-planner/launch-plan.js';
import type { ConnectOption } from '../../../src/connect-planner/plan-connect.js';

describe('planLaunch', () => {
  it.each<[ConnectOption, string[]]>([
    [{ protocol: 'rdp', host: '10.244.1.17', port: 3389 }, ['xfreerdp', '/v:10.244.1.17']],
    [{ protocol: 'rdp', host: 'fd00::5', port: 3389 }, ['xfreerdp', '/v:[fd00::5]']],
    [
      { protocol: 'vnc', namespace: 'corral-vms', vm: 'devpool-1' },
      ['virtctl', 'vnc', 'devpool-1', '-n', 'corral-vms'],
    ],
    [
      { protocol: 'serial', namespace: 'corral-vms', vm: 'devpool-1' },
      ['virtctl', 'console', 'devpool-1', '-n', 'corral-vms'],
    ],
    [
      { protocol: 'terminal', namespace: 'corral-cts', pod: 'ctpool-1-0', shell: '/bin/zsh' },
      ['kubectl', 'exec', '-it', '-n', 'corral-cts', 'ctpool-1-0', '--', '/bin/zsh'],
    ],
  ])('runs %j as %j', (option, argv) => {
    expect(planLaunch(option)).toEqual({ protocol: option.protocol, argv });
  });

  it('keeps a name with shell characters as one argument, since no shell reads it', () => {
    const plan = planLaunch({ protocol: 'vnc', namespace: 'ns', vm: 'a;rm -rf ~' });
    expect(plan.argv[2]).toBe('a;rm -rf ~');
  });
});
