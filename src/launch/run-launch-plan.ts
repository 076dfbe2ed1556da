import type { ConnectProtocol } from '../connect-facts.js';
import type { LaunchPlan } from '../connect-planner/launch-plan.js';
import { type ProcessExit, runProcess } from './run-process.js';

/** Options of {@link runLaunchPlan}. @category connect */
export interface RunLaunchPlanOptions {
  /** `inherit` (default) gives the console this terminal; `ignore` runs it detached from the terminal's streams. */
  stdio?: 'inherit' | 'ignore';
  /** Aborting asks the console to close: SIGINT, then SIGTERM after a grace period. */
  signal?: AbortSignal;
}

const purposeByProtocol: Readonly<Record<ConnectProtocol, string>> = {
  rdp: 'to open the RDP console',
  vnc: 'to open the VNC console',
  serial: 'to open the serial console',
  terminal: 'to open a shell in the container',
};

/**
 * Runs a {@link LaunchPlan} on this machine, without a shell, and resolves with the program's exit code when the
 * console closes. While it runs, SIGINT to this process is passed on to the console rather than ending this
 * process first.
 *
 * @example
 * ```ts
 * const result = await vdi.connect({ member: 'devpool-1', identity: 'alice' });
 * const { exitCode } = await runLaunchPlan(result.launches[0]);
 * process.exitCode = exitCode;
 * ```
 * @throws {@link VdiError} `COMMAND_NOT_FOUND` when the plan's program is not on the PATH; the message says how
 *   to install it (`apt install freerdp2-x11` for xfreerdp, the KubeVirt release page for virtctl).
 * @category connect
 */
export function runLaunchPlan(plan: LaunchPlan, options: RunLaunchPlanOptions = {}): Promise<ProcessExit> {
  return runProcess(plan.argv, {
    stdio: options.stdio ?? 'inherit',
    neededFor: purposeByProtocol[plan.protocol],
    ...(options.signal ? { signal: options.signal } : {}),
  });
}
