// What connect planning knows of a member, as its backend reports it: the seam's own words.
/**
 * A console a desktop can be reached through.
 *
 * - `rdp`: Remote Desktop, straight to the guest's TCP port 3389.
 * - `vnc`: KubeVirt's VNC console of a VM's graphics device, through the apiserver.
 * - `serial`: KubeVirt's serial console of a VM, through the apiserver.
 * - `terminal`: a shell in a CT member's container.
 *
 * @category connect
 */
export type ConnectProtocol = 'rdp' | 'vnc' | 'serial' | 'terminal';

/** The port RDP listens on in the guest. @category connect */
export const rdpPort = 3389;

/**
 * How a TCP connect attempt from this machine ended.
 *
 * - `answered`: the handshake completed; something listens there.
 * - `refused`: the host answered with a reset; nothing listens on the port.
 * - `timed-out`: nothing came back within `timeoutMs`.
 * - `unreachable`: the network gave up first (`errorCode` names how, such as `EHOSTUNREACH`).
 *
 * @category connect
 */
export interface TcpProbeResult {
  /** The address probed. */
  host: string;
  /** The port probed. */
  port: number;
  /** How the attempt ended. */
  outcome: 'answered' | 'refused' | 'timed-out' | 'unreachable';
  /** The time the probe allowed, in milliseconds. */
  timeoutMs: number;
  /** The socket error code when the outcome is `unreachable`. */
  errorCode?: string;
}

/**
 * What {@link planConnect} knows about a VM member, read fresh for one connect.
 *
 * @category connect
 */
export interface VmConnectFacts {
  /** A KubeVirt VM member. */
  kind: 'vm';
  /** The member's namespace. */
  namespace: string;
  /** The VM's name, which is also its VMI's. */
  vm: string;
  /** The probe of the VMI's address on port 3389; absent when the VMI has no IP address yet. */
  rdpProbe?: TcpProbeResult;
  /** Whether the VM has a graphics device (`autoattachGraphicsDevice` is not `false`). */
  graphicsDevice: boolean;
  /** Whether the VM has a serial console (`autoattachSerialConsole` is not `false`). */
  serialConsole: boolean;
}

/**
 * What {@link planConnect} knows about a CT member: where its container runs.
 *
 * @category connect
 */
export interface CtConnectFacts {
  /** A container member. */
  kind: 'ct';
  /** The member's namespace. */
  namespace: string;
  /** The member's pod. */
  pod: string;
  /** The shell a terminal runs, as its pool's spec says. @defaultValue `'/bin/sh'` */
  shell?: string;
}

/** The shell a container desktop's terminal runs when its pool names none. @category connect */
export const defaultTerminalShell = '/bin/sh';

/** The facts of one connect. @category connect */
export type ConnectFacts = VmConnectFacts | CtConnectFacts;
