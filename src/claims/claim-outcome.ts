import type { ClaimResult } from './claim-desktop.js';

/** How a claim went, beside the desktop it got. */
export type ClaimOutcome = Pick<ClaimResult, 'retried' | 'adopted' | 'warm' | 'startError'>;

/**
 * The outcome of a claim as every front end answers it: the CLI's `claim` and `assign` and the broker's claim route
 * take these fields from here, so a new one reaches all of them.
 */
export function claimOutcomeOf(result: ClaimResult): ClaimOutcome {
  return {
    retried: result.retried,
    adopted: result.adopted,
    warm: result.warm,
    ...(result.startError === undefined ? {} : { startError: result.startError }),
  };
}
