// One storm process: its own createVdi and seeded choices, every call and its outcome as a JSON line on stdout.
import { KubeConfig } from '@kubernetes/client-node';
import { isVdiError } from '../../src/errors.js';
import { leaseDurationSeconds, leaseMemberLabel } from '../../src/keys.js';
import { KubeCluster } from '../../src/kube/cluster.js';
import { simulatorAnnotations } from '../../src/testing/kubevirt/fault-knobs.js';
import { waitFor } from '../../src/testing/wait-for.js';
import { createVdi, type Vdi } from '../../src/vdi.js';
import type { DriverConfig, DriverLine, StormPool } from './driver-protocol.js';
import type { CallAnswer, CallError, CallRecord } from './history.js';
import { createPrng, derivedSeed } from './prng.js';
import { advanceSharedClock, followSharedClock } from './shared-clock.js';

/** How often each operation is chosen, relative to the others. */
const operationWeights = {
  claim: 18,
  'double-claim': 7,
  assign: 6,
  release: 16,
  unassign: 4,
  renew: 7,
  start: 7,
  read: 4,
  tick: 8,
  expiry: 1,
  'expire-lease': 2,
  shrink: 3,
  grow: 4,
  'delete-pool': 1,
  // a claim answered, then its holder's release, an admin's unassign and two claims of the pool at once, and in
  // every other one a shrink of the pool
  contest: 0,
} as const;

type Operation = keyof typeof operationWeights;

function write(line: DriverLine): void {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

function describeError(error: unknown): CallError {
  if (isVdiError(error)) return { name: error.name, code: error.code, message: error.message };
  if (error instanceof Error) return { name: error.name, message: error.message };
  return { name: typeof error, message: String(error) };
}

function answerOf(result: unknown): CallAnswer | undefined {
  if (typeof result !== 'object' || result === null) return undefined;
  const { member, sessionId, owner } = result as Record<string, unknown>;
  return {
    ...(typeof member === 'string' ? { member } : {}),
    ...(typeof sessionId === 'string' ? { sessionId } : {}),
    ...(typeof owner === 'string' ? { owner } : {}),
  };
}

/** Sets a Lease's renewal back past its duration: a holder that stopped renewing, whose claim is anyone's to take. */
async function expireLease(
  kube: KubeCluster,
  namespace: string,
  member: string,
  now: Date,
): Promise<boolean> {
  const lease = (await kube.listLeases(namespace)).find(
    (found) => found.metadata.labels?.[leaseMemberLabel] === member,
  );
  if (!lease) return false;
  const expiredAt = new Date(now.getTime() - (leaseDurationSeconds + 60) * 1000);
  // a write that lost to another is left lost: the storm expires another Lease later
  await kube
    .replaceLease(namespace, { ...lease, spec: { ...lease.spec, renewTime: expiredAt.toISOString() } })
    .catch((error: unknown) => {
      if (!isVdiError(error, 'CONFLICT', 'NOT_FOUND')) throw error;
    });
  return true;
}

async function main(config: DriverConfig): Promise<void> {
  const clockConfig = new KubeConfig();
  clockConfig.loadFromFile(config.kubeconfigPath);
  const clock = followSharedClock(clockConfig, config.namespace, (error) =>
    write({
      kind: 'driver-error',
      proc: config.proc,
      message: `clock watch: ${describeError(error).message}`,
    }),
  );
  await clock.ready;
  await waitFor(() => clock.now(), { describe: `the shared clock of ${config.namespace}` });
  // What this process was told each identity holds, per pool; releases and starts mostly aim there.
  const beliefs = new Map<string, string>();
  let seq = 0;
  let group = 0;
  let done = 0;

  const runLane = async (lane: number) => {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(config.lanes[lane]?.kubeconfigPath ?? '');
    const vdi = createVdi({ kubeConfig, namespace: config.namespace, clock });
    const kube = new KubeCluster(kubeConfig);
    const random = createPrng(derivedSeed(config.seed, lane));

    const call = async (
      op: string,
      target: Pick<CallRecord, 'identity' | 'pool' | 'member' | 'asAdmin' | 'group'>,
      run: () => Promise<unknown>,
    ): Promise<unknown> => {
      seq += 1;
      const record = {
        kind: 'call' as const,
        proc: config.proc,
        lane,
        seq,
        op,
        ...target,
        startedAt: Date.now(),
      };
      try {
        const result = await run();
        const answer = answerOf(result);
        write({ ...record, endedAt: Date.now(), outcome: { ok: true, ...(answer ? { answer } : {}) } });
        return result;
      } catch (error) {
        write({ ...record, endedAt: Date.now(), outcome: { ok: false, error: describeError(error) } });
        return undefined;
      }
    };

    const remember = (identity: string, pool: string, result: unknown) => {
      const member = answerOf(result)?.member;
      if (member !== undefined) beliefs.set(`${identity}/${pool}`, member);
    };

    // Mostly a member the identity was told it holds; sometimes any member name, held or not, existing or not.
    const target = (pool: StormPool): { identity: string; member: string } => {
      const identity = random.pick(config.identities);
      const believed = beliefs.get(`${identity}/${pool.name}`);
      if (believed !== undefined && random.next() < 0.75) return { identity, member: believed };
      return { identity, member: `${pool.name}-${1 + random.below(config.maxPoolSize)}` };
    };

    const slowDown = async (members: string[]) => {
      for (const member of members)
        await kube
          .patchVm(config.namespace, member, {
            metadata: { annotations: { [simulatorAnnotations.stopDelayMs]: String(config.slowStopMs) } },
          })
          // a shrink in another process may have removed it already
          .catch((error: unknown) => {
            if (!isVdiError(error, 'NOT_FOUND', 'MEMBER_NOT_FOUND')) throw error;
          });
    };

    const poolSize = async (pool: StormPool): Promise<number | undefined> => {
      const view = (await call('get-pool', { pool: pool.name }, () => vdi.getPool({ name: pool.name }))) as
        | Awaited<ReturnType<Vdi['getPool']>>
        | undefined;
      return view?.members.length;
    };

    const run = async (op: Operation, pool: StormPool) => {
      switch (op) {
        case 'claim': {
          const identity = random.pick(config.identities);
          remember(
            identity,
            pool.name,
            await call(op, { identity, pool: pool.name }, () => vdi.claim({ pool: pool.name, identity })),
          );
          return;
        }
        case 'double-claim': {
          const identity = random.pick(config.identities);
          group += 1;
          const both = await Promise.all(
            [0, 1].map(() =>
              call('claim', { identity, pool: pool.name, group }, () =>
                vdi.claim({ pool: pool.name, identity }),
              ),
            ),
          );
          for (const result of both) remember(identity, pool.name, result);
          return;
        }
        case 'assign': {
          const identity = random.pick(config.identities);
          const result = await call(op, { identity, pool: pool.name }, () =>
            vdi.assign({ pool: pool.name, identity, actor: config.admin }),
          );
          remember(identity, pool.name, result);
          return;
        }
        case 'release': {
          const { identity, member } = target(pool);
          if (
            (await call(op, { identity, pool: pool.name, member }, () =>
              vdi.release({ member, identity }),
            )) !== undefined
          )
            beliefs.delete(`${identity}/${pool.name}`);
          return;
        }
        case 'unassign': {
          const { member } = target(pool);
          await call(op, { identity: config.admin, pool: pool.name, member, asAdmin: true }, () =>
            vdi.unassign({ member, identity: config.admin, asAdmin: true }),
          );
          return;
        }
        case 'renew': {
          const { identity, member } = target(pool);
          await call(op, { identity, pool: pool.name, member }, () => vdi.renew({ member, identity }));
          return;
        }
        case 'start': {
          const { identity, member } = target(pool);
          await call(op, { identity, pool: pool.name, member }, () => vdi.start({ member, identity }));
          return;
        }
        case 'read': {
          const { member } = target(pool);
          await call(op, { pool: pool.name, member }, () => vdi.getDesktop({ member }));
          return;
        }
        case 'tick':
          await advanceSharedClock(kubeConfig, config.namespace, 5_000 + random.below(10_000));
          return;
        case 'expiry':
          // Past every Lease's hour: each claim not renewed since is the next claimant's to take.
          await advanceSharedClock(kubeConfig, config.namespace, (leaseDurationSeconds + 60) * 1000);
          return;
        case 'expire-lease': {
          const { member } = target(pool);
          await call(op, { pool: pool.name, member }, () =>
            expireLease(kube, config.namespace, member, clock.now()),
          );
          return;
        }
        case 'shrink': {
          const size = await poolSize(pool);
          if (size === undefined || size <= 1) return;
          await call(op, { identity: config.admin, pool: pool.name }, () =>
            vdi.resizePool({ name: pool.name, size: size - 1, identity: config.admin }),
          );
          return;
        }
        case 'grow': {
          const size = await poolSize(pool);
          if (size !== undefined && size >= config.maxPoolSize) return;
          const result = (await call(op, { identity: config.admin, pool: pool.name }, () =>
            size === undefined
              ? vdi.createPool({
                  name: pool.name,
                  from: config.golden,
                  size: 2,
                  ephemeral: pool.ephemeral,
                  identity: config.admin,
                })
              : vdi.resizePool({ name: pool.name, size: size + 1, identity: config.admin }),
          )) as { added?: string[]; members?: string[] } | undefined;
          if (pool.slowStop) await slowDown(result?.added ?? result?.members ?? []);
          return;
        }
        case 'contest': {
          const identity = random.pick(config.identities);
          // every other contest races a shrink of the pool too, which removes a free member
          const size = random.next() < 0.5 ? await poolSize(pool) : undefined;
          const claimed = await call('claim', { identity, pool: pool.name }, () =>
            vdi.claim({ pool: pool.name, identity }),
          );
          const member = answerOf(claimed)?.member;
          if (member === undefined) return;
          beliefs.delete(`${identity}/${pool.name}`);
          const other = random.pick(config.identities);
          const shrinking =
            size !== undefined && size > 2
              ? call('shrink', { identity: config.admin, pool: pool.name }, () =>
                  vdi.resizePool({ name: pool.name, size: size - 1, identity: config.admin }),
                )
              : undefined;
          const results = await Promise.all([
            call('release', { identity, pool: pool.name, member }, () => vdi.release({ member, identity })),
            call('unassign', { identity: config.admin, pool: pool.name, member, asAdmin: true }, () =>
              vdi.unassign({ member, identity: config.admin, asAdmin: true }),
            ),
            call('claim', { identity, pool: pool.name }, () => vdi.claim({ pool: pool.name, identity })),
            call('claim', { identity: other, pool: pool.name }, () =>
              vdi.claim({ pool: pool.name, identity: other }),
            ),
          ]);
          await shrinking;
          remember(identity, pool.name, results[2]);
          remember(other, pool.name, results[3]);
          return;
        }
        case 'delete-pool':
          await call(op, { identity: config.admin, pool: pool.name }, () =>
            vdi.deletePool({ name: pool.name, identity: config.admin }),
          );
          return;
      }
    };

    const weights = { ...operationWeights, contest: config.contestWeight ?? 0 };
    const mayStartAnother = () =>
      done < config.ops &&
      (Date.now() < config.deadline || (done < config.minOps && Date.now() < config.finalDeadline));
    while (mayStartAnother()) {
      done += 1;
      const op = random.weighted(weights);
      const pool = random.pick(config.pools);
      try {
        await run(op, pool);
      } catch (error) {
        // Only the storm's own steps (moving the clock, slowing guests) get here; SDK calls are recorded above.
        write({ kind: 'driver-error', proc: config.proc, message: `${op}: ${describeError(error).message}` });
      }
    }
  };

  await Promise.all(config.lanes.map((_, lane) => runLane(lane)));
  clock.stop();
  write({ kind: 'done', proc: config.proc, ops: done });
}

const argument = process.argv[2];
if (argument === undefined) {
  process.stderr.write('usage: driver.ts <config as JSON>\n');
  process.exit(2);
}
main(JSON.parse(argument) as DriverConfig).then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(
      `driver failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(1);
  },
);
