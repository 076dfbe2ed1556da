import { describe, expect, it } from 'vitest';
import { checkHistory, findUnmadeClaims, sliceHistory } from '../../chaos/check-history.js';
import type {
  CallRecord,
  Change,
  ClockChange,
  History,
  InvariantName,
  LaneUser,
  LeaseChange,
  LeaseWrite,
  RestState,
  VmChange,
  VmiChange,
} from '../../chaos/history.js';

const start = Date.parse('2026-07-02T12:00:00Z');
const hour = 3_600_000;
let resourceVersion = 0;

function clock(at: number, now: number): ClockChange {
  resourceVersion += 1;
  return { kind: 'clock', type: 'MODIFIED', at, resourceVersion, name: 'ns', now };
}

function lease(
  at: number,
  member: string,
  holder: string,
  sessionId: string,
  extra: Partial<LeaseChange> = {},
): LeaseChange {
  resourceVersion += 1;
  return {
    kind: 'lease',
    type: 'ADDED',
    at,
    resourceVersion,
    name: `corral-vdi-${member}`,
    member,
    pool: 'alpha',
    holder,
    sessionId,
    renewTime: new Date(start).toISOString(),
    durationSeconds: 3600,
    ...extra,
  };
}

function gone(at: number, version: LeaseChange): LeaseChange {
  resourceVersion += 1;
  return { ...version, type: 'DELETED', at, resourceVersion };
}

function vmi(at: number, member: string, type: VmiChange['type'] = 'ADDED'): VmiChange {
  resourceVersion += 1;
  return { kind: 'vmi', type, at, resourceVersion, name: member, uid: `uid-${member}`, phase: 'Running' };
}

/** The member's VM presented with a claim's session: the claim handed it out. */
function presented(at: number, member: string, holder: string, sessionId: string): VmChange {
  resourceVersion += 1;
  return {
    kind: 'vm',
    type: 'MODIFIED',
    at,
    resourceVersion,
    name: member,
    pool: 'alpha',
    assignedTo: holder,
    sessionId,
  };
}

function call(
  op: string,
  startedAt: number,
  endedAt: number,
  target: Partial<CallRecord>,
  outcome: CallRecord['outcome'] = { ok: true },
): CallRecord {
  return {
    kind: 'call',
    proc: 0,
    lane: 0,
    seq: startedAt,
    op,
    pool: 'alpha',
    startedAt,
    endedAt,
    outcome,
    ...target,
  };
}

/** A claim by `identity` answered at `at` with the session, started at `from`. */
const told = (at: number, identity: string, member: string, sessionId: string, from = at - 50) =>
  call('claim', from, at, { identity }, { ok: true, answer: { member, sessionId, owner: identity } });

const lanes: LaneUser[] = [
  { user: 'lane-0', proc: 0, lane: 0 },
  { user: 'lane-1', proc: 0, lane: 1 },
];

/** The audited write of a Lease change, by `user`, which the apiserver answered at the change's time. */
function wrote(change: LeaseChange, user = 'lane-0'): LeaseWrite {
  const sent =
    change.type === 'DELETED'
      ? {}
      : Object.fromEntries(
          Object.entries({
            member: change.member,
            holder: change.holder,
            sessionId: change.sessionId,
          }).filter(([, value]) => value !== undefined),
        );
  return {
    kind: 'lease-write',
    verb: change.type === 'DELETED' ? 'delete' : change.type === 'ADDED' ? 'create' : 'update',
    name: change.name,
    user,
    ok: true,
    receivedAt: change.at - 1,
    at: change.at,
    ...sent,
  };
}

/** A history whose Lease changes were each written by lane 0, unless `writes` says who wrote what. */
function history(calls: CallRecord[], changes: Change[], rest?: RestState, writes?: LeaseWrite[]): History {
  return {
    calls,
    changes,
    leaseWrites:
      writes ??
      changes
        .filter((change): change is LeaseChange => change.kind === 'lease')
        .map((change) => wrote(change)),
    laneUsers: lanes,
    documentedCodes: ['NOT_HOLDER', 'NO_FREE_MEMBER', 'CLAIM_CHANGED'],
    ...(rest ? { rest } : {}),
  };
}

const invariants = (found: History) => checkHistory(found).map((violation) => violation.invariant);

/** ana claims alpha-1, runs it, releases it (stopped, VMI gone), then bo claims it: nothing is broken. */
function cleanHandover() {
  const changes: Change[] = [clock(0, start)];
  const first = lease(100, 'alpha-1', 'ana', 's1');
  changes.push(first, presented(110, 'alpha-1', 'ana', 's1'), vmi(200, 'alpha-1'));
  changes.push(vmi(600, 'alpha-1', 'DELETED'), gone(650, first));
  changes.push(lease(900, 'alpha-1', 'bo', 's2'), presented(910, 'alpha-1', 'bo', 's2'));
  return {
    calls: [
      told(150, 'ana', 'alpha-1', 's1'),
      call('release', 400, 700, { identity: 'ana', member: 'alpha-1' }),
      told(950, 'bo', 'alpha-1', 's2'),
    ],
    changes,
  };
}

describe('checkHistory', () => {
  it('finds nothing wrong with a claim released by its holder and claimed again once its VMI is gone', () => {
    const { calls, changes } = cleanHandover();
    expect(checkHistory(history(calls, changes))).toEqual([]);
  });

  it('catches a caller told it holds a member that someone else holds by then (two holders)', () => {
    const first = lease(100, 'alpha-1', 'ana', 's1');
    const found = history(
      [
        call('release', 150, 260, { identity: 'ana', member: 'alpha-1' }),
        // ana's claim answers its old session after bo already holds the member
        told(500, 'ana', 'alpha-1', 's1'),
        told(350, 'bo', 'alpha-1', 's2'),
      ],
      [clock(0, start), first, gone(250, first), lease(300, 'alpha-1', 'bo', 's2')],
    );
    expect(invariants(found)).toEqual(['two-holders']);
  });

  it('catches a caller told a session its member Lease never had (two holders)', () => {
    const found = history(
      [told(150, 'ana', 'alpha-1', 'never-written'), told(120, 'bo', 'alpha-1', 's1')],
      [clock(0, start), lease(100, 'alpha-1', 'bo', 's1')],
    );
    expect(invariants(found)).toEqual(['two-holders']);
  });

  it('catches one claim told to two identities', () => {
    const found = history(
      [told(150, 'ana', 'alpha-1', 's1'), told(160, 'bo', 'alpha-1', 's1')],
      [clock(0, start), lease(100, 'alpha-1', 'ana', 's1')],
    );
    expect(invariants(found)).toContain('claim-told-twice');
  });

  it('lets a double-click tell both of its claims the same session', () => {
    const found = history(
      [told(150, 'ana', 'alpha-1', 's1'), told(160, 'ana', 'alpha-1', 's1')],
      [clock(0, start), lease(100, 'alpha-1', 'ana', 's1')],
    );
    expect(checkHistory(found)).toEqual([]);
  });

  it('catches an identity holding two live members of one pool at once', () => {
    const found = history(
      [told(105, 'ana', 'alpha-1', 's1'), told(115, 'ana', 'alpha-2', 's2')],
      [clock(0, start), lease(100, 'alpha-1', 'ana', 's1'), lease(110, 'alpha-2', 'ana', 's2')],
    );
    expect(invariants(found)).toEqual(['identity-two-desktops']);
  });

  it('counts neither an expired claim nor one being released as a second desktop', () => {
    const expired = lease(100, 'alpha-1', 'ana', 's1');
    const later = new Date(start + hour + 60_000).toISOString();
    const found = history(
      [
        told(150, 'ana', 'alpha-1', 's1'),
        told(350, 'ana', 'alpha-2', 's2'),
        call(
          'claim',
          390,
          420,
          { identity: 'ana' },
          { ok: false, error: { name: 'VdiError', code: 'CLAIM_CHANGED', message: 'x' } },
        ),
      ],
      [
        clock(0, start),
        expired,
        clock(200, start + hour + 60_000),
        lease(300, 'alpha-2', 'ana', 's2', { renewTime: later }),
        lease(400, 'alpha-3', 'ana', 's3', { renewTime: later, releasing: 's3' }),
      ],
    );
    expect(checkHistory(found)).toEqual([]);
  });

  it('catches a live claim taken over with no release and no expiry', () => {
    const found = history(
      [told(150, 'ana', 'alpha-1', 's1'), call('resize', 300, 400, { identity: 'admin' })],
      [clock(0, start), lease(100, 'alpha-1', 'ana', 's1'), lease(350, 'alpha-1', 'corral-vdi/resize', 'r')],
    );
    expect(invariants(found)).toEqual(['claim-ended-without-cause']);
  });

  it('accepts a claim ended by an admin unassign, by expiry, or by the engine', () => {
    const byAdmin = lease(100, 'alpha-1', 'ana', 's1');
    const byPolicy = lease(100, 'alpha-2', 'bo', 's2');
    const byEngine = lease(100, 'alpha-3', 'cy', 's3');
    const found = history(
      [
        told(150, 'ana', 'alpha-1', 's1'),
        told(150, 'bo', 'alpha-2', 's2'),
        told(150, 'cy', 'alpha-3', 's3'),
        call('unassign', 300, 400, { identity: 'admin', member: 'alpha-1', asAdmin: true }),
        call('engine-pass', 700, 800, {}),
        // di's claim takes over bo's expired one
        told(650, 'di', 'alpha-2', 's4', 550),
      ],
      [
        clock(0, start),
        byAdmin,
        byPolicy,
        byEngine,
        gone(380, byAdmin),
        clock(500, start + hour + 1),
        lease(600, 'alpha-2', 'di', 's4', { renewTime: new Date(start + hour + 1).toISOString() }),
        gone(750, byEngine),
      ],
    );
    expect(checkHistory(found)).toEqual([]);
  });

  it('catches a release by someone who is neither the holder nor an admin as no cause', () => {
    const first = lease(100, 'alpha-1', 'ana', 's1');
    const found = history(
      [told(150, 'ana', 'alpha-1', 's1'), call('release', 300, 400, { identity: 'bo', member: 'alpha-1' })],
      [clock(0, start), first, gone(350, first)],
    );
    expect(invariants(found)).toEqual(['claim-ended-without-cause']);
  });

  it('catches a claim its holder released whose Lease was deleted after the release returned', () => {
    const first = lease(100, 'alpha-1', 'ana', 's1');
    const found = history(
      [told(150, 'ana', 'alpha-1', 's1'), call('release', 300, 400, { identity: 'ana', member: 'alpha-1' })],
      [clock(0, start), first, gone(450, first)],
    );
    const violations = checkHistory(found);
    expect(violations.map((violation) => violation.invariant)).toEqual(['claim-ended-without-cause']);
    expect(violations[0]?.message).toContain('during no call in flight');
  });

  it('judges an end by the lane that wrote it, not by a release of another lane at that moment', () => {
    const first = lease(100, 'alpha-1', 'ana', 's1');
    const ended = gone(350, first);
    const calls = [
      told(150, 'ana', 'alpha-1', 's1'),
      // ana's release runs in lane 1 while lane 0, claiming for bo, deletes her Lease
      call('release', 300, 400, { lane: 1, identity: 'ana', member: 'alpha-1' }),
      call(
        'claim',
        300,
        400,
        { identity: 'bo' },
        { ok: false, error: { name: 'VdiError', code: 'NO_FREE_MEMBER', message: 'x' } },
      ),
    ];
    const changes = [clock(0, start), first, ended];
    expect(invariants(history(calls, changes))).toEqual(['claim-ended-without-cause']);
    expect(checkHistory(history(calls, changes, undefined, [wrote(first), wrote(ended, 'lane-1')]))).toEqual(
      [],
    );
  });

  it('finds the delete that ended a claim by the uid it named, whatever order the audit logged the writes in', () => {
    const removal = lease(100, 'alpha-1', 'corral-vdi/resize', '', { uid: 'u1', durationSeconds: 300 });
    const removalGone = gone(110, removal);
    const claimed = lease(120, 'alpha-1', 'ana', 's1', { uid: 'u2' });
    const released = gone(400, claimed);
    const calls = [
      call('shrink', 90, 140, { lane: 1, identity: 'admin' }),
      told(150, 'ana', 'alpha-1', 's1', 115),
      call('release', 350, 450, { identity: 'ana', member: 'alpha-1' }),
    ];
    // the shrink's delete of its own removal Lease is logged as done after ana's create of the next object
    const writes = [
      { ...wrote(removal, 'lane-1') },
      wrote(claimed),
      { ...wrote(removalGone, 'lane-1'), at: 125, preconditionUid: 'u1' },
      { ...wrote(released), preconditionUid: 'u2' },
    ];
    const found = history(
      calls,
      [clock(0, start), removal, removalGone, claimed, released],
      undefined,
      writes,
    );
    expect(checkHistory(found)).toEqual([]);
  });

  it('catches a claim written that no call was told of and no failed call explains', () => {
    const found = history(
      // one claim call wrote alpha-1's Lease, then was answered with alpha-2; alpha-1 stays held for nobody
      [
        call(
          'claim',
          100,
          300,
          { identity: 'ana' },
          { ok: true, answer: { member: 'alpha-2', sessionId: 's2' } },
        ),
      ],
      [
        clock(0, start),
        lease(120, 'alpha-1', 'ana', 's1'),
        lease(250, 'alpha-2', 'ana', 's2', { pool: 'beta' }),
      ],
    );
    const violations = checkHistory(found);
    expect(violations.map((violation) => violation.invariant)).toEqual(['claim-written-untold']);
    expect(violations[0]?.message).toContain("ana's claim s1 of alpha-1 was written by lane-0 during claim");
  });

  /**
   * ana's claim writes alpha-1's Lease, then goes on with alpha-2 and returns at 300, while an admin's unassign in
   * lane 1 marks alpha-1's claim releasing at `markAt` (when given) and deletes its Lease at `deleteAt`.
   */
  function unassignedWhileClaiming(deleteAt: number, markAt?: number): History {
    const written = lease(120, 'alpha-1', 'ana', 's1');
    const marked =
      markAt === undefined
        ? undefined
        : lease(markAt, 'alpha-1', 'ana', 's1', { type: 'MODIFIED', releasing: 's1' });
    const other = lease(250, 'alpha-2', 'ana', 's2', { pool: 'beta' });
    const ended = gone(deleteAt, marked ?? written);
    const changes = [clock(0, start), written, ...(marked ? [marked] : []), other, ended];
    const writes = [
      wrote(written),
      ...(marked ? [{ ...wrote(marked, 'lane-1'), releasing: 's1' }] : []),
      wrote(other),
      wrote(ended, 'lane-1'),
    ];
    const answer = { member: 'alpha-2', sessionId: 's2' };
    const calls = [
      call('claim', 100, 300, { identity: 'ana' }, { ok: true, answer }),
      call('unassign', (markAt ?? deleteAt) - 50, deleteAt + 50, {
        lane: 1,
        identity: 'admin',
        member: 'alpha-1',
        asAdmin: true,
      }),
    ];
    return history(calls, changes, undefined, writes);
  }

  it('lets a claim go on with another member once an unassign took the claim it wrote, but not after it returned', () => {
    expect(checkHistory(unassignedWhileClaiming(200))).toEqual([]);
    expect(invariants(unassignedWhileClaiming(500))).toEqual(['claim-written-untold']);
    // marked releasing before the claim returned, deleted after: the release had made it its own in time
    expect(checkHistory(unassignedWhileClaiming(500, 200))).toEqual([]);
  });

  it('lets a claim call give back a claim it wrote, or fail after writing one', () => {
    const givenBack = lease(120, 'alpha-1', 'ana', 's1');
    const found = history(
      [
        call(
          'claim',
          100,
          300,
          { identity: 'ana' },
          { ok: true, answer: { member: 'alpha-2', sessionId: 's2' } },
        ),
        call(
          'claim',
          400,
          500,
          { identity: 'bo' },
          { ok: false, error: { name: 'VdiError', code: 'CLAIM_CHANGED', message: 'x' } },
        ),
      ],
      [
        clock(0, start),
        givenBack,
        gone(200, givenBack),
        lease(250, 'alpha-2', 'ana', 's2'),
        lease(450, 'alpha-3', 'bo', 's3'),
      ],
    );
    expect(checkHistory(found)).toEqual([]);
  });

  it('counts a claim its own call wrote and deleted, unmarked and untold, as one no call made or ended', () => {
    const givenBack = lease(120, 'alpha-1', 'ana', 's1');
    const calls = [
      call(
        'claim',
        100,
        300,
        { identity: 'ana' },
        { ok: true, answer: { member: 'alpha-2', sessionId: 's2' } },
      ),
    ];
    // alpha-1 stopped and free: a reader following the rule showed the Lease as a claim
    const stopped: VmChange = {
      ...presented(50, 'alpha-1', 'nobody', ''),
      assignedTo: undefined,
      sessionId: undefined,
      printableStatus: 'Stopped',
      runStrategy: 'Halted',
    };
    const changes = [
      clock(0, start),
      stopped,
      givenBack,
      gone(200, givenBack),
      lease(250, 'alpha-2', 'ana', 's2'),
    ];
    const found = findUnmadeClaims(history(calls, changes));
    expect(found.map((violation) => violation.invariant)).toEqual(['claim-given-back']);
    expect(found[0]?.message).toContain('never marked releasing');
    // ended by an unassign in flight, it was a claim an admin ended: not counted
    const unassigned = history(
      [...calls, call('unassign', 150, 250, { identity: 'admin', member: 'alpha-1', asAdmin: true })],
      changes,
    );
    expect(findUnmadeClaims(unassigned)).toEqual([]);
  });

  it('counts a take given back while its member was going down throughout: never a claim by the rule', () => {
    const givenBack = lease(120, 'alpha-1', 'ana', 's1');
    // the last holder's release asked alpha-1 to stop; its instance goes only after the give-back
    const stopping: VmChange = {
      ...presented(50, 'alpha-1', 'bo', 's0'),
      assignedTo: undefined,
      sessionId: undefined,
      printableStatus: 'Stopping',
      runStrategy: 'Halted',
    };
    const calls = [
      call(
        'claim',
        100,
        300,
        { identity: 'ana' },
        { ok: true, answer: { member: 'alpha-2', sessionId: 's2' } },
      ),
    ];
    const changes = [
      clock(0, start),
      vmi(10, 'alpha-1'),
      stopping,
      givenBack,
      gone(200, givenBack),
      vmi(220, 'alpha-1', 'DELETED'),
      lease(250, 'alpha-2', 'ana', 's2'),
    ];
    expect(findUnmadeClaims(history(calls, changes)).map((violation) => violation.invariant)).toEqual([
      'take-given-back',
    ]);
    // the same member gone before the Lease's end (a shrink removed it): a take too
    const removed: VmChange = { ...stopping, type: 'DELETED', at: 150 };
    expect(
      findUnmadeClaims(history(calls, [...changes.slice(0, 4), removed, ...changes.slice(4)])).map(
        (violation) => violation.invariant,
      ),
    ).toEqual(['take-given-back']);
  });

  it('counts a member showing a holder without a Lease before the engine pass', () => {
    const copy: VmChange = { ...presented(100, 'alpha-1', 'ana', 's1'), printableStatus: 'Stopped' };
    const found: History = {
      ...history([], [clock(0, start)]),
      restBeforePass: { leases: [], vms: [copy], now: start },
    };
    expect(findUnmadeClaims(found).map((violation) => violation.invariant)).toEqual(['copy-before-pass']);
  });

  it('catches a member handed to another identity while the previous VMI still exists', () => {
    const first = lease(100, 'alpha-1', 'ana', 's1');
    const found = history(
      [
        told(150, 'ana', 'alpha-1', 's1'),
        call('release', 400, 700, { identity: 'ana', member: 'alpha-1' }),
        told(950, 'bo', 'alpha-1', 's2'),
      ],
      [
        clock(0, start),
        first,
        presented(110, 'alpha-1', 'ana', 's1'),
        vmi(200, 'alpha-1'),
        gone(650, first),
        lease(900, 'alpha-1', 'bo', 's2'),
        presented(910, 'alpha-1', 'bo', 's2'),
      ],
    );
    const violations = checkHistory(found);
    expect(violations.map((violation) => violation.invariant)).toEqual(['vmi-at-handout']);
    expect(violations[0]?.message).toContain('was live when its Lease was deleted');
  });

  /** ana's claim expired while its VMI runs; bo takes alpha-1 over with the reset-due mark. */
  function takeover(vmiGoneAt: number, toldAt: number) {
    const later = new Date(start + hour + 1).toISOString();
    // built in the cluster's order, as resourceVersions grow with each record
    const changes: Change[] = [clock(0, start), lease(100, 'alpha-1', 'ana', 's1')];
    changes.push(presented(110, 'alpha-1', 'ana', 's1'), vmi(200, 'alpha-1'));
    changes.push(clock(300, start + hour + 1));
    changes.push(lease(400, 'alpha-1', 'bo', 's2', { type: 'MODIFIED', renewTime: later, resetDue: 's2' }));
    changes.push(vmi(vmiGoneAt, 'alpha-1', 'DELETED'));
    changes.push(lease(vmiGoneAt + 10, 'alpha-1', 'bo', 's2', { type: 'MODIFIED', renewTime: later }));
    changes.push(presented(vmiGoneAt + 20, 'alpha-1', 'bo', 's2'));
    // bo's claim takes the expired Lease over at 400 and is answered at `toldAt`
    return history([told(150, 'ana', 'alpha-1', 's1'), told(toldAt, 'bo', 'alpha-1', 's2', 350)], changes);
  }

  it('lets a takeover write its marked Lease while the previous VMI still exists', () => {
    expect(checkHistory(takeover(900, 1_000))).toEqual([]);
  });

  it('allows an answer whose VMI deletion arrived within the watch lag after it', () => {
    expect(checkHistory(takeover(2_500, 1_000))).toEqual([]);
  });

  it('catches a takeover answered while the previous VMI still exists, beyond the lag allowance', () => {
    const violations = checkHistory(takeover(9_000, 1_000));
    expect(violations.map((violation) => violation.invariant)).toEqual(['vmi-at-handout']);
    expect(violations[0]?.message).toContain('answered claim');
    expect(violations[0]?.message).toContain('had expired and its Lease was taken over');
  });

  it('catches a takeover presented while the previous VMI still exists', () => {
    const later = new Date(start + hour + 1).toISOString();
    const found = history(
      [told(150, 'ana', 'alpha-1', 's1'), told(550, 'bo', 'alpha-1', 's2', 350)],
      [
        clock(0, start),
        lease(100, 'alpha-1', 'ana', 's1'),
        presented(110, 'alpha-1', 'ana', 's1'),
        vmi(200, 'alpha-1'),
        clock(300, start + hour + 1),
        lease(400, 'alpha-1', 'bo', 's2', { type: 'MODIFIED', renewTime: later, resetDue: 's2' }),
        lease(500, 'alpha-1', 'bo', 's2', { type: 'MODIFIED', renewTime: later }),
        presented(510, 'alpha-1', 'bo', 's2'),
      ],
    );
    const violations = checkHistory(found);
    expect(violations.map((violation) => violation.invariant)).toEqual(['vmi-at-handout']);
    expect(violations[0]?.message).toContain('presented with its session');
  });

  it('takes no Lease given back before its member was presented for a handout, whatever VMI still runs', () => {
    const first = lease(100, 'alpha-1', 'ana', 's1');
    const released = gone(300, first);
    const freshTake = lease(320, 'alpha-1', 'bo', 's2');
    const found = history(
      [
        told(150, 'ana', 'alpha-1', 's1'),
        call('release', 250, 310, { identity: 'ana', member: 'alpha-1' }),
        // bo's claim won the member's Lease from a view older than the stop, read it going down and gave it back
        call(
          'claim',
          315,
          400,
          { identity: 'bo' },
          { ok: false, error: { name: 'VdiError', code: 'NO_FREE_MEMBER', message: 'x' } },
        ),
      ],
      [
        clock(0, start),
        first,
        presented(110, 'alpha-1', 'ana', 's1'),
        vmi(200, 'alpha-1'),
        released,
        freshTake,
        gone(350, freshTake),
        vmi(500, 'alpha-1', 'DELETED'),
      ],
    );
    expect(checkHistory(found)).toEqual([]);
  });

  it('lets the same identity take back its own running desktop', () => {
    const first = lease(100, 'alpha-1', 'ana', 's1');
    const found = history(
      [told(150, 'ana', 'alpha-1', 's1'), told(450, 'ana', 'alpha-1', 's2')],
      [
        clock(0, start),
        first,
        presented(110, 'alpha-1', 'ana', 's1'),
        vmi(200, 'alpha-1'),
        clock(300, start + hour + 1),
        lease(400, 'alpha-1', 'ana', 's2', { renewTime: new Date(start + hour + 1).toISOString() }),
        presented(410, 'alpha-1', 'ana', 's2'),
      ],
    );
    expect(checkHistory(found)).toEqual([]);
  });

  /** ana's claim expired while its VMI runs; bo took it over and gave it back before the reset; then `taker` claims. */
  function takeoverGivenBack(taker: string) {
    const later = new Date(start + hour + 1).toISOString();
    // built in the cluster's order, as resourceVersions grow with each record
    const changes: Change[] = [clock(0, start), lease(100, 'alpha-1', 'ana', 's1')];
    changes.push(presented(110, 'alpha-1', 'ana', 's1'), vmi(200, 'alpha-1'));
    changes.push(clock(300, start + hour + 1));
    const marked = lease(400, 'alpha-1', 'bo', 's2', { type: 'MODIFIED', renewTime: later, resetDue: 's2' });
    changes.push(marked, gone(450, marked), lease(600, 'alpha-1', taker, 's3', { renewTime: later }));
    changes.push(presented(610, 'alpha-1', taker, 's3'));
    const calls = [
      told(150, 'ana', 'alpha-1', 's1'),
      // bo's claim takes it over, then gives it back and fails
      call(
        'claim',
        350,
        500,
        { identity: 'bo' },
        { ok: false, error: { name: 'VdiError', code: 'CLAIM_CHANGED', message: 'x' } },
      ),
      told(650, taker, 'alpha-1', 's3'),
    ];
    return history(calls, changes);
  }

  it('lets an identity take back its own guest from a takeover given back before its reset', () => {
    expect(checkHistory(takeoverGivenBack('ana'))).toEqual([]);
  });

  it('catches a third identity handed the guest a takeover gave back before its reset', () => {
    const violations = checkHistory(takeoverGivenBack('cy'));
    expect(violations.map((violation) => violation.invariant)).toEqual(['vmi-at-handout']);
    expect(violations[0]?.message).toContain("of ana's claim");
  });

  it('catches presentation copies that do not match the Leases at rest', () => {
    const vm = (name: string, assignedTo?: string): VmChange => ({
      kind: 'vm',
      type: 'ADDED',
      at: 1,
      resourceVersion: 1,
      name,
      pool: 'alpha',
      ...(assignedTo === undefined ? {} : { assignedTo }),
    });
    const rest: RestState = {
      leases: [
        lease(1, 'alpha-1', 'ana', 's1'),
        lease(1, 'alpha-2', 'bo', 's2'),
        lease(1, 'alpha-9', 'cy', 's3'),
      ],
      vms: [vm('alpha-1', 'ana'), vm('alpha-2', 'ana'), vm('alpha-3', 'di'), vm('alpha-4')],
      now: start,
    };
    const violations = checkHistory(history([], [], rest));
    expect(violations.map((violation) => [violation.invariant, violation.member])).toEqual([
      ['presentation-at-rest', 'alpha-2'],
      ['presentation-at-rest', 'alpha-3'],
      ['presentation-at-rest', 'alpha-9'],
    ]);
    // an hour later every claim has expired and binds nobody: what their members show is no violation, but a copy
    // on a member that never had a Lease still is
    const later = checkHistory(history([], [], { ...rest, now: start + hour + 1 }));
    expect(later.map((violation) => violation.member)).toEqual(['alpha-3']);
  });

  it('lets a member whose takeover reset is still due show its previous holder at rest', () => {
    const rest: RestState = {
      now: start,
      leases: [lease(1, 'alpha-1', 'bo', 's2', { resetDue: 's2' })],
      vms: [
        {
          kind: 'vm',
          type: 'ADDED',
          at: 1,
          resourceVersion: 1,
          name: 'alpha-1',
          pool: 'alpha',
          assignedTo: 'cy',
        },
      ],
    };
    expect(checkHistory(history([], [], rest))).toEqual([]);
  });

  it('catches a failure that is not a VdiError or whose code is not documented', () => {
    const failed = (name: string, code?: string) =>
      call(
        'claim',
        1,
        2,
        { identity: 'ana' },
        { ok: false, error: { name, message: 'x', ...(code ? { code } : {}) } },
      );
    const found = history(
      [failed('VdiError', 'NO_FREE_MEMBER'), failed('TypeError'), failed('VdiError', 'SOMETHING_NEW')],
      [],
    );
    expect(invariants(found)).toEqual<InvariantName[]>(['undocumented-error', 'undocumented-error']);
  });
});

describe('sliceHistory', () => {
  it('shows the records of the violating member around the violation, in time order', () => {
    const first = lease(100, 'alpha-1', 'ana', 's1');
    const elsewhere = lease(120, 'alpha-2', 'bo', 's9');
    const found = history(
      [told(160, 'ana', 'alpha-1', 's1')],
      [clock(0, start), first, elsewhere, lease(350, 'alpha-1', 'cy', 's2')],
    );
    const [violation] = checkHistory(found);
    if (!violation) throw new Error('expected a violation');
    const slice = sliceHistory(found, violation);
    expect(slice).not.toContain(elsewhere);
    // the Lease changes of alpha-1 with their audited writes, and the claim's call
    expect(slice.map((record) => (record.kind === 'call' ? record.startedAt : record.at))).toEqual([
      0, 100, 100, 110, 350, 350,
    ]);
  });

  it("shows a member's last records for a violation at rest, however long before, and the Lease's marks", () => {
    const claimed = lease(100, 'alpha-9', 'cy', 's3');
    const marked = lease(200, 'alpha-9', 'cy', 's3', { resetDue: 's3' });
    const restLease = lease(60_000, 'alpha-9', 'cy', 's3', { resetDue: 's3' });
    const found = history([], [clock(0, start), claimed, marked], {
      leases: [restLease],
      vms: [],
      now: start,
    });
    const violation = checkHistory(found).find((each) => each.invariant === 'presentation-at-rest');
    if (!violation) throw new Error('expected a violation at rest');
    expect(violation.message).toContain('does not exist; session s3');
    expect(violation.message).toContain('marked reset-due s3');
    const slice = sliceHistory(found, violation);
    expect(slice).toContain(claimed);
    expect(slice).toContain(marked);
    expect(slice.some((record) => record.kind === 'clock')).toBe(false);
  });
});
