import {
  type ConnectFacts,
  type ConnectProtocol,
  defaultTerminalShell,
  type TcpProbeResult,
  type VmConnectFacts,
} from '../connect-facts.js';

/**
 * One console on offer, with what it takes to reach it.
 *
 * @category connect
 */
export type ConnectOption =
  | {
      /** Remote Desktop straight to the guest. */
      protocol: 'rdp';
      /** The guest's address, as probed. */
      host: string;
      /** Always {@link rdpPort}. */
      port: number;
    }
  | {
      /** KubeVirt's VNC console. */
      protocol: 'vnc';
      /** The VM's namespace. */
      namespace: string;
      /** The VM's name. */
      vm: string;
    }
  | {
      /** KubeVirt's serial console. */
      protocol: 'serial';
      /** The VM's namespace. */
      namespace: string;
      /** The VM's name. */
      vm: string;
    }
  | {
      /** A shell in the container. */
      protocol: 'terminal';
      /** The pod's namespace. */
      namespace: string;
      /** The member's pod. */
      pod: string;
      /** The shell it runs: the pool's. */
      shell: string;
    };

/** A protocol that is not on offer, and why, in words for the person connecting. @category connect */
export interface SkippedProtocol {
  /** The protocol not on offer. */
  protocol: ConnectProtocol;
  /** Why, such as `the VM has no graphics device (autoattachGraphicsDevice is false)`. */
  reason: string;
}

/**
 * The answer of {@link planConnect}.
 *
 * - `connect`: use `target`; `fallbacks` are the other consoles, best first. Every protocol that is in neither
 *   is in `skipped`, with its reason.
 * - `no-target`: the desktop offers no console at all; `advice` says what would give it one.
 *
 * @category connect
 */
export type ConnectPlan =
  | {
      /** There is a console to connect with. */
      kind: 'connect';
      /** The best console on offer. */
      target: ConnectOption;
      /** The other consoles on offer, best first. */
      fallbacks: ConnectOption[];
      /** Every protocol not on offer, with the reason. */
      skipped: SkippedProtocol[];
    }
  | {
      /** The desktop offers no console at all. */
      kind: 'no-target';
      /** Every protocol, with the reason it is not on offer. */
      skipped: SkippedProtocol[];
      /** What would give the desktop a console. */
      advice: string;
    };

/**
 * `host:port`, with an IPv6 host in brackets.
 *
 * @example
 * ```ts
 * formatHostPort('10.244.1.17', 3389); // '10.244.1.17:3389'
 * formatHostPort('fd00::5', 3389); // '[fd00::5]:3389'
 * ```
 * @category connect
 */
export function formatHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

const ctOnlyTerminal = 'a CT member offers only its terminal';

function probeFailure(probe: TcpProbeResult): string {
  const where = `TCP ${probe.port} did not answer at ${formatHostPort(probe.host, probe.port)} from this machine`;
  switch (probe.outcome) {
    case 'refused':
      return `${where} (connection refused)`;
    case 'timed-out':
      return `${where} (no answer within ${probe.timeoutMs} ms)`;
    default:
      return `${where} (${probe.errorCode ?? 'network unreachable'})`;
  }
}

function offersOf(facts: VmConnectFacts): { offered: ConnectOption[]; skipped: SkippedProtocol[] } {
  const { namespace, vm, rdpProbe } = facts;
  const offered: ConnectOption[] = [];
  const skipped: SkippedProtocol[] = [];
  if (rdpProbe === undefined) skipped.push({ protocol: 'rdp', reason: 'the VM has no IP address yet' });
  else if (rdpProbe.outcome === 'answered')
    offered.push({ protocol: 'rdp', host: rdpProbe.host, port: rdpProbe.port });
  else skipped.push({ protocol: 'rdp', reason: probeFailure(rdpProbe) });

  if (facts.graphicsDevice) offered.push({ protocol: 'vnc', namespace, vm });
  else
    skipped.push({
      protocol: 'vnc',
      reason: 'the VM has no graphics device (autoattachGraphicsDevice is false)',
    });

  if (facts.serialConsole) offered.push({ protocol: 'serial', namespace, vm });
  else
    skipped.push({
      protocol: 'serial',
      reason: 'the VM has no serial console (autoattachSerialConsole is false)',
    });

  skipped.push({ protocol: 'terminal', reason: 'only a CT member offers a container terminal' });
  return { offered, skipped };
}

function noTargetAdvice(facts: VmConnectFacts): string {
  const rdp =
    facts.rdpProbe === undefined
      ? 'wait until the VM has an IP address and its RDP service listens on TCP 3389'
      : 'start the RDP service in the guest, or let this machine reach TCP 3389 of the guest';
  return (
    `VM ${facts.namespace}/${facts.vm} offers no console: ${rdp}; or give the VM a graphics device or a serial ` +
    'console (drop autoattachGraphicsDevice: false or autoattachSerialConsole: false from ' +
    'spec.template.spec.domain.devices) and restart it.'
  );
}

/**
 * Picks the console to connect with, and the fallbacks, from facts read for this one connect.
 *
 * A CT member offers only its terminal. A VM member offers RDP when TCP 3389 answered from this machine, then
 * VNC when it has a graphics device, then its serial console. The first offer is the target, the rest are
 * fallbacks in that order, and every other protocol is listed in `skipped` with the reason.
 *
 * @example
 * ```ts
 * const plan = planConnect({
 *   kind: 'vm', namespace: 'corral-vms', vm: 'devpool-1', graphicsDevice: true, serialConsole: true,
 *   rdpProbe: { host: '10.244.1.17', port: 3389, outcome: 'refused', timeoutMs: 1500 },
 * });
 * // plan.target: { protocol: 'vnc', namespace: 'corral-vms', vm: 'devpool-1' }
 * // plan.skipped[0].reason: 'TCP 3389 did not answer at 10.244.1.17:3389 from this machine (connection refused)'
 * ```
 * @category connect
 */
export function planConnect(facts: ConnectFacts): ConnectPlan {
  if (facts.kind === 'ct') {
    return {
      kind: 'connect',
      target: {
        protocol: 'terminal',
        namespace: facts.namespace,
        pod: facts.pod,
        shell: facts.shell ?? defaultTerminalShell,
      },
      fallbacks: [],
      skipped: (['rdp', 'vnc', 'serial'] as const).map((protocol) => ({ protocol, reason: ctOnlyTerminal })),
    };
  }
  const { offered, skipped } = offersOf(facts);
  const [target, ...fallbacks] = offered;
  if (target === undefined) return { kind: 'no-target', skipped, advice: noTargetAdvice(facts) };
  return { kind: 'connect', target, fallbacks, skipped };
}
