import type { VdiContext } from '../context.js';
import { isVdiError, VdiError } from '../errors.js';
import { shortHash } from '../hash.js';
import type { LeaseObject } from '../kube-objects.js';
import { validateNamespace } from '../validate.js';

/** Label on the Lease that records when a login's broker sessions were ended. @category keys */
export const sessionEndsLabel = 'corral.dev/vdi-session-ends';
/** Annotation on that Lease: the login it is for. @category keys */
export const sessionEndsLoginAnnotation = 'corral.dev/vdi-login';
/** Annotation on that Lease: a session signed in at or before this time (RFC 3339, ms) is over. @category keys */
export const sessionsEndedAtAnnotation = 'corral.dev/vdi-sessions-ended-at';

/**
 * When each login's broker sessions were last ended, by its sign-out or by an admin: one Lease per login,
 * `corral-sessions-<hash(login)>`, in one namespace that every broker replica serves. Reads come from the process's
 * watch cache of that namespace's Leases when it is synced (no request), else one get; an end is one write.
 *
 * @category broker
 */
export interface SessionEnds {
  /** The namespace the Leases are in. */
  readonly namespace: string;
  /** When the login's sessions were last ended: a session signed in at or before it is over; `undefined` for never. */
  endedAt(login: string): Promise<Date | undefined>;
  /**
   * Ends every session of the login signed in at or before `at`, in every browser and on every replica; an earlier
   * `at` than one recorded changes nothing.
   *
   * @throws {@link VdiError} `INVALID_INPUT` for an empty login; `FORBIDDEN` without the right to write Leases in
   *   the namespace; `CONFLICT` (retryable) when other ends of the same login kept racing this one.
   */
  end(login: string, at: Date): Promise<void>;
}

/** The name of the Lease that records when a login's sessions were ended. @category broker */
export function sessionEndsLeaseName(login: string): string {
  // not `corral-vdi-…`, the prefix of the claim Leases, so no reader takes it for a member's claim
  return `corral-sessions-${shortHash(login)}`;
}

function endedAtOf(lease: LeaseObject | undefined, login: string): Date | undefined {
  const annotations = lease?.metadata.annotations;
  // another login whose hash is the same has its own record here: not this one's
  if (annotations?.[sessionEndsLoginAnnotation] !== login) return undefined;
  const at = Date.parse(annotations[sessionsEndedAtAnnotation] ?? '');
  return Number.isNaN(at) ? undefined : new Date(at);
}

function recordOf(namespace: string, login: string, at: Date, resourceVersion?: string): LeaseObject {
  return {
    metadata: {
      name: sessionEndsLeaseName(login),
      namespace,
      labels: { [sessionEndsLabel]: 'true' },
      annotations: { [sessionEndsLoginAnnotation]: login, [sessionsEndedAtAnnotation]: at.toISOString() },
      ...(resourceVersion === undefined ? {} : { resourceVersion }),
    },
    spec: {},
  };
}

/**
 * The record of ended sessions in `namespace`, kept with the SDK's credentials (`get`, `create` and `update` on
 * Leases there). Pass it to `createOidcSignIn`'s `sessionEnds`; `corral-vdi broker end-sessions` ends a login's
 * sessions through it.
 *
 * @throws {@link VdiError} `INVALID_INPUT` for a namespace that is not a valid name.
 * @category broker
 */
export function createSessionEnds(ctx: VdiContext, namespace: string): SessionEnds {
  validateNamespace(namespace);
  const read = async (login: string): Promise<LeaseObject | undefined> => {
    const name = sessionEndsLeaseName(login);
    const cache = ctx.cluster.cachesOf(namespace)?.leases;
    return cache?.isSynced() ? cache.get(name) : await ctx.cluster.getLease(namespace, name);
  };
  return {
    namespace,
    async endedAt(login) {
      return endedAtOf(await read(login), login);
    },
    async end(login, at) {
      if (login === '') throw new VdiError('INVALID_INPUT', 'Name the login whose sessions to end.');
      // a lost race reads again: the other end may have been later, and the later one stays
      for (let attempt = 0; attempt < 5; attempt += 1) {
        const current = await ctx.cluster.getLease(namespace, sessionEndsLeaseName(login));
        const recorded = endedAtOf(current, login);
        if (recorded !== undefined && recorded >= at) return;
        try {
          if (current === undefined) await ctx.cluster.createLease(namespace, recordOf(namespace, login, at));
          else {
            const version = current.metadata.resourceVersion;
            await ctx.cluster.replaceLease(namespace, recordOf(namespace, login, at, version));
          }
          return;
        } catch (error) {
          if (!isVdiError(error, 'CONFLICT')) throw error;
        }
      }
      throw new VdiError('CONFLICT', `Other sign-outs of ${login} kept racing this one; try again.`, {
        retryable: true,
      });
    },
  };
}
