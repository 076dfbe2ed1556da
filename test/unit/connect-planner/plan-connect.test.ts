import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ConnectProtocol, TcpProbeResult, VmConnectFacts } from '../../../src/connect-facts.js';
import { type ConnectPlan, formatHostPort, planConnect } from '../../../src/connect-planner/plan-connect.js';

const host = '10.244.1.17';
const probe = (outcome: TcpProbeResult['outcome'], extra: Partial<TcpProbeResult> = {}): TcpProbeResult => ({
  host,
  port: 3389,
  outcome,
  timeoutMs: 1500,
  ...extra,
});
const rdpStates = {
  'no IP address': undefined,
  answered: probe('answered'),
  refused: probe('refused'),
  'timed out': probe('timed-out'),
  unreachable: probe('unreachable', { errorCode: 'EHOSTUNREACH' }),
} as const;
type RdpState = keyof typeof rdpStates;

function vmFacts(rdp: RdpState, graphicsDevice: boolean, serialConsole: boolean): VmConnectFacts {
  const rdpProbe = rdpStates[rdp];
  return {
    kind: 'vm',
    namespace: 'corral-vms',
    vm: 'devpool-1',
    ...(rdpProbe ? { rdpProbe } : {}),
    graphicsDevice,
    serialConsole,
  };
}

function offered(plan: ConnectPlan): ConnectProtocol[] {
  return plan.kind === 'connect' ? [plan.target, ...plan.fallbacks].map((option) => option.protocol) : [];
}

const rdpReasons: Record<RdpState, string> = {
  'no IP address': 'the VM has no IP address yet',
  answered: '',
  refused: 'TCP 3389 did not answer at 10.244.1.17:3389 from this machine (connection refused)',
  'timed out': 'TCP 3389 did not answer at 10.244.1.17:3389 from this machine (no answer within 1500 ms)',
  unreachable: 'TCP 3389 did not answer at 10.244.1.17:3389 from this machine (EHOSTUNREACH)',
};
const vncReason = 'the VM has no graphics device (autoattachGraphicsDevice is false)';
const serialReason = 'the VM has no serial console (autoattachSerialConsole is false)';
const terminalReason = 'only a CT member offers a container terminal';

// Every combination of the three VM facts, with the consoles it must offer, best first.
const combinations: Array<[RdpState, boolean, boolean, ConnectProtocol[]]> = [];
for (const rdp of Object.keys(rdpStates) as RdpState[]) {
  for (const graphics of [true, false]) {
    for (const serial of [true, false]) {
      const expected: ConnectProtocol[] = [];
      if (rdp === 'answered') expected.push('rdp');
      if (graphics) expected.push('vnc');
      if (serial) expected.push('serial');
      combinations.push([rdp, graphics, serial, expected]);
    }
  }
}

describe('planConnect for a VM member', () => {
  it('covers all twenty combinations of RDP state, graphics device and serial console', () => {
    expect(combinations).toHaveLength(20);
  });

  it.each(combinations)(
    'with RDP %s, graphics %s and serial %s offers %j',
    (rdp, graphics, serial, expected) => {
      const plan = planConnect(vmFacts(rdp, graphics, serial));
      expect(offered(plan)).toEqual(expected);
      const skipped = Object.fromEntries(plan.skipped.map((entry) => [entry.protocol, entry.reason]));
      expect(skipped).toEqual({
        ...(rdp === 'answered' ? {} : { rdp: rdpReasons[rdp] }),
        ...(graphics ? {} : { vnc: vncReason }),
        ...(serial ? {} : { serial: serialReason }),
        terminal: terminalReason,
      });
      expect(plan.kind).toBe(expected.length === 0 ? 'no-target' : 'connect');
    },
  );

  it('matches the walkthrough: VNC first, the serial console after it, RDP skipped because 3389 was refused', () => {
    expect(planConnect(vmFacts('refused', true, true))).toEqual({
      kind: 'connect',
      target: { protocol: 'vnc', namespace: 'corral-vms', vm: 'devpool-1' },
      fallbacks: [{ protocol: 'serial', namespace: 'corral-vms', vm: 'devpool-1' }],
      skipped: [
        { protocol: 'rdp', reason: rdpReasons.refused },
        { protocol: 'terminal', reason: terminalReason },
      ],
    });
  });

  it('makes RDP the target at the probed address when 3389 answered', () => {
    const plan = planConnect(vmFacts('answered', true, true));
    expect(plan.kind === 'connect' && plan.target).toEqual({ protocol: 'rdp', host, port: 3389 });
  });

  it('falls back to the serial console alone for a VM without graphics whose RDP does not answer', () => {
    const plan = planConnect(vmFacts('refused', false, true));
    expect(plan.kind === 'connect' && plan.target).toEqual({
      protocol: 'serial',
      namespace: 'corral-vms',
      vm: 'devpool-1',
    });
    expect(plan.kind === 'connect' && plan.fallbacks).toEqual([]);
  });

  it('gives advice when a VM offers nothing, and says to wait for an address when it has none', () => {
    const noAddress = planConnect(vmFacts('no IP address', false, false));
    const refused = planConnect(vmFacts('refused', false, false));
    expect(noAddress.kind === 'no-target' && noAddress.advice).toMatch(/wait until the VM has an IP address/);
    expect(refused.kind === 'no-target' && refused.advice).toMatch(/start the RDP service in the guest/);
    expect(refused.kind === 'no-target' && refused.advice).toMatch(/autoattachGraphicsDevice: false/);
  });

  it('writes an IPv6 guest address in brackets in the RDP reason', () => {
    const plan = planConnect({
      ...vmFacts('refused', true, true),
      rdpProbe: probe('refused', { host: 'fd00::5' }),
    });
    expect(plan.skipped[0]?.reason).toBe(
      'TCP 3389 did not answer at [fd00::5]:3389 from this machine (connection refused)',
    );
  });
});

describe('planConnect for a CT member', () => {
  it('offers only the terminal and says so for every other protocol', () => {
    expect(planConnect({ kind: 'ct', namespace: 'corral-cts', pod: 'ctpool-1-0' })).toEqual({
      kind: 'connect',
      target: { protocol: 'terminal', namespace: 'corral-cts', pod: 'ctpool-1-0', shell: '/bin/sh' },
      fallbacks: [],
      skipped: ['rdp', 'vnc', 'serial'].map((protocol) => ({
        protocol,
        reason: 'a CT member offers only its terminal',
      })),
    });
  });

  it("runs the pool's shell in the terminal, /bin/sh when the facts name none", () => {
    const plan = planConnect({
      kind: 'ct',
      namespace: 'corral-cts',
      pod: 'ctpool-1-0',
      shell: '/bin/bash',
    });
    expect(plan.kind === 'connect' && plan.target).toEqual({
      protocol: 'terminal',
      namespace: 'corral-cts',
      pod: 'ctpool-1-0',
      shell: '/bin/bash',
    });
  });
});

describe('planConnect properties', () => {
  const anyProbe = fc.record({
    host: fc.ipV4(),
    port: fc.constant(3389),
    outcome: fc.constantFrom('answered', 'refused', 'timed-out', 'unreachable') as fc.Arbitrary<
      TcpProbeResult['outcome']
    >,
    timeoutMs: fc.integer({ min: 1, max: 10_000 }),
  });
  const anyVmFacts: fc.Arbitrary<VmConnectFacts> = fc
    .record({
      probe: fc.option(anyProbe, { nil: undefined }),
      graphicsDevice: fc.boolean(),
      serialConsole: fc.boolean(),
    })
    .map(({ probe: rdpProbe, graphicsDevice, serialConsole }) => ({
      kind: 'vm',
      namespace: 'ns',
      vm: 'vm-1',
      ...(rdpProbe ? { rdpProbe } : {}),
      graphicsDevice,
      serialConsole,
    }));

  it('names every protocol exactly once, as offered or as skipped with a reason', () => {
    fc.assert(
      fc.property(anyVmFacts, (facts) => {
        const plan = planConnect(facts);
        const seen = [...offered(plan), ...plan.skipped.map((entry) => entry.protocol)];
        expect([...seen].sort()).toEqual(['rdp', 'serial', 'terminal', 'vnc']);
        for (const entry of plan.skipped) expect(entry.reason.length).toBeGreaterThan(10);
      }),
    );
  });

  it('keeps the offers in the order RDP, VNC, serial', () => {
    const rank: Record<ConnectProtocol, number> = { rdp: 0, vnc: 1, serial: 2, terminal: 3 };
    fc.assert(
      fc.property(anyVmFacts, (facts) => {
        const ranks = offered(planConnect(facts)).map((protocol) => rank[protocol]);
        expect(ranks).toEqual([...ranks].sort((a, b) => a - b));
      }),
    );
  });

  it('offers RDP exactly when the probe answered, and names the probed address when it did not', () => {
    fc.assert(
      fc.property(anyVmFacts, (facts) => {
        const plan = planConnect(facts);
        expect(offered(plan).includes('rdp')).toBe(facts.rdpProbe?.outcome === 'answered');
        const rdpSkip = plan.skipped.find((entry) => entry.protocol === 'rdp');
        if (facts.rdpProbe && facts.rdpProbe.outcome !== 'answered') {
          expect(rdpSkip?.reason).toContain(formatHostPort(facts.rdpProbe.host, 3389));
        }
      }),
    );
  });
});
