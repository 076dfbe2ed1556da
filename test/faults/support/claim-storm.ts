import { isVdiError } from '../../../src/errors.js';
import type { Vdi } from '../../../src/vdi.js';

/** What a storm asks of the SDK. */
export type StormOp = 'claim' | 'release' | 'renew' | 'start';

/** One line of a storm's record: a call began, or ended with its answer. */
export type StormEvent =
  | { type: 'begin'; op: StormOp; identity: string; pool: string; member?: string }
  | {
      type: 'end';
      op: StormOp;
      identity: string;
      pool: string;
      ms: number;
      /** Set when the call outlived its bound; its answer never came. */
      hung?: true;
      member?: string;
      sessionId?: string;
      startError?: string;
      error?: { isVdiError: boolean; code?: string; retryable?: boolean; message: string };
    }
  | { type: 'summary'; retriesMade: number; requests: number };

/** Options of {@link runClaimStorm}. */
export interface ClaimStormOptions {
  vdi: Vdi;
  namespace: string;
  pools: string[];
  identities: string[];
  seed: number;
  /** The longest any one call may take; past it the call counts as hung. */
  boundMs: number;
  /** Ends the storm: each identity finishes its call, then settles what it does not know. */
  stop: AbortSignal;
  record: (event: StormEvent) => void;
}

/** What one identity believes about one pool, from the answers it got. */
type Belief =
  | { kind: 'free' }
  | { kind: 'unknown' }
  | { kind: 'held'; member: string; needsStart: boolean }
  | { kind: 'releasing'; member: string };

/** A small seeded generator (mulberry32), so a storm's choices repeat with its seed. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

class CallHung extends Error {}

// The SDK's calls take no signal: the bound is a signal of the caller's own that it races the call against.
async function bounded<T>(boundMs: number, call: () => Promise<T>): Promise<T> {
  const signal = AbortSignal.timeout(boundMs);
  return await new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new CallHung());
    signal.addEventListener('abort', onAbort, { once: true });
    call().then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

function describeError(error: unknown) {
  const message = error instanceof Error ? error.message : String(error);
  if (!isVdiError(error)) return { isVdiError: false, message };
  return { isVdiError: true, code: error.code, retryable: error.retryable, message };
}

// A release retried after an outage finds its own claim already ended: the holder did release it.
const endedCodes = ['CLAIM_ENDED', 'NOT_HOLDER'] as const;

/**
 * Runs a claim/release storm: one loop per identity (a user does one thing at a time), each picking a pool and
 * doing what its belief about that pool calls for: claim when free or unsure, release or renew when held,
 * release again when a release failed, start when a claim's start failed. Every call is bounded and
 * recorded. Once `stop` aborts, each identity keeps calling until it knows where it stands in every pool.
 */
export async function runClaimStorm(options: ClaimStormOptions): Promise<void> {
  const { vdi, namespace, pools, identities, boundMs, stop, record } = options;

  async function act(identity: string, pool: string, belief: Belief, random: () => number): Promise<Belief> {
    const op: StormOp =
      belief.kind === 'free' || belief.kind === 'unknown'
        ? 'claim'
        : belief.kind === 'releasing'
          ? 'release'
          : belief.needsStart
            ? 'start'
            : random() < 0.7
              ? 'release'
              : 'renew';
    const member = belief.kind === 'held' || belief.kind === 'releasing' ? belief.member : undefined;
    record({ type: 'begin', op, identity, pool, ...(member ? { member } : {}) });
    const began = performance.now();
    const ended = { type: 'end' as const, op, identity, pool, ...(member ? { member } : {}) };
    try {
      if (op === 'claim') {
        const claimed = await bounded(boundMs, () => vdi.claim({ pool, identity, namespace }));
        record({
          ...ended,
          ms: performance.now() - began,
          member: claimed.member,
          sessionId: claimed.sessionId,
          ...(claimed.startError === undefined ? {} : { startError: claimed.startError }),
        });
        return { kind: 'held', member: claimed.member, needsStart: claimed.startError !== undefined };
      }
      const asked = { member: member ?? '', identity, namespace };
      if (op === 'release') await bounded(boundMs, () => vdi.release(asked));
      else if (op === 'renew') await bounded(boundMs, () => vdi.renew(asked));
      else await bounded(boundMs, () => vdi.start(asked));
      record({ ...ended, ms: performance.now() - began });
      return op === 'release' ? { kind: 'free' } : { kind: 'held', member: member ?? '', needsStart: false };
    } catch (error) {
      const ms = performance.now() - began;
      if (error instanceof CallHung) {
        record({ ...ended, ms, hung: true });
      } else {
        record({ ...ended, ms, error: describeError(error) });
      }
      if (op === 'claim') return isVdiError(error, 'NO_FREE_MEMBER') ? { kind: 'free' } : { kind: 'unknown' };
      if (op === 'release' && belief.kind === 'releasing' && isVdiError(error, ...endedCodes)) {
        return { kind: 'free' };
      }
      // a renew or start that failed leaves the claim as it was; a release that failed may have ended it
      return op === 'release' ? { kind: 'releasing', member: member ?? '' } : belief;
    }
  }

  async function storm(identity: string, random: () => number): Promise<void> {
    const beliefs = new Map<string, Belief>(pools.map((pool) => [pool, { kind: 'unknown' }]));
    while (!stop.aborted) {
      const pool = pools[Math.floor(random() * pools.length)] ?? '';
      beliefs.set(pool, await act(identity, pool, beliefs.get(pool) ?? { kind: 'unknown' }, random));
    }
    for (const pool of pools) {
      for (let settle = 0; settle < 20; settle += 1) {
        const belief = beliefs.get(pool) ?? { kind: 'unknown' };
        const settled = belief.kind === 'free' || (belief.kind === 'held' && !belief.needsStart);
        if (settled) break;
        beliefs.set(pool, await act(identity, pool, belief, random));
      }
    }
  }

  // each identity its own sequence, so a seed repeats each one's choices whatever the interleaving
  await Promise.all(identities.map((identity, index) => storm(identity, seededRandom(options.seed + index))));
  record({
    type: 'summary',
    retriesMade: vdi.context.cluster.retriesMade,
    requests: vdi.context.cluster.requestTotal,
  });
}
