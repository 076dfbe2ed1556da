import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { LeaseObject } from '../../../src/kube-objects.js';
import { claimKeyOf } from '../../../src/sessions/claim-key.js';
import { readConsoleEntries } from '../../../src/sessions/console-entries.js';
import { type ConsoleState, sessionFactsOf, withConsoleMarks } from '../../../src/sessions/console-marks.js';
import { describeSession, planReclaim } from '../../../src/sessions/plan-reclaim.js';

const minute = 60_000;
const t0 = Date.parse('2026-07-02T12:00:00.000Z');
const at = (minutes: number) => new Date(t0 + minutes * minute);
const expiryMs = 3 * minute;
const policy = { disconnectGraceMs: 15 * minute, maxSessionMs: 0 };

function claim(annotations: Record<string, string> = {}): LeaseObject {
  return {
    metadata: {
      name: 'corral-vdi-devpool-1',
      uid: 'uid-1',
      resourceVersion: '7',
      annotations: { 'corral.dev/vdi-session-id': 's-1', ...annotations },
    },
    spec: {
      holderIdentity: 'alice@example.com',
      acquireTime: at(0).toISOString(),
      renewTime: at(0).toISOString(),
      leaseDurationSeconds: 3600,
    },
  };
}

/**
 * Broker replicas sharing one claim Lease, each doing what its console tracker does: the first console to open
 * and the last to close write, a heartbeat refreshes, and an observer (the elected reclaimer, with no console of
 * its own) reads the Lease.
 */
class Replicas {
  lease = claim();
  now = at(1);
  readonly states = new Map<string, ConsoleState>();

  constructor(readonly processStartedAt = at(-60)) {}

  private stateOf(replica: string): ConsoleState {
    let state = this.states.get(replica);
    if (!state) {
      state = {
        claim: claimKeyOf(this.lease),
        open: 0,
        connectedAt: undefined,
        disconnectedAt: undefined,
        version: 0,
        written: 0,
      };
      this.states.set(replica, state);
    }
    return state;
  }

  write(replica: string, consoles: ConsoleState | undefined, refresh: boolean): void {
    const { now, processStartedAt } = this;
    const next = withConsoleMarks(this.lease, {
      replicaId: replica,
      consoles,
      now,
      expiryMs,
      refresh,
      processStartedAt,
    });
    if (next) this.lease = next;
    if (consoles) consoles.written = consoles.version;
  }

  open(replica: string): void {
    const state = this.stateOf(replica);
    state.open += 1;
    if (state.open === 1) {
      state.connectedAt = this.now;
      state.version += 1;
    }
    this.write(replica, state, false);
  }

  close(replica: string): void {
    const state = this.stateOf(replica);
    state.open -= 1;
    if (state.open > 0) return;
    state.disconnectedAt = this.now;
    state.version += 1;
    this.write(replica, state, false);
  }

  heartbeat(replica: string): void {
    const state = this.states.get(replica);
    if (state && state.open > 0) this.write(replica, state, true);
  }

  /** A write by a replica with no console of the desktop, such as the reclaimer's renewal. */
  renew(replica = 'reclaimer'): void {
    this.write(replica, undefined, true);
  }

  at(minutes: number): this {
    this.now = at(minutes);
    return this;
  }

  view(replica = 'reclaimer') {
    const facts = sessionFactsOf(this.lease, this.states.get(replica), {
      replicaId: replica,
      now: this.now,
      processStartedAt: this.processStartedAt,
    });
    if (!facts) throw new Error('no facts');
    return {
      facts,
      session: describeSession(facts, policy),
      plan: planReclaim(facts, this.now, policy),
    };
  }

  annotation(key: string): string | undefined {
    return this.lease.metadata.annotations?.[key];
  }
}

describe('console entries of several broker replicas on one claim', () => {
  it('keep a desktop connected while any replica has a console open, and start the grace at the last close', () => {
    const replicas = new Replicas();
    replicas.at(1).open('a');
    expect(replicas.annotation('corral.dev/vdi-connected-at')).toBe(at(1).toISOString());
    replicas.at(2).open('b');
    expect([...readConsoleEntries(replicas.lease).keys()]).toEqual(['a', 'b']);
    // the first console opened at 1 began the connected period
    expect(replicas.annotation('corral.dev/vdi-connected-at')).toBe(at(1).toISOString());

    replicas.at(3).close('a');
    expect([...readConsoleEntries(replicas.lease).keys()]).toEqual(['b']);
    expect(replicas.annotation('corral.dev/vdi-disconnected-at')).toBeUndefined();
    expect(replicas.at(30).view().session.connected).toBe(false);
    expect(replicas.at(3.5).view().session).toEqual({ connected: true });

    replicas.at(3.5).heartbeat('b');
    replicas.at(5).close('b');
    expect(replicas.annotation('corral.dev/vdi-consoles')).toBeUndefined();
    expect(replicas.annotation('corral.dev/vdi-disconnected-at')).toBe(at(5).toISOString());
    expect(replicas.view().session).toEqual({
      connected: false,
      disconnectedAt: at(5),
      reclaimAt: at(20),
      reclaimReason: 'disconnect-grace',
    });
    // every replica reads the same
    expect(replicas.view('a').session).toEqual(replicas.view('b').session);
  });

  it('gives a console opened on one replica, closed, and opened again on another the grace of one process', () => {
    const replicas = new Replicas();
    replicas.at(1).open('a');
    replicas.at(2).close('a');
    replicas.at(10).open('b');
    for (let minute = 11; minute <= 20; minute += 1) replicas.at(minute).heartbeat('b');
    expect(replicas.view().plan).toEqual({ kind: 'keep' });
    replicas.at(21).close('b');
    expect(replicas.at(35.99).view().plan).toMatchObject({ kind: 'keep', reclaimAt: at(36) });
    expect(replicas.at(36).view().plan).toEqual({ kind: 'reclaim', reason: 'disconnect-grace' });
  });

  it('writes nothing for a second console of a replica, and counts it at the next heartbeat', () => {
    const replicas = new Replicas();
    replicas.at(1).open('a');
    const written = replicas.lease;
    replicas.at(1.5).open('a');
    expect(replicas.lease).toBe(written);
    replicas.at(2).heartbeat('a');
    expect(readConsoleEntries(replicas.lease).get('a')).toEqual({ open: 2, seenAt: at(2), expiresAt: at(5) });
    replicas.close('a');
    expect(replicas.annotation('corral.dev/vdi-consoles')).toBeDefined();
  });

  it('counts a replica that stopped heartbeating as connected until its entry expires, then runs the grace from the expiry', () => {
    const replicas = new Replicas();
    replicas.at(1).open('a');
    replicas.at(2).heartbeat('a');
    // replica a dies here: its entry expires at 5
    expect(replicas.at(4.99).view().session.connected).toBe(true);
    expect(replicas.at(5).view().session).toEqual({
      connected: false,
      disconnectedAt: at(5),
      reclaimAt: at(20),
      reclaimReason: 'disconnect-grace',
    });
    expect(replicas.at(19.99).view().plan.kind).toBe('keep');
    expect(replicas.at(20).view().plan).toEqual({ kind: 'reclaim', reason: 'disconnect-grace' });
  });

  it('keeps a desktop connected when one of two replicas dies, and runs the grace from the last close after', () => {
    const replicas = new Replicas();
    replicas.at(1).open('a');
    replicas.at(1).open('b');
    // a dies; b heartbeats on and then closes
    for (const minute of [2, 3, 4, 5, 6]) replicas.at(minute).heartbeat('b');
    expect(replicas.at(6.5).view().session.connected).toBe(true);
    replicas.at(7).close('b');
    expect(replicas.annotation('corral.dev/vdi-consoles')).toBeUndefined();
    expect(replicas.view().session).toMatchObject({
      connected: false,
      disconnectedAt: at(7),
      reclaimAt: at(22),
    });
  });

  it('never reclaims at once after a restart: a dead replica’s grace runs from this process’s start when later', () => {
    const replicas = new Replicas(at(30));
    replicas.at(1).open('old');
    // the old process died at 1; its entry expired at 4; this process started at 30
    expect(replicas.at(30).view().session).toMatchObject({
      connected: false,
      disconnectedAt: at(30),
      reclaimAt: at(45),
    });
    expect(replicas.at(44.99).view().plan.kind).toBe('keep');
    expect(replicas.at(45).view().plan.kind).toBe('reclaim');
  });

  it('reads the entry a replica left before it restarted under the same ID as a dead replica’s', () => {
    const replicas = new Replicas(at(2));
    replicas.at(1).open('a');
    // the process restarts at 2 and keeps its ID, but not its consoles
    replicas.states.delete('a');
    expect(replicas.at(3.99).view('a').session.connected).toBe(true);
    expect(replicas.at(4).view('a').session).toMatchObject({
      connected: false,
      disconnectedAt: at(4),
      reclaimAt: at(19),
    });
    replicas.at(5).renew('a');
    expect(replicas.annotation('corral.dev/vdi-consoles')).toBeUndefined();
    expect(replicas.view('a').session).toMatchObject({ disconnectedAt: at(4), reclaimAt: at(19) });
  });

  it('keeps the recorded time of a desktop disconnected before a replica died', () => {
    const replicas = new Replicas(at(30));
    replicas.at(1).open('old');
    replicas.at(2).close('old');
    expect(replicas.at(30).view().plan).toEqual({ kind: 'reclaim', reason: 'disconnect-grace' });
  });

  it('drops a dead replica’s entry on the next write and records where its grace runs from', () => {
    const replicas = new Replicas();
    replicas.at(1).open('a');
    const before = replicas.at(10).view().session;
    replicas.renew();
    expect(replicas.annotation('corral.dev/vdi-consoles')).toBeUndefined();
    expect(replicas.annotation('corral.dev/vdi-disconnected-at')).toBe(at(4).toISOString());
    expect(replicas.view().session).toEqual(before);
  });

  it('ends a dead replica’s connected period and begins a new one when another replica opens', () => {
    const replicas = new Replicas();
    replicas.at(1).open('a');
    replicas.at(10).open('b');
    expect([...readConsoleEntries(replicas.lease).keys()]).toEqual(['b']);
    expect(replicas.annotation('corral.dev/vdi-disconnected-at')).toBe(at(4).toISOString());
    expect(replicas.annotation('corral.dev/vdi-connected-at')).toBe(at(10).toISOString());
    replicas.at(11).close('b');
    expect(replicas.view().session).toMatchObject({ disconnectedAt: at(11), reclaimAt: at(26) });
  });

  it('reads this replica’s own state over its recorded entry: a close not yet written counts', () => {
    const replicas = new Replicas();
    replicas.at(1).open('a');
    const state = replicas.states.get('a') as ConsoleState;
    // the close's write failed: the Lease still has the entry
    state.open = 0;
    state.disconnectedAt = at(2);
    state.version += 1;
    expect(replicas.at(3).view('a').session).toMatchObject({ connected: false, disconnectedAt: at(2) });
    expect(replicas.view('b').session.connected).toBe(true);
    replicas.at(3).heartbeat('a');
    replicas.write('a', state, true);
    expect(replicas.annotation('corral.dev/vdi-disconnected-at')).toBe(at(2).toISOString());
    expect(replicas.view('b').session).toMatchObject({ connected: false, disconnectedAt: at(2) });
  });

  it('agree with a model of the replicas: connected while a replica that heartbeats has a console, and a write by another never changes the reading', () => {
    const replica = fc.constantFrom('a', 'b', 'c');
    const step = fc.oneof(
      fc.record({ op: fc.constant('open' as const), replica }),
      fc.record({ op: fc.constant('close' as const), replica }),
      fc.record({ op: fc.constant('heartbeat' as const), replica }),
      fc.record({ op: fc.constant('renew' as const) }),
      fc.record({ op: fc.constant('wait' as const), minutes: fc.integer({ min: 1, max: 300 }) }),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), fc.integer({ min: -60, max: 100 }), (steps, started) => {
        const replicas = new Replicas(at(started));
        let minutes = Math.max(1, started);
        replicas.at(minutes);
        // when each replica's entry was last written fresh, while it has consoles open
        const refreshed = new Map<string, number>();
        for (const next of steps) {
          if (next.op === 'wait') {
            minutes += next.minutes / 10;
            replicas.at(minutes);
          } else if (next.op === 'open') {
            const open = replicas.states.get(next.replica)?.open ?? 0;
            const live = (refreshed.get(next.replica) ?? -Infinity) + 3 > minutes;
            replicas.open(next.replica);
            // a second console rewrites nothing unless the entry lapsed
            if (open === 0 || !live) refreshed.set(next.replica, minutes);
          } else if (next.op === 'close') {
            if ((replicas.states.get(next.replica)?.open ?? 0) === 0) continue;
            replicas.close(next.replica);
          } else if (next.op === 'heartbeat') {
            replicas.heartbeat(next.replica);
            if ((replicas.states.get(next.replica)?.open ?? 0) > 0) refreshed.set(next.replica, minutes);
          } else {
            const before = replicas.view().session;
            replicas.renew();
            expect(replicas.view().session).toEqual(before);
          }
          const connected = [...replicas.states].some(
            ([id, state]) => state.open > 0 && (refreshed.get(id) ?? -Infinity) + 3 > minutes,
          );
          expect(replicas.view().session.connected).toBe(connected);
        }
      }),
    );
  });
});
