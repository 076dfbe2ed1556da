import type { VdiContext } from '../context.js';
import type { DesktopBackend, MemberFacts, MemberRef } from '../desktop-backend.js';
import { VdiError } from '../errors.js';
import { formatDesktopId } from '../ids.js';
import { poolLabel } from '../keys.js';
import { podKind } from '../kube/resource-kinds.js';
import { memberNotFoundReason, notPoolMember } from '../member-not-found.js';
import {
  validateClaimToPresent,
  validateIdentity,
  validateMemberName,
  validateNamespace,
  validatePoolName,
} from '../validate.js';
import { desktopContainer, kindLabel } from './ct-keys.js';
import { toCtMemberFacts } from './ct-member-facts.js';
import { requireCtPool } from './ct-pool-store.js';
import { clearCtPresentation, presentCtClaim } from './ct-presentation.js';
import { recreateCtMember } from './recreate-ct-member.js';

// the seam is reachable from every service, so it refuses malformed names before any request goes out
function checkRef(ref: MemberRef & { pool?: string }): void {
  validateNamespace(ref.namespace);
  validateMemberName(ref.member);
  if (ref.pool !== undefined) validatePoolName(ref.pool);
}

function memberNotFound({ namespace, member }: MemberRef): VdiError {
  return new VdiError('MEMBER_NOT_FOUND', memberNotFoundReason('ct', namespace, member), {
    details: { namespace, member },
  });
}

/**
 * The container {@link DesktopBackend}: a pool's members are the Pods labelled `corral.dev/vdi-pool=<pool>` and
 * `corral.dev/vdi-kind=ct`, made from the pool's spec (see {@link applyCtPool}). A member is always ephemeral:
 * a reset deletes its Pod and makes it again from the image (wiping the home volume when the spec says so).
 * Start makes a Pod whose container ended run again from the image, keeping its home; a member has no stopped
 * state, so stop is refused. It offers only its terminal, and takes no USB devices.
 *
 * @example
 * ```ts
 * const cts = createCtBackend(vdi.context);
 * const facts = await cts.readMember({ namespace: 'corral-vms', member: 'devbox-1' });
 * ```
 * @category backends
 */
export function createCtBackend(ctx: VdiContext): DesktopBackend {
  const { cluster } = ctx;

  async function requireMember(ref: MemberRef): Promise<MemberFacts> {
    checkRef(ref);
    const pod = await cluster.resource(podKind).in(ref.namespace).get(ref.member);
    if (!pod) throw memberNotFound(ref);
    if (pod.metadata.labels?.[kindLabel] !== 'ct' || !pod.metadata.labels[poolLabel]) {
      throw notPoolMember('ct', ref, `${poolLabel} and ${kindLabel}=ct labels`);
    }
    return toCtMemberFacts(pod);
  }

  return {
    kind: 'ct',

    async listMembers(namespace, pool) {
      validateNamespace(namespace);
      if (pool !== undefined) validatePoolName(pool);
      const pods = await cluster
        .resource(podKind)
        .in(namespace)
        .list(`${kindLabel}=ct,${pool === undefined ? poolLabel : `${poolLabel}=${pool}`}`);
      return pods.map(toCtMemberFacts);
    },

    async readMember(ref) {
      checkRef(ref);
      const pod = await cluster.resource(podKind).in(ref.namespace).get(ref.member);
      return pod ? await requireMember(ref) : undefined;
    },

    async startMember(ref) {
      const facts = await requireMember(ref);
      if (!facts.previousInstance) return 'already';
      // a container that ended runs again from the image; its holder keeps the home volume
      await recreateCtMember(ctx, { ...ref, pool: facts.pool }, { wipeHome: false });
      return 'changed';
    },

    async stopMember(ref) {
      const facts = await requireMember(ref);
      throw new VdiError(
        'UNSUPPORTED_BACKEND',
        `${facts.desktopId} is a container desktop, which has no stopped state to keep; release it instead (its Pod is made again from the image).`,
        { details: { desktopId: facts.desktopId } },
      );
    },

    async resetMember(ref, options = {}) {
      checkRef(ref);
      await recreateCtMember(ctx, ref, { ...options, wipeHome: true });
      return 'recreated';
    },

    async presentClaim(facts, claim) {
      checkRef({ namespace: facts.namespace, member: facts.member });
      validateClaimToPresent(claim);
      // a container member is made again by its release, which leaves no record: its claim checks its Lease
      const resourceVersion = await presentCtClaim(ctx, facts, claim, memberNotFound);
      if (resourceVersion === undefined) return { kind: 'changed' };
      return { kind: 'presented', resourceVersion, started: false, sealed: false };
    },

    async clearPresentation(ref, holder, sessionId) {
      checkRef(ref);
      validateIdentity(holder);
      return await clearCtPresentation(ctx, ref, holder, sessionId);
    },

    async gatherConnectFacts(ref) {
      const facts = await requireMember(ref);
      if (facts.power !== 'running') {
        throw new VdiError(
          'DESKTOP_STOPPED',
          `${facts.desktopId} is not running (its Pod is ${facts.phase}); wait until it is Ready, or start it if its container ended.`,
          { details: { desktop: facts.desktopId, phase: facts.phase } },
        );
      }
      const { spec } = await requireCtPool(ctx, ref.namespace, facts.pool);
      return { kind: 'ct', namespace: facts.namespace, pod: facts.member, shell: spec.shell };
    },

    async checkUsbSupport(ref) {
      const facts = await requireMember(ref);
      const desktopId = formatDesktopId({ kind: 'ct', namespace: facts.namespace, member: facts.member });
      return {
        kind: 'unsupported',
        reason:
          `${desktopId} is a container desktop: a container has no USB controller to redirect a device to. ` +
          'Claim a desktop from a VM pool whose golden VM has `clientPassthrough: {}` for USB devices.',
        details: { desktop: desktopId, kind: 'ct' },
      };
    },

    async openConsoleStream(ref, console, options) {
      const facts = await requireMember(ref);
      if (console !== 'terminal') {
        throw new VdiError(
          'UNSUPPORTED_BACKEND',
          `${facts.desktopId} is a container desktop: it has no ${console} console; open its terminal.`,
          { details: { desktopId: facts.desktopId, console } },
        );
      }
      if (facts.power !== 'running') {
        throw new VdiError(
          'DESKTOP_STOPPED',
          `${facts.desktopId} is not running (its Pod is ${facts.phase}); wait until it is Ready, or start it if its container ended.`,
          { details: { desktopId: facts.desktopId, console } },
        );
      }
      const { spec } = await requireCtPool(ctx, ref.namespace, facts.pool);
      return await cluster.openPodExecSocket(
        { namespace: ref.namespace, pod: ref.member, container: desktopContainer, command: [spec.shell] },
        options.maxPayload,
      );
    },
  };
}
