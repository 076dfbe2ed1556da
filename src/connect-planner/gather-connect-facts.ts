import type { VirtualMachine, VirtualMachineInstance } from '../kubevirt-types.js';
import { rdpPort, type TcpProbeResult, type VmConnectFacts } from './plan-connect.js';
import { probeTcp } from './probe-tcp.js';

/** Options of {@link gatherVmConnectFacts}. @category connect */
export interface GatherVmConnectFactsOptions {
  /** The member's namespace. */
  namespace: string;
  /** The member's VM, as just read. */
  vm: VirtualMachine;
  /** Its running VMI, as just read. */
  vmi: VirtualMachineInstance;
  /** How long the RDP probe waits, in milliseconds (default 1500). */
  probeTimeoutMs?: number;
  /** Cancels the probe. */
  signal?: AbortSignal;
}

/**
 * Reads what {@link planConnect} needs about a VM member: the VMI's IP address
 * (`status.interfaces[0].ipAddress`), whether the VM has a graphics device and a serial console (read from the
 * running VMI's devices, or the VM template's when the VMI shows none), and whether TCP 3389 at that address
 * answers from this machine, probed now.
 *
 * @throws the signal's reason when it is aborted during the probe.
 * @category connect
 */
export async function gatherVmConnectFacts(options: GatherVmConnectFactsOptions): Promise<VmConnectFacts> {
  const { namespace, vm, vmi, probeTimeoutMs, signal } = options;
  // the running instance's devices are what a console can reach; a template change waits for a restart
  const devices = vmi.spec?.domain?.devices ?? vm.spec.template?.spec?.domain?.devices;
  const address = vmi.status?.interfaces?.[0]?.ipAddress;
  let rdpProbe: TcpProbeResult | undefined;
  if (address) {
    rdpProbe = await probeTcp(address, rdpPort, {
      ...(probeTimeoutMs === undefined ? {} : { timeoutMs: probeTimeoutMs }),
      ...(signal ? { signal } : {}),
    });
  }
  return {
    kind: 'vm',
    namespace,
    vm: vm.metadata.name ?? '',
    ...(rdpProbe ? { rdpProbe } : {}),
    graphicsDevice: devices?.autoattachGraphicsDevice !== false,
    serialConsole: devices?.autoattachSerialConsole !== false,
  };
}
