import { classifyPoolMember } from '../claims/classify-member.js';
import { readMemberClaim } from '../claims/read-member-claim.js';
import { backendFor, type VdiContext } from '../context.js';
import {
  type DesktopBackend,
  type DesktopKind,
  defaultDesktopKind,
  type MemberFacts,
} from '../desktop-backend.js';
import { checkHolderEntitlement } from '../entitlements/pool-entitlement.js';
import { VdiError } from '../errors.js';
import { validateIdentity, validateMemberName, validateNamespace } from '../validate.js';
import { checkDesktopAccess, type DesktopAccess } from './check-desktop-access.js';
import { type LaunchPlan, planLaunch } from './launch-plan.js';
import { type ConnectOption, planConnect, type SkippedProtocol } from './plan-connect.js';

/** Options of {@link connect}. @category connect */
export interface ConnectOptions {
  /** The member (VM) name. */
  member: string;
  /** The caller's identity, as the request pipeline authenticated it. */
  identity: string;
  /** Default: the context's default namespace. */
  namespace?: string;
  /** An admin gets a target for any claimed desktop. */
  asAdmin?: boolean;
  /** How long the RDP probe waits, in milliseconds (default 1500). */
  probeTimeoutMs?: number;
  /** Cancels the probe. */
  signal?: AbortSignal;
  /** The member's kind. @defaultValue `'vm'` */
  kind?: DesktopKind;
  /**
   * The caller's groups, as a front end that serves users passes them: a holder the desktop's pool no longer lets in
   * is then refused (`NOT_ENTITLED`). Left out, the call is an operator's own and is not checked.
   */
  groups?: readonly string[];
}

/** The answer of {@link connect}. @category connect */
export interface ConnectResult {
  /** `vm/<namespace>/<member>`. */
  desktopId: string;
  /** The member's namespace. */
  namespace: string;
  /** The member (VM) name. */
  member: string;
  /** Who holds the claim: the caller, or for an admin, whoever it is. */
  holder: string;
  /** The console to use. */
  target: ConnectOption;
  /** The other consoles on offer, best first. */
  fallbacks: ConnectOption[];
  /** Every protocol not on offer, with the reason. */
  skipped: SkippedProtocol[];
  /** The local command for the target, then for each fallback, in the same order. */
  launches: LaunchPlan[];
}

/** A member the caller may use, with its facts as just read. */
export interface UsableDesktop {
  /** `vm/<namespace>/<member>`. */
  desktopId: string;
  /** The member's namespace. */
  namespace: string;
  /** Who holds it. */
  access: DesktopAccess;
  /** The member as its backend read it; it runs. */
  facts: MemberFacts;
  /** The backend of the member's kind. */
  backend: DesktopBackend;
}

/**
 * Reads a member's claim and facts fresh, and checks that the caller may use it and that it runs. Shared by
 * connect and USB redirection.
 *
 * @throws {@link VdiError} `INVALID_INPUT`, `MEMBER_NOT_FOUND`, `UNSUPPORTED_BACKEND` (a claim without a
 *   member of the served kind), `CLAIM_ENDED`, `CLAIM_EXPIRED`, `NOT_HOLDER`, `NOT_ENTITLED` (with `groups`),
 *   `DESKTOP_STOPPED`.
 */
export async function readUsableDesktop(
  ctx: VdiContext,
  options: {
    member: string;
    identity: string;
    namespace?: string;
    asAdmin?: boolean;
    kind?: DesktopKind;
    groups?: readonly string[] | undefined;
    action: string;
  },
): Promise<UsableDesktop> {
  const { member, identity, action } = options;
  validateMemberName(member);
  validateIdentity(identity);
  const namespace = validateNamespace(options.namespace ?? ctx.defaultNamespace);
  const backend = backendFor(ctx, options.kind ?? defaultDesktopKind);
  const { facts, lease } = await readMemberClaim(ctx, backend, { namespace, member });
  if (facts === undefined) {
    if (lease !== undefined) {
      throw new VdiError(
        'UNSUPPORTED_BACKEND',
        backend.kind === 'vm'
          ? `Member ${member} in ${namespace} has a claim but no KubeVirt VirtualMachine; if it is a container desktop, use --kind ct.`
          : `Member ${member} in ${namespace} has a claim but no Pod; if it is a VM desktop, leave out --kind ct.`,
        { details: { member, namespace } },
      );
    }
    throw new VdiError(
      'MEMBER_NOT_FOUND',
      `No ${backend.kind === 'vm' ? 'VirtualMachine' : 'Pod'} ${member} in namespace ${namespace}; check the member name, -n and --kind.`,
      { details: { member, namespace } },
    );
  }
  const { desktopId } = facts;
  const state = classifyPoolMember({ member: facts, lease, identity, now: ctx.clock.now() });
  const access = checkDesktopAccess(state, { desktopId, asAdmin: options.asAdmin ?? false, action });
  if (options.groups !== undefined) {
    const asker = { identity, groups: options.groups, isAdmin: options.asAdmin ?? false };
    await checkHolderEntitlement(ctx, { kind: backend.kind, namespace, pool: facts.pool, ...asker, lease });
  }
  if (facts.power !== 'running') {
    throw new VdiError('DESKTOP_STOPPED', `${desktopId} is not running; start it first, then ${action} it.`, {
      details: { desktop: desktopId, phase: facts.phase },
    });
  }
  return { desktopId, namespace, access, facts, backend };
}

/**
 * Picks the console for a claimed desktop: RDP when the guest's TCP 3389 answers from this machine, else VNC
 * when the VM has a graphics device, with the serial console last. Everything is read and probed again on
 * every call, so a guest whose RDP service starts or stops gets the right answer at its next connect.
 *
 * @example
 * ```ts
 * const result = await connect(ctx, { member: 'devpool-1', identity: 'alice' });
 * console.log(`connect: ${result.target.protocol}: ${result.launches[0]?.argv.join(' ')}`);
 * for (const { protocol, reason } of result.skipped) console.log(`skipped: ${protocol}: ${reason}`);
 * ```
 * @throws {@link VdiError} `CLAIM_ENDED` (404) when the member is not claimed; `CLAIM_EXPIRED` (409) when its
 *   claim ran out, so claim the pool again; `NOT_HOLDER` when another user holds it and the caller is not an
 *   admin; `NOT_ENTITLED` (403), with `groups`, when the desktop's pool no longer lets its holder in;
 *   `DESKTOP_STOPPED` (409) when it does not run, so start it first; `MEMBER_NOT_FOUND`;
 *   `UNSUPPORTED_BACKEND` when the member is not a KubeVirt VM or offers no console at all (the message says
 *   what would give it one); `INVALID_INPUT` for a malformed member name, identity or probe timeout.
 * @category connect
 */
export async function connect(ctx: VdiContext, options: ConnectOptions): Promise<ConnectResult> {
  const desktop = await readUsableDesktop(ctx, { ...options, action: 'connect to' });
  const { desktopId, namespace, backend } = desktop;
  const facts = await backend.gatherConnectFacts(
    { namespace, member: options.member },
    {
      ...(options.probeTimeoutMs === undefined ? {} : { probeTimeoutMs: options.probeTimeoutMs }),
      ...(options.signal ? { signal: options.signal } : {}),
    },
  );
  const plan = planConnect(facts);
  if (plan.kind === 'no-target') {
    throw new VdiError('UNSUPPORTED_BACKEND', plan.advice, {
      details: { desktop: desktopId, skipped: plan.skipped },
    });
  }
  const { target, fallbacks, skipped } = plan;
  return {
    desktopId,
    namespace,
    member: options.member,
    holder: desktop.access.holder,
    target,
    fallbacks,
    skipped,
    launches: [target, ...fallbacks].map(planLaunch),
  };
}
