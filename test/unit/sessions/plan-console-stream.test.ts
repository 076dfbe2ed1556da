import { describe, expect, it } from 'vitest';
import type { MemberConsole, MemberPower } from '../../../src/desktop-backend.js';
import { type ConsoleStreamFacts, planConsoleStream } from '../../../src/sessions/plan-console-stream.js';

const vm = (power: MemberPower, consoles: MemberConsole[] = ['vnc', 'serial']): ConsoleStreamFacts => ({
  desktopId: 'vm/corral-vms/devpool-1',
  kind: 'vm',
  power,
  consoles,
});

describe('planConsoleStream', () => {
  it.each([
    ['vnc', vm('running'), 'open'],
    ['serial', vm('running'), 'open'],
    ['terminal', vm('running'), 'UNSUPPORTED_BACKEND'],
    ['terminal', vm('stopped'), 'UNSUPPORTED_BACKEND'],
    ['vnc', vm('stopped'), 'DESKTOP_STOPPED'],
    ['vnc', vm('starting'), 'DESKTOP_STOPPED'],
    ['serial', vm('stopping'), 'DESKTOP_STOPPED'],
    ['vnc', vm('unknown'), 'DESKTOP_STOPPED'],
    ['vnc', vm('running', ['serial']), 'UNSUPPORTED_BACKEND'],
    ['serial', vm('running', ['vnc']), 'UNSUPPORTED_BACKEND'],
    ['terminal', { ...vm('running', ['terminal']), kind: 'ct' as const }, 'open'],
    ['vnc', { ...vm('running', ['terminal']), kind: 'ct' as const }, 'UNSUPPORTED_BACKEND'],
  ] as const)('%s of %o: %s', (console, facts, expected) => {
    const plan = planConsoleStream(facts, console);
    expect(plan.kind === 'open' ? 'open' : plan.code).toBe(expected);
  });

  it('says what to do in each refusal', () => {
    expect(planConsoleStream(vm('stopped'), 'vnc')).toMatchObject({
      message: expect.stringContaining('start the desktop first'),
    });
    expect(planConsoleStream(vm('running'), 'terminal')).toMatchObject({
      message: 'vm/corral-vms/devpool-1 has no terminal console: a VM desktop offers vnc and serial.',
    });
    expect(planConsoleStream(vm('running', ['serial']), 'vnc')).toMatchObject({
      message: expect.stringContaining('open its serial console'),
    });
  });
});
