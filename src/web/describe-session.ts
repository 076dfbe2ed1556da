import type { DesktopBody } from '../broker/schemas.js';
import { isVdiError } from '../errors.js';
import type { ConsoleEnd } from './open-console.js';

const reclaimReasons: Readonly<Record<NonNullable<DesktopBody['reclaimReason']>, string>> = {
  'disconnect-grace': 'no console has been open for the disconnect grace',
  'max-duration': 'the session reaches its longest allowed time',
  idle: 'no key or pointer input reached it through a console',
  'not-entitled': 'its pool no longer lets you in',
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

/** The banner of a desktop about to be reclaimed as idle, or `undefined` when it is not. */
export function describeIdleWarning(desktop: DesktopBody): string | undefined {
  if (!desktop.idleWarning || !desktop.reclaimAt) return undefined;
  return `No key or pointer input has reached this desktop for a while: it will be reclaimed at ${formatWhen(desktop.reclaimAt)}. Type or move the pointer in its console to keep it.`;
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
