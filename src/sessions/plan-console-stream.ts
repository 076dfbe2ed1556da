import type { DesktopKind, MemberConsole, MemberPower } from '../desktop-backend.js';

/** What {@link planConsoleStream} needs to know of a member. @category sessions */
export interface ConsoleStreamFacts {
  desktopId: string;
  kind: DesktopKind;
  power: MemberPower;
  /** The consoles the member offers (see `MemberFacts.consoles`). */
  consoles: readonly MemberConsole[];
}

/**
 * Whether a console stream of a member may open, once the caller's access is settled:
 *
 * - `open`: it runs and offers the console.
 * - `reject`: `UNSUPPORTED_BACKEND` for a console the kind or the member does not have, `DESKTOP_STOPPED` for a
 *   member that does not run, with the message to answer.
 *
 * @category sessions
 */
export type ConsoleStreamPlan =
  | { kind: 'open' }
  | { kind: 'reject'; code: 'UNSUPPORTED_BACKEND' | 'DESKTOP_STOPPED'; message: string };

// A VM has a display and a serial line; a container only its terminal.
const consolesOfKind: Record<DesktopKind, readonly MemberConsole[]> = {
  vm: ['vnc', 'serial'],
  ct: ['terminal'],
};

/**
 * Decides whether `console` of a member opens.
 *
 * @example
 * ```ts
 * planConsoleStream({ desktopId: 'vm/corral-vms/devpool-1', kind: 'vm', power: 'stopped', consoles: ['vnc'] }, 'vnc');
 * // { kind: 'reject', code: 'DESKTOP_STOPPED', message: 'vm/corral-vms/devpool-1 is stopped; start it …' }
 * ```
 * @category sessions
 */
export function planConsoleStream(facts: ConsoleStreamFacts, console: MemberConsole): ConsoleStreamPlan {
  const { desktopId, kind, power } = facts;
  const offered = consolesOfKind[kind];
  if (!offered.includes(console)) {
    return {
      kind: 'reject',
      code: 'UNSUPPORTED_BACKEND',
      message: `${desktopId} has no ${console} console: a ${kind === 'vm' ? 'VM' : 'container'} desktop offers ${offered.join(' and ')}.`,
    };
  }
  if (power !== 'running') {
    return {
      kind: 'reject',
      code: 'DESKTOP_STOPPED',
      message: `${desktopId} is ${power === 'unknown' ? 'not running' : power}, so its ${console} console cannot open; start the desktop first and open the console once it runs.`,
    };
  }
  if (!facts.consoles.includes(console)) {
    return {
      kind: 'reject',
      code: 'UNSUPPORTED_BACKEND',
      message:
        console === 'vnc'
          ? `${desktopId} has no graphics device (devices.autoattachGraphicsDevice is false); open its serial console.`
          : `${desktopId} has no serial console (devices.autoattachSerialConsole is false); open its vnc console.`,
    };
  }
  return { kind: 'open' };
}
