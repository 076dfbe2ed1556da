import type { DesktopBody } from '../broker/schemas.js';
import { isVdiError } from '../errors.js';
import type { ConsoleEnd } from './open-console.js';

const reclaimReasons: Readonly<Record<NonNullable<DesktopBody['reclaimReason']>, string>> = {
  'disconnect-grace': 'no console has been open for the disconnect grace',
  'max-duration': 'the session reaches its longest allowed time',
  idle: 'no key or pointer input reached it through a console',
  'not-entitled': 'its pool no longer lets you in',
  'roll-out': 'its pool moves to a new desktop image',
};

/** Formats an RFC 3339 time for people, in the browser's locale and zone. */
export function formatWhen(time: string): string {
  return new Date(time).toLocaleString();
}

/** The session state of a desktop in words: connected or not, and when and why it would be reclaimed. */
export function describeSession(desktop: DesktopBody): string {
  const state = desktop.connected
    ? 'Connected'
    : desktop.disconnectedAt
      ? `Disconnected since ${formatWhen(desktop.disconnectedAt)}`
      : 'Not connected';
  if (!desktop.reclaimAt || !desktop.reclaimReason) return `${state}.`;
  return `${state}; reclaimed at ${formatWhen(desktop.reclaimAt)} because ${reclaimReasons[desktop.reclaimReason]}.`;
}

/**
 * The banner of a desktop whose holder is warned of a reclaim, in two parts around its countdown, or `undefined`
 * when no warning is on.
 */
export function describeReclaimWarning(
  desktop: DesktopBody,
): { before: string; after: string; reason: NonNullable<DesktopBody['reclaimReason']> } | undefined {
  const { reclaimAt, reclaimReason: reason } = desktop;
  if (!desktop.reclaimWarning || !reclaimAt || !reason) return undefined;
  const when = `(at ${formatWhen(reclaimAt)})`;
  if (reason === 'idle') {
    return {
      reason,
      before: 'No key or pointer input has reached this desktop for a while: it will be reclaimed in ',
      after: ` ${when}. Type or move the pointer in its console to keep it.`,
    };
  }
  return {
    reason,
    before: 'This desktop will be reclaimed in ',
    after: ` ${when} because ${reclaimReasons[reason]}. Save your work now.`,
  };
}

/** Time left as a countdown: `m:ss`, or `h:mm:ss` from an hour on; never below `0:00`. */
export function formatCountdown(ms: number): string {
  const seconds = Math.max(0, Math.ceil(ms / 1000));
  const pad = (value: number) => String(value).padStart(2, '0');
  const hours = Math.floor(seconds / 3600);
  const minutes = Math.floor((seconds % 3600) / 60);
  const rest = seconds % 60;
  return hours > 0 ? `${hours}:${pad(minutes)}:${pad(rest)}` : `${minutes}:${pad(rest)}`;
}

/** An error in words for the page: the broker's message, which says what to do next, or what failed. */
export function describeError(error: unknown): string {
  if (isVdiError(error)) return error.message;
  return `Something went wrong: ${error instanceof Error ? error.message : String(error)}.`;
}

/** Why a console stream ended, in words; a reason the broker gave comes first. */
export function describeConsoleEnd(end: ConsoleEnd): string {
  if (end.reason !== '') return `The console closed: ${end.reason}`;
  if (end.code === 1000) return 'The console closed.';
  return `The connection to the console dropped (code ${end.code}).`;
}
