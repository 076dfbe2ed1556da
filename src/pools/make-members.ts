import { defaultCloneTimeoutMs } from '../desktop-backend.js';
import { VdiError } from '../errors.js';
import {
  defaultCloneConcurrency,
  type MakeMembersInput,
  type MemberOutcome,
  type MemberSource,
  type PoolMemberFactory,
} from './pool-member-factory.js';

/**
 * Makes `members` from `source`; on a failure it removes what was made (unless `keepPartial`) and reports
 * member by member.
 *
 * @throws {@link VdiError} `CLONE_FAILED` (retryable when another call took a member's name), `CLONE_TIMEOUT`,
 *   `FORBIDDEN` when the identity lacks a permission a member needed, or `CANCELLED` when `signal` aborted it,
 *   with `details.members`.
 */
export async function makeMembers(
  factory: PoolMemberFactory,
  source: MemberSource,
  options: Omit<MakeMembersInput, 'concurrency' | 'timeoutMs'> & {
    concurrency?: number | undefined;
    timeoutMs?: number | undefined;
    keepPartial?: boolean | undefined;
    doing: string;
  },
): Promise<void> {
  const input = {
    ...options,
    concurrency: options.concurrency ?? defaultCloneConcurrency,
    timeoutMs: options.timeoutMs ?? defaultCloneTimeoutMs,
    keepPartial: options.keepPartial ?? false,
  };
  const outcomes = await source.makeMembers(input);
  if (outcomes.every((outcome) => outcome.status === 'ready')) return;
  let cleanup: string;
  if (input.keepPartial) {
    const made = outcomes.filter((outcome) => outcome.status === 'ready').map((outcome) => outcome.member);
    cleanup = `Kept as asked: ${made.length > 0 ? made.join(', ') : 'no member was ready'}, and the clone objects of the failed members for inspection. Delete the pool to remove them.`;
  } else {
    try {
      await factory.removeMade({ ...input, outcomes });
      const left = outcomes.filter((outcome) => outcome.cloneLeft !== undefined);
      const held = outcomes.filter((outcome) => outcome.heldBy !== undefined);
      const kept =
        held.length === 0
          ? ''
          : ` except ${held.map((outcome) => `${outcome.member} (held by ${outcome.heldBy})`).join(', ')}, which a claim took before this call gave up: it stays a member of the pool`;
      cleanup =
        left.length === 0
          ? `Everything this call made was removed again${kept}.`
          : `The members this call made were removed again${kept}, but not the finished clone objects ${left.map((outcome) => outcome.clone).join(', ')} (${left[0]?.cloneLeft}); they make nothing more: once the permission is granted, remove them with "${removeClonesCommand(input.namespace, left)}", or a later create of the pool replaces them.`;
    } catch (error) {
      cleanup = `Removing what was made failed (${(error as Error).message}); delete the pool to remove what remains.`;
    }
  }
  throw makeFailure(outcomes, input, cleanup);
}

// only the VM factory leaves objects behind (`cloneLeft`): its members' VirtualMachineClones
function removeClonesCommand(namespace: string, left: readonly MemberOutcome[]): string {
  const names = left.map((outcome) => outcome.clone).join(' ');
  return `kubectl delete virtualmachineclones.clone.kubevirt.io -n ${namespace} ${names}`;
}

function makeFailure(
  outcomes: MemberOutcome[],
  input: {
    namespace: string;
    pool: string;
    keepPartial: boolean;
    doing: string;
    signal?: AbortSignal | undefined;
  },
  cleanup: string,
): VdiError {
  const first = outcomes.find((outcome) => outcome.status !== 'ready' && outcome.status !== 'not-started');
  // a timeout's own words lead, as the original's message that users search for does
  const lead = first?.status === 'timed-out' && first.error ? first : undefined;
  const report = outcomes
    .filter((outcome) => outcome.status !== 'ready' || input.keepPartial)
    .map((outcome) => {
      const error = outcome.error && outcome !== lead ? ` (${outcome.error})` : '';
      return `${outcome.member}: ${outcome.status}${error}`;
    })
    .join('; ');
  const cancelled = input.signal?.aborted === true;
  // a missing permission is the caller's to fix, whichever step of making a member it stopped
  const code = cancelled
    ? 'CANCELLED'
    : first?.code === 'FORBIDDEN'
      ? 'FORBIDDEN'
      : first?.status === 'timed-out'
        ? 'CLONE_TIMEOUT'
        : 'CLONE_FAILED';
  const what = cancelled ? 'was cancelled' : 'failed';
  const message = `${input.doing} ${what}: ${report}. ${cleanup}`;
  return new VdiError(code, lead ? `${lead.error} ${message}` : message, {
    // a name another call took is free to plan again once that call is done
    retryable: code === 'CLONE_TIMEOUT' || first?.status === 'taken',
    details: { pool: input.pool, namespace: input.namespace, members: outcomes, kept: input.keepPartial },
  });
}
