import type { ClaimResult } from '../claims/claim-desktop.js';
import { claimOutcomeOf } from '../claims/claim-outcome.js';
import type { DesktopView } from '../claims/desktop-view.js';

/** A desktop in `-o json` output: every field present, `null` where nothing is known. */
export interface DesktopJson {
  id: string;
  namespace: string;
  member: string;
  pool: string;
  poolId: string;
  owner: string | null;
  sessionId: string | null;
  claimedAt: string | null;
  expiresAt: string | null;
  legacy: boolean;
  phase: string;
  running: boolean;
  ephemeral: boolean;
}

/** The JSON shape of a desktop view. */
export function toDesktopJson(view: DesktopView): DesktopJson {
  return {
    id: view.id,
    namespace: view.namespace,
    member: view.member,
    pool: view.pool,
    poolId: view.poolId,
    owner: view.owner ?? null,
    sessionId: view.sessionId ?? null,
    claimedAt: view.claimedAt ?? null,
    expiresAt: view.expiresAt ?? null,
    legacy: view.legacy,
    phase: view.phase,
    running: view.running,
    ephemeral: view.ephemeral,
  };
}

/** A claim in `-o json` output (`claim` and `assign`): the desktop, how the claim went, and the connect command. */
export interface ClaimJson {
  desktop: DesktopJson;
  retried: boolean;
  adopted: boolean;
  warm: boolean;
  startError: string | null;
  connect: string;
}

/** The JSON shape of a claim, with the outcome fields every front end answers a claim with. */
export function toClaimJson(result: ClaimResult, connect: string): ClaimJson {
  const { startError, ...outcome } = claimOutcomeOf(result);
  return { desktop: toDesktopJson(result), ...outcome, startError: startError ?? null, connect };
}
