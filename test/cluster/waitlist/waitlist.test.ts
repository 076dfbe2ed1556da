import { describe, expect, it } from 'vitest';
import type { ClaimResult } from '../../../src/claims/claim-desktop.js';
import { isVdiError, type VdiError } from '../../../src/errors.js';
import { normalizeTime } from '../../../src/format-time.js';
import type { LeaseObject } from '../../../src/kube-objects.js';
import { createTestClock, type TestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi, type Vdi } from '../../../src/vdi.js';
import type { WaitPosition } from '../../../src/waitlist/claim-or-wait.js';
import { enqueueWaiter } from '../../../src/waitlist/waiter-leases.js';
import { waiterLeaseName, waitersSelector } from '../../../src/waitlist/waitlist-keys.js';
import { createPoolMembers, createTestNamespace, useSharedCluster } from '../../support/cluster.js';

const cluster = useSharedCluster();

interface Pool {
  namespace: string;
  clock: TestClock;
  /** A Vdi of its own, as another process or broker replica would have, on the shared clock. */
  replica(): Vdi;
}

async function setUp(prefix: string, size: number): Promise<Pool> {
  const namespace = await createTestNamespace(cluster(), prefix);
  await createPoolMembers(cluster(), namespace, 'devpool', size);
  const clock = createTestClock();
  const replica = () => createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock });
  return { namespace, clock, replica };
}

/** A waiting claim, with what it reported and how it ended, watched without awaiting it. */
interface Waiting {
  identity: string;
  positions: WaitPosition[];
  outcome: { result: ClaimResult } | { error: unknown } | undefined;
  done: Promise<void>;
  abort: AbortController;
}

function startWaiting(vdi: Vdi, identity: string, extra: { waitTimeoutMs?: number } = {}): Waiting {
  const abort = new AbortController();
  const waiting: Waiting = { identity, positions: [], outcome: undefined, done: Promise.resolve(), abort };
  waiting.done = vdi
    .claim({
      pool: 'devpool',
      identity,
      wait: true,
      signal: abort.signal,
      onPosition: (position) => waiting.positions.push(position),
      ...extra,
    })
    .then(
      (result) => {
        waiting.outcome = { result };
      },
      (error: unknown) => {
        waiting.outcome = { error };
      },
    );
  return waiting;
}

async function queued(waiting: Waiting, position: number): Promise<void> {
  await waitFor(() => waiting.positions.at(-1)?.position === position, {
    describe: `${waiting.identity} to report position ${position}`,
  });
}

function claimed(waiting: Waiting): ClaimResult {
  const outcome = waiting.outcome;
  if (!outcome || !('result' in outcome))
    throw new Error(`${waiting.identity} holds nothing: ${String(outcome)}`);
  return outcome.result;
}

function failure(waiting: Waiting): VdiError {
  const outcome = waiting.outcome;
  if (!outcome || !('error' in outcome) || !isVdiError(outcome.error)) {
    throw new Error(`${waiting.identity} did not fail with a VdiError`);
  }
  return outcome.error;
}

/** When a Lease was last renewed, as the SDK writes times (the apiserver answers in microseconds). */
function renewedAt(lease: LeaseObject | undefined): string | undefined {
  return normalizeTime(lease?.spec.renewTime);
}

async function waiterLeases(vdi: Vdi, namespace: string) {
  return await vdi.context.cluster.listLeases(namespace, waitersSelector('devpool'));
}

describe('the waitlist against the real apiserver', () => {
  it('hands released members to waiters first come first served over a scripted storm', async () => {
    const { namespace, clock, replica } = await setUp('wait-storm', 2);
    const admin = replica();
    const holders = await Promise.all(
      ['h1', 'h2'].map((identity) => admin.claim({ pool: 'devpool', identity })),
    );
    const waiters: Waiting[] = [];
    for (let index = 1; index <= 6; index += 1) {
      const waiting = startWaiting(replica(), `w${index}`);
      await queued(waiting, index);
      waiters.push(waiting);
      clock.advance(1000);
    }
    // each release frees one member; the earliest waiter still waiting must be the one that gets it
    const order: string[] = [];
    let violations = 0;
    const toRelease = [...holders.map((held) => ({ identity: held.owner, member: held.member }))];
    for (let round = 0; round < waiters.length; round += 1) {
      const next = toRelease.shift();
      if (!next) throw new Error('nothing left to release');
      await admin.release({ member: next.member, identity: next.identity });
      const winner = await waitFor(() => waiters.find((w) => w.outcome && !order.includes(w.identity)), {
        describe: `a waiter to get ${next.member}`,
      });
      order.push(winner.identity);
      const expected = waiters.find((w) => !order.slice(0, -1).includes(w.identity));
      if (winner.identity !== expected?.identity) violations += 1;
      const won = claimed(winner);
      expect(won.member).toBe(next.member);
      toRelease.push({ identity: winner.identity, member: won.member });
    }
    console.log(
      `waitlist storm: ${waiters.length} waiters, ${waiters.length} releases, order ${order.join(' ')}, order violations: ${violations}`,
    );
    expect(violations).toBe(0);
    expect(order).toEqual(waiters.map((w) => w.identity));
    expect(await waiterLeases(admin, namespace)).toEqual([]);
  });

  it('gives two members released at once to two waiters, one each', async () => {
    const { namespace, clock, replica } = await setUp('wait-race', 2);
    const admin = replica();
    const held = await Promise.all(
      ['h1', 'h2'].map((identity) => admin.claim({ pool: 'devpool', identity })),
    );
    const first = startWaiting(replica(), 'w1');
    await queued(first, 1);
    clock.advance(1000);
    const second = startWaiting(replica(), 'w2');
    await queued(second, 2);
    await Promise.all(
      held.map((desktop) => admin.release({ member: desktop.member, identity: desktop.owner })),
    );
    await Promise.all([first.done, second.done]);
    const members = [claimed(first).member, claimed(second).member];
    expect(new Set(members).size).toBe(2);
    const kube = admin.context.cluster;
    for (const [index, member] of members.entries()) {
      expect((await kube.getLease(namespace, `corral-vdi-${member}`))?.spec.holderIdentity).toBe(
        `w${index + 1}`,
      );
    }
    expect(await waiterLeases(admin, namespace)).toEqual([]);
  });

  it('drops a waiter whose process died once its Lease expires, and serves the next', async () => {
    const { namespace, clock, replica } = await setUp('wait-dead', 1);
    const admin = replica();
    const held = await admin.claim({ pool: 'devpool', identity: 'h1' });
    // what a process that died while waiting leaves: its Lease, renewed no more
    const dead = await enqueueWaiter(admin.context, {
      kind: 'vm',
      namespace,
      pool: 'devpool',
      identity: 'gone',
    });
    clock.advance(1000);
    const next = startWaiting(replica(), 'w2');
    await queued(next, 2);
    await admin.release({ member: held.member, identity: 'h1' });
    const kube = admin.context.cluster;
    await waitFor(
      async () => (await kube.getVm(namespace, held.member))?.status?.printableStatus === 'Stopped',
      {
        describe: `${held.member} to stop`,
      },
    );
    // the dead waiter still holds the member back while its Lease lives; w2 keeps renewing its own
    const ownLease = waiterLeaseName('vm', 'devpool', 'w2');
    for (let step = 1; step <= 2; step += 1) {
      clock.advance(11_000);
      const at = clock.now().toISOString();
      await waitFor(async () => renewedAt(await kube.getLease(namespace, ownLease)) === at, {
        describe: `w2 to renew its waiter Lease at ${at}`,
      });
      expect(next.outcome).toBeUndefined();
    }
    // 34 s after the dead waiter's last renewal: its Lease ran out
    clock.advance(11_000);
    await next.done;
    expect(claimed(next).member).toBe(held.member);
    expect(await kube.getLease(namespace, dead.metadata.name ?? '')).toBeUndefined();
  });

  it('passes over a waiter Lease whose claim landed before a crash kept it from deleting the Lease', async () => {
    const { namespace, clock, replica } = await setUp('wait-crash', 2);
    const admin = replica();
    const held = await admin.claim({ pool: 'devpool', identity: 'h1' });
    // the two writes of a won wait are the member's claim Lease, then the waiter Lease's delete: die between them
    await admin.claim({ pool: 'devpool', identity: 'crashed' });
    await enqueueWaiter(admin.context, { kind: 'vm', namespace, pool: 'devpool', identity: 'crashed' });
    clock.advance(1000);
    const next = startWaiting(replica(), 'w2');
    await queued(next, 1);
    expect(await admin.waitPosition({ pool: 'devpool', identity: 'crashed' })).toBeUndefined();
    await admin.release({ member: held.member, identity: 'h1' });
    await next.done;
    expect(claimed(next).member).toBe(held.member);
  });

  it('cancels a wait by its signal or by cancelWait, and moves those behind it up', async () => {
    const { namespace, clock, replica } = await setUp('wait-cancel', 1);
    const admin = replica();
    await admin.claim({ pool: 'devpool', identity: 'h1' });
    const first = startWaiting(replica(), 'w1');
    await queued(first, 1);
    clock.advance(1000);
    const second = startWaiting(replica(), 'w2');
    await queued(second, 2);
    first.abort.abort();
    await first.done;
    expect(failure(first).code).toBe('CANCELLED');
    await queued(second, 1);
    expect(await admin.waitPosition({ pool: 'devpool', identity: 'w2' })).toMatchObject({
      position: 1,
      waiters: 1,
    });
    // cancelled from another process: it deletes the Lease, and the wait ends at its next renewal
    expect(await admin.cancelWait({ pool: 'devpool', identity: 'w2' })).toBe(true);
    clock.advance(11_000);
    await second.done;
    expect(failure(second).code).toBe('CANCELLED');
    expect(await waiterLeases(admin, namespace)).toEqual([]);
    expect(await admin.cancelWait({ pool: 'devpool', identity: 'w2' })).toBe(false);
  });

  it('times out with a retryable WAIT_TIMED_OUT on the injected clock and leaves the queue', async () => {
    const { namespace, clock, replica } = await setUp('wait-timeout', 1);
    const admin = replica();
    await admin.claim({ pool: 'devpool', identity: 'h1' });
    const waiting = startWaiting(replica(), 'w1', { waitTimeoutMs: 60_000 });
    await queued(waiting, 1);
    const kube = admin.context.cluster;
    clock.advance(30_000);
    const at = clock.now().toISOString();
    await waitFor(
      async () => renewedAt(await kube.getLease(namespace, waiterLeaseName('vm', 'devpool', 'w1'))) === at,
      { describe: `w1 to renew its waiter Lease at ${at}` },
    );
    expect(waiting.outcome).toBeUndefined();
    clock.advance(30_000);
    await waiting.done;
    const error = failure(waiting);
    expect(error).toMatchObject({ code: 'WAIT_TIMED_OUT', retryable: true });
    expect(error.details).toMatchObject({ pool: 'devpool', waitTimeoutMs: 60_000, position: 1 });
    expect(await waiterLeases(admin, namespace)).toEqual([]);
  });

  it('reports each waiter its position, and refuses a claim that does not wait with the queue in details', async () => {
    const { namespace, clock, replica } = await setUp('wait-position', 1);
    const admin = replica();
    const held = await admin.claim({ pool: 'devpool', identity: 'h1' });
    const waiters: Waiting[] = [];
    for (const identity of ['w1', 'w2', 'w3']) {
      const waiting = startWaiting(replica(), identity);
      await queued(waiting, waiters.length + 1);
      waiters.push(waiting);
      clock.advance(1000);
    }
    const positions = await Promise.all(
      ['w1', 'w2', 'w3', 'h1'].map((identity) => admin.waitPosition({ pool: 'devpool', identity })),
    );
    expect(positions.map((position) => position && [position.position, position.waiters])).toEqual([
      [1, 3],
      [2, 3],
      [3, 3],
      undefined,
    ]);
    await admin.release({ member: held.member, identity: 'h1' });
    await waiters[0]?.done;
    await queued(waiters[2] as Waiting, 2);
    // a claim that does not wait may not take a member held for a waiter, and a holder still gets its own
    await admin.release({ member: held.member, identity: 'w1' });
    const refused = await admin.claim({ pool: 'devpool', identity: 'x' }).catch((error: unknown) => error);
    // w2 may have taken the member by now, leaving w3 in the queue
    expect(refused).toMatchObject({ code: 'NO_FREE_MEMBER', details: { waiters: expect.any(Number) } });
    expect((refused as VdiError).details.waiters).toBeGreaterThanOrEqual(1);
    await waiters[1]?.done;
    expect(claimed(waiters[1] as Waiting).member).toBe(held.member);
    const again = await admin.claim({ pool: 'devpool', identity: 'w2', wait: true });
    expect(again).toMatchObject({ member: held.member, retried: true });
    for (const waiting of waiters) waiting.abort.abort();
    await Promise.all(waiters.map((waiting) => waiting.done));
    expect(await waiterLeases(admin, namespace)).toEqual([]);
  });

  it('refuses a wait timeout that is not a positive whole number, writing nothing', async () => {
    const { namespace, replica } = await setUp('wait-input', 1);
    const vdi = replica();
    await vdi.claim({ pool: 'devpool', identity: 'h1' });
    for (const waitTimeoutMs of [0, -5, 1.5]) {
      const error = await vdi
        .claim({ pool: 'devpool', identity: 'w1', wait: true, waitTimeoutMs })
        .catch((caught: unknown) => caught);
      expect(error).toMatchObject({ code: 'INVALID_INPUT' });
    }
    const unasked = await vdi
      .claim({ pool: 'devpool', identity: 'w1', waitTimeoutMs: 1000 })
      .catch((caught: unknown) => caught);
    expect(unasked).toMatchObject({ code: 'INVALID_INPUT' });
    expect(await waiterLeases(vdi, namespace)).toEqual([]);
  });
});
