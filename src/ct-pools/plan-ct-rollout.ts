import type { MemberFacts } from '../desktop-backend.js';
import type { LeaseObject } from '../kube-objects.js';
import type { PoolRollout } from '../pool-rollout.js';
import { planRollout, type RolloutPlan } from '../rollouts/plan-rollout.js';

/** What {@link planCtRollout} looks at: a container pool as one reconcile pass read it. @category ct-pools */
export interface CtRolloutInput {
  /** The roll-out to the spec's image; its journal (`rebuilding`) names the members whose replacement began. */
  rollout: PoolRollout;
  /** Every member found, with its Pod's facts (`undefined` while it has no Pod). */
  members: ReadonlyArray<{ member: string; pod: MemberFacts | undefined }>;
  leases: readonly LeaseObject[];
  /** Which members no claim holds (a removal's Lease holds nobody), by name. */
  free: ReadonlyMap<string, boolean>;
  /** Ready free members the pool keeps for claims now: its schedule's free target, else its `minReady`. */
  buffer: number;
  /** The members the pool wants now. */
  size: number;
  /** The members it has, those a removal is taking away left out. */
  standing: number;
  /** The most members the pool may have: its period's `max`. */
  cap: number;
  now: Date;
}

/**
 * One pass of a container pool's image roll-out, in the words of a VM pool's ({@link planRollout}, whose counts
 * and choice of members it reuses):
 *
 * - `plan`: the VM roll-out's plan of the pass (`onTarget`, `total`, `claimed`, `heldBack`, `done`), a member
 *   counting as on the image only once its new Pod is Ready.
 * - `settled`: journal members whose new Pod is Ready: replaced.
 * - `dropped`: journal members a claim took meanwhile: its release makes them from the image.
 * - `replace`: free members on another image to make again now (journal members left half done included).
 * - `remove`: free members on another image to remove instead, the pool having extra members.
 * - `extra`: members to make beyond the size first, so the buffer stays Ready while old members go.
 * - `recreate`: journal members with no object left (an extra member whose making stopped): made under their name.
 * - `keepsExtras`: free members on another image remain, so the pool's extra members stay for them.
 *
 * @category ct-pools
 */
export interface CtRolloutPlan {
  plan: RolloutPlan;
  settled: string[];
  dropped: string[];
  replace: string[];
  remove: string[];
  extra: number;
  recreate: string[];
  keepsExtras: boolean;
}

/**
 * Plans one pass of a container pool's move to its spec's image. At most `maxUnavailable` members are in the
 * journal at once (being replaced, or extra members starting); a Ready free member is taken only while the Ready
 * free members left stay at the buffer. When the buffer holds every Ready free member back, the pass makes extra
 * members first (within `maxUnavailable` and the cap); once they are Ready, old members are removed in their place
 * rather than replaced. A claimed member is never touched. A paused roll-out finishes its journal and starts
 * nothing new. Pure.
 *
 * @example
 * ```ts
 * const pass = planCtRollout({ rollout, members, leases, free, buffer: 2, size: 3, cap: Infinity, now });
 * // { extra: 1, replace: [], remove: [], … } while all 3 free members run the old image and 2 must stay Ready
 * ```
 * @category ct-pools
 */
export function planCtRollout(input: CtRolloutInput): CtRolloutPlan {
  const { rollout, free, now } = input;
  const readOf = new Map(input.members.map((read) => [read.member, read]));
  const settled: string[] = [];
  const dropped: string[] = [];
  const recreate: string[] = [];
  const pending: string[] = [];
  for (const member of rollout.rebuilding) {
    const read = readOf.get(member);
    const pod = read?.pod;
    if (read === undefined) recreate.push(member);
    else if (!free.get(member)) dropped.push(member);
    else if (pod && !pod.deleting && pod.source === rollout.to && pod.power === 'running')
      settled.push(member);
    else pending.push(member);
  }
  const journal = [...pending, ...recreate];
  const pods = input.members.flatMap((read) => read.pod ?? []);
  const plan = planRollout({
    rollout: { ...rollout, rebuilding: journal },
    members: pods,
    leases: input.leases,
    buffer: input.buffer,
    rollTo: new Map(),
    now,
    readyOnly: true,
  });
  const isOldFree = (member: string) => {
    const pod = readOf.get(member)?.pod;
    // a finished Pod is made again from the image by the reconcile, roll-out or not
    return (
      free.get(member) === true &&
      !!pod &&
      !pod.deleting &&
      !pod.previousInstance &&
      pod.source !== rollout.to
    );
  };
  const resumed = pending.filter(isOldFree);
  const chosen = plan.rebuild.filter(isOldFree);
  const surplus = Math.max(0, input.standing - input.size);
  const remove = chosen.slice(0, surplus);
  const replace = [...resumed, ...chosen.slice(remove.length)];
  const oldLeft = input.members.filter(
    (read) => isOldFree(read.member) && !journal.includes(read.member) && !chosen.includes(read.member),
  ).length;
  const slots = Math.max(0, rollout.maxUnavailable - journal.length - chosen.length);
  const room = Math.max(0, input.cap - (input.standing - remove.length));
  const extra = rollout.paused ? 0 : Math.min(slots, plan.heldBack, oldLeft, room);
  return { plan, settled, dropped, replace, remove, extra, recreate, keepsExtras: oldLeft > 0 };
}
