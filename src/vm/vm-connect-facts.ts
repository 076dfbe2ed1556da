import { rdpPort, type TcpProbeResult, type VmConnectFacts } from '../connect-facts.js';
import type { GatherConnectFactsOptions, MemberFacts } from '../desktop-backend.js';
import { VdiError } from '../errors.js';
import { probeTcp } from '../probe-tcp.js';

/**
 * What connect planning needs about a running VM member: its consoles (from {@link MemberFacts}, so the running
 * instance's devices), and whether TCP 3389 at its address answers from this machine, probed now.
 *
 * @throws `VdiError` `DESKTOP_STOPPED` when the member does not run; the signal's reason when it is aborted
 *   during the probe.
 */
export async function gatherVmConnectFacts(
  facts: MemberFacts,
  options: GatherConnectFactsOptions = {},
): Promise<VmConnectFacts> {
  const { namespace, member, desktopId } = facts;
  if (facts.power !== 'running') {
    throw new VdiError(
      'DESKTOP_STOPPED',
      `${desktopId} is not running; start it first, then connect to it.`,
      {
        details: { desktop: desktopId, phase: facts.phase },
      },
    );
  }
  let rdpProbe: TcpProbeResult | undefined;
  if (facts.address) {
    rdpProbe = await probeTcp(facts.address, rdpPort, {
      ...(options.probeTimeoutMs === undefined ? {} : { timeoutMs: options.probeTimeoutMs }),
      ...(options.signal ? { signal: options.signal } : {}),
    });
  }
  return {
    kind: 'vm',
    namespace,
    vm: member,
    ...(rdpProbe ? { rdpProbe } : {}),
    graphicsDevice: facts.consoles.includes('vnc'),
    serialConsole: facts.consoles.includes('serial'),
  };
}
