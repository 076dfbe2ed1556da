import type { ConnectProtocol } from '../connect-facts.js';
import type { ConnectOption } from './plan-connect.js';

/**
 * The command a person on this machine runs to open one console, as an argv array: no shell is involved, so
 * nothing in it is ever interpreted.
 *
 * @category connect
 */
export interface LaunchPlan {
  /** The console it opens. */
  protocol: ConnectProtocol;
  /** The program first, then its arguments. */
  argv: [program: string, ...args: string[]];
}

/**
 * The local command that opens `option`:
 *
 * - RDP: `xfreerdp /v:<ip>` (FreeRDP);
 * - VNC: `virtctl vnc <vm> -n <ns>`;
 * - serial: `virtctl console <vm> -n <ns>`;
 * - terminal: `kubectl exec -it -n <ns> <pod> -- <shell>`, the pool's shell.
 *
 * @example
 * ```ts
 * planLaunch({ protocol: 'vnc', namespace: 'corral-vms', vm: 'devpool-1' }).argv;
 * // ['virtctl', 'vnc', 'devpool-1', '-n', 'corral-vms']
 * ```
 * @category connect
 */
export function planLaunch(option: ConnectOption): LaunchPlan {
  switch (option.protocol) {
    case 'rdp':
      // FreeRDP reads a bare IPv6 address as host:port, so it goes in brackets
      return {
        protocol: 'rdp',
        argv: ['xfreerdp', `/v:${option.host.includes(':') ? `[${option.host}]` : option.host}`],
      };
    case 'vnc':
      return { protocol: 'vnc', argv: ['virtctl', 'vnc', option.vm, '-n', option.namespace] };
    case 'serial':
      return { protocol: 'serial', argv: ['virtctl', 'console', option.vm, '-n', option.namespace] };
    case 'terminal':
      return {
        protocol: 'terminal',
        argv: ['kubectl', 'exec', '-it', '-n', option.namespace, option.pod, '--', option.shell],
      };
  }
}
