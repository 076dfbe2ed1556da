import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { canOpenConsole } from '../claims/access.js';
import { readMemberAs } from '../claims/read-held-member.js';
import { rdpPort } from '../connect-facts.js';
import { backendFor, type VdiContext } from '../context.js';
import type { DesktopKind } from '../desktop-backend.js';
import { checkHolderEntitlement } from '../entitlements/pool-entitlement.js';
import { VdiError } from '../errors.js';
import { formatDesktopId } from '../ids.js';
import { rdpTokensAnnotation } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import { leaseNameFor } from '../lease-name.js';
import { parseRfc3339 } from '../parse-time.js';
import { claimKeyOf } from '../sessions/claim-key.js';
import { updateClaimLease } from '../sessions/update-claim-lease.js';
import type { Caller } from './caller-access.js';

/** How long a minted RDP proxy token may be used: the page asks for one right before it opens the socket. */
export const rdpTokenTtlMs = 60_000;
// A page that mints and never connects leaves an entry until it expires; more than this are dropped, oldest first.
const maxTokensPerClaim = 8;

/** The guest an RDP console of a desktop reaches, as the broker resolved it from the running instance. */
export interface RdpTarget {
  desktopId: string;
  namespace: string;
  member: string;
  /** The guest's own address, from the VMI; never what a client names. */
  host: string;
  port: number;
  /** The claim's Lease as read: the token is bound to its claim. */
  lease: LeaseObject;
}

/**
 * Checks that `caller` may open the RDP console of a desktop (the holder or an admin, a holder its pool still lets
 * in, a VM that runs with an address) and resolves the guest's address from its running instance.
 *
 * @throws `VdiError` `UNAUTHENTICATED`, `NOT_HOLDER`, `CLAIM_ENDED`, `CLAIM_EXPIRED`, `NOT_ENTITLED`,
 *   `MEMBER_NOT_FOUND`, `UNSUPPORTED_BACKEND` (a container), `DESKTOP_STOPPED` (not running, or no address yet).
 */
export async function resolveRdpTarget(
  ctx: VdiContext,
  target: { kind: DesktopKind; namespace: string; member: string; caller: Caller },
): Promise<RdpTarget> {
  const { kind, namespace, member, caller } = target;
  const desktopId = formatDesktopId({ kind, namespace, member });
  if (kind !== 'vm')
    throw new VdiError(
      'UNSUPPORTED_BACKEND',
      `${desktopId} has no rdp console: a container desktop offers terminal.`,
      { details: { desktopId } },
    );
  const { facts, marks, lease } = await readMemberAs(ctx, backendFor(ctx, kind), {
    namespace,
    member,
    identity: caller.login,
    isAdmin: caller.admin,
    decide: (request) => canOpenConsole({ ...request, doing: 'open the rdp console of' }),
  });
  if (facts) {
    const asker = { identity: caller.login, groups: caller.groups, isAdmin: caller.admin };
    await checkHolderEntitlement(ctx, { kind, namespace, pool: facts.pool, ...asker, lease });
  }
  if (marks.power !== 'running' || !facts?.address || !lease) {
    throw new VdiError(
      'DESKTOP_STOPPED',
      marks.power === 'running'
        ? `${desktopId} runs but has no address yet, so its rdp console cannot open; try again in a moment.`
        : `${desktopId} is not running, so its rdp console cannot open; start the desktop first and open the console once it runs.`,
      { details: { desktopId } },
    );
  }
  return { desktopId, namespace, member, host: facts.address, port: rdpPort, lease };
}

interface TokenEntry {
  hash: string;
  caller: string;
  expiresAt: string;
}

const digest = (text: string) => createHash('sha256').update(text).digest('base64url');

function readEntries(lease: LeaseObject): TokenEntry[] {
  try {
    const parsed: unknown = JSON.parse(lease.metadata.annotations?.[rdpTokensAnnotation] ?? '[]');
    if (!Array.isArray(parsed)) return [];
    return parsed.filter(
      (entry): entry is TokenEntry =>
        typeof entry?.hash === 'string' &&
        typeof entry.caller === 'string' &&
        typeof entry.expiresAt === 'string',
    );
  } catch {
    // a hand-edited annotation holds no usable token; the next write replaces it
    return [];
  }
}

function withEntries(lease: LeaseObject, entries: TokenEntry[]): LeaseObject {
  const annotations = { ...lease.metadata.annotations };
  if (entries.length === 0) delete annotations[rdpTokensAnnotation];
  else annotations[rdpTokensAnnotation] = JSON.stringify(entries);
  return { ...lease, metadata: { ...lease.metadata, annotations } };
}

const isLive = (entry: TokenEntry, now: Date) =>
  (parseRfc3339(entry.expiresAt)?.getTime() ?? 0) > now.getTime();

/** A minted RDP proxy token. @category broker */
export interface MintedRdpToken {
  token: string;
  expiresAt: string;
}

/**
 * Mints a single-use RDP proxy token for `caller` on the claim of `target`: 32 random bytes, of which the claim's
 * Lease keeps only the SHA-256 digest, the caller's digest and the expiry ({@link rdpTokenTtlMs}). Every replica
 * reads the same Lease, and a new claim is a new Lease, so the token is useless once the claim ends.
 *
 * @throws `VdiError` `CLAIM_ENDED` when the claim ended meanwhile.
 */
export async function mintRdpToken(
  ctx: VdiContext,
  target: RdpTarget,
  caller: Caller,
): Promise<MintedRdpToken> {
  const token = randomBytes(32).toString('base64url');
  const now = ctx.clock.now();
  const expiresAt = new Date(now.getTime() + rdpTokenTtlMs).toISOString();
  const entry = { hash: digest(token), caller: digest(caller.login), expiresAt };
  const written = await updateClaimLease(
    ctx,
    {
      namespace: target.namespace,
      name: leaseNameFor(target.member),
      claim: claimKeyOf(target.lease),
      known: target.lease,
    },
    (lease) =>
      withEntries(
        lease,
        [...readEntries(lease).filter((kept) => isLive(kept, now)), entry].slice(-maxTokensPerClaim),
      ),
  );
  if (written.kind === 'gone')
    throw new VdiError('CLAIM_ENDED', `The claim of ${target.desktopId} ended; claim a desktop again.`);
  return { token, expiresAt };
}

/** Why a token was refused, with the HTTP status the error PDU carries. */
export type RdpTokenCheck = { kind: 'accepted' } | { kind: 'refused'; status: 401 | 403; reason: string };

/**
 * Uses up a token on the claim of `target`: it must have been minted for this claim and this caller, not be
 * expired and not used yet. The entry is removed with the Lease's resourceVersion as precondition, so of two
 * replicas given the same token at once one wins and the other reads it gone.
 */
export async function consumeRdpToken(
  ctx: VdiContext,
  target: RdpTarget,
  caller: Caller,
  token: string | undefined,
): Promise<RdpTokenCheck> {
  if (token === undefined || token === '')
    return { kind: 'refused', status: 401, reason: 'the request carries no proxy token' };
  const hash = Buffer.from(digest(token));
  const now = ctx.clock.now();
  let check: RdpTokenCheck = { kind: 'refused', status: 401, reason: 'the claim ended' };
  await updateClaimLease(
    ctx,
    { namespace: target.namespace, name: leaseNameFor(target.member), claim: claimKeyOf(target.lease) },
    (lease) => {
      const entries = readEntries(lease);
      const found = entries.find((entry) => {
        const stored = Buffer.from(entry.hash);
        return stored.length === hash.length && timingSafeEqual(stored, hash);
      });
      if (!found) {
        check = {
          kind: 'refused',
          status: 401,
          reason: 'the token is unknown to this claim, or already used',
        };
        return undefined;
      }
      if (!isLive(found, now)) {
        check = { kind: 'refused', status: 401, reason: 'the token expired' };
        return withEntries(
          lease,
          entries.filter((entry) => entry !== found),
        );
      }
      if (found.caller !== digest(caller.login)) {
        // another caller's token stays for its owner
        check = { kind: 'refused', status: 403, reason: 'the token was minted for another caller' };
        return undefined;
      }
      check = { kind: 'accepted' };
      return withEntries(
        lease,
        entries.filter((entry) => entry !== found && isLive(entry, now)),
      );
    },
  );
  return check;
}
