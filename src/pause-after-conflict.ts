import { setTimeout as pause } from 'node:timers/promises';

// the wait after a first conflict; each next one is twice as long
const firstPauseMs = 25;

/**
 * Waits before the next try of a write that met another: KubeVirt's controller writes a VM's status several times in
 * a row as it settles a stop, so five tries span about 400 ms (25, 50, 100, 200 ms), not five round trips.
 */
export function pauseAfterConflict(attempt: number): Promise<void> {
  return pause(firstPauseMs * 2 ** (attempt - 1));
}
