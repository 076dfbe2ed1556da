import { memberNotFoundReason } from '../claims/member-not-found.js';
import type { VdiContext } from '../context.js';
import type { DesktopBackend, MemberFacts, MemberRef, PowerChangeResult } from '../desktop-backend.js';
import { isVdiError, VdiError } from '../errors.js';
import { formatDesktopId } from '../ids.js';
import { ephemeralLabel, poolLabel } from '../keys.js';
import type { VirtualMachine, VirtualMachineInstance } from '../kubevirt-types.js';
import {
  validateClaimToPresent,
  validateIdentity,
  validateMemberName,
  validateNamespace,
  validatePoolName,
} from '../validate.js';
import { recreateVmMember } from './recreate-vm-member.js';
import { gatherVmConnectFacts } from './vm-connect-facts.js';
import { asksToStop, toVmMemberFacts } from './vm-member-facts.js';
import { clearVmPresentation, presentVmClaim } from './vm-presentation.js';
import { checkVmUsbSupport } from './vm-usb-support.js';

// the seam is reachable from every service, so it refuses malformed names before any request goes out
function checkRef(ref: MemberRef & { pool?: string }): void {
  validateNamespace(ref.namespace);
  validateMemberName(ref.member);
  if (ref.pool !== undefined) validatePoolName(ref.pool);
}

function memberNotFound({ namespace, member }: MemberRef, cause?: unknown): VdiError {
  return new VdiError('MEMBER_NOT_FOUND', memberNotFoundReason('vm', namespace, member), {
    details: { namespace, member },
    ...(cause === undefined ? {} : { cause }),
  });
}

function notInPool(vm: VirtualMachine, { namespace, member }: MemberRef, pool?: string): VdiError {
  const belongs = vm.metadata.labels?.[poolLabel];
  return new VdiError(
    'INVALID_INPUT',
    belongs
      ? `VM "${namespace}/${member}" belongs to pool "${belongs}", not "${pool}".`
      : `VM "${namespace}/${member}" is not a member of any pool (it has no ${poolLabel} label).`,
    { details: { namespace, member, ...(pool === undefined ? {} : { pool }) } },
  );
}

interface RequiredMember {
  vm: VirtualMachine;
  vmi: VirtualMachineInstance | undefined;
  facts: MemberFacts;
}

/**
 * The KubeVirt VM {@link DesktopBackend}: a pool's members are the VirtualMachines labelled
 * `corral.dev/vdi-pool=<pool>`, their facts come from each VM and its VirtualMachineInstance, power goes through
 * KubeVirt's `start`/`stop` subresources, and an ephemeral member is reset by cloning it again from the golden
 * VM named in its `corral.dev/vdi-source` annotation.
 *
 * @example
 * ```ts
 * const vms = createVmBackend(vdi.context);
 * const facts = await vms.readMember({ namespace: 'corral-vms', member: 'devpool-1' });
 * if (facts?.power === 'stopped') await vms.startMember(facts);
 * ```
 * @category backends
 */
export function createVmBackend(ctx: VdiContext): DesktopBackend {
  const { cluster } = ctx;

  // the run field back to running, conditional on the VM as read, so a stop KubeVirt has not carried out is undone
  async function undoStop(ref: MemberRef, refused: unknown): Promise<PowerChangeResult> {
    const [vm, vmi] = await Promise.all([
      cluster.getVm(ref.namespace, ref.member),
      cluster.getVmi(ref.namespace, ref.member),
    ]);
    if (!vm) throw memberNotFound(ref, refused);
    const phase = vmi?.status?.phase;
    const instanceLives = vmi !== undefined && phase !== 'Succeeded' && phase !== 'Failed';
    if (!asksToStop(vm) || !instanceLives) throw refused;
    const spec = vm.spec.runStrategy === undefined ? { running: true } : { runStrategy: 'Always' };
    await cluster.patchVm(ref.namespace, ref.member, {
      metadata: { resourceVersion: vm.metadata.resourceVersion },
      spec,
    });
    return 'changed';
  }

  async function changePower(ref: MemberRef, action: 'start' | 'stop'): Promise<PowerChangeResult> {
    checkRef(ref);
    const desktopId = formatDesktopId({ kind: 'vm', ...ref });
    try {
      if (action === 'stop') return await cluster.stopVm(ref.namespace, ref.member);
      return await cluster.startVm(ref.namespace, ref.member).catch((error: unknown) => {
        // KubeVirt refuses to start a VM whose stop it has not carried out yet: ask it to run again instead
        if (isVdiError(error, 'CONFLICT')) return undoStop(ref, error);
        throw error;
      });
    } catch (error) {
      if (isVdiError(error, 'NOT_FOUND')) throw memberNotFound(ref, error);
      // a refused permission is the caller's to grant, not KubeVirt's refusal: it passes unchanged
      if (isVdiError(error, 'FORBIDDEN')) throw error;
      throw new VdiError(
        action === 'start' ? 'START_FAILED' : 'STOP_FAILED',
        `Could not ${action} ${desktopId}: ${(error as Error).message} Try again once the cause is fixed.`,
        { retryable: true, details: { desktopId }, cause: error },
      );
    }
  }

  async function requireMember(ref: MemberRef): Promise<RequiredMember> {
    checkRef(ref);
    const [vm, vmi] = await Promise.all([
      cluster.getVm(ref.namespace, ref.member),
      cluster.getVmi(ref.namespace, ref.member),
    ]);
    if (!vm) throw memberNotFound(ref);
    if (!vm.metadata.labels?.[poolLabel]) throw notInPool(vm, ref);
    return { vm, vmi, facts: toVmMemberFacts(vm, vmi) };
  }

  return {
    kind: 'vm',

    async listMembers(namespace, pool, options = {}) {
      validateNamespace(namespace);
      if (pool !== undefined) validatePoolName(pool);
      const [vms, vmis] = await Promise.all([
        cluster.listVms(namespace, pool === undefined ? poolLabel : `${poolLabel}=${pool}`, options),
        cluster.listVmis(namespace, options),
      ]);
      const vmiByName = new Map(vmis.map((vmi) => [vmi.metadata.name, vmi]));
      return vms.map((vm) => toVmMemberFacts(vm, vmiByName.get(vm.metadata.name)));
    },

    async readMember(ref, options = {}) {
      checkRef(ref);
      const seen =
        options.seenSince === undefined
          ? undefined
          : cluster.getVmAndVmiSeenSince(ref.namespace, ref.member, options.seenSince);
      // a VM the cache holds carries the pool label; one it lacks may have lost it, which a fresh read tells
      if (seen) return toVmMemberFacts(seen.vm, seen.vmi);
      try {
        return (await requireMember(ref)).facts;
      } catch (error) {
        if (isVdiError(error, 'MEMBER_NOT_FOUND')) return undefined;
        throw error;
      }
    },

    startMember: (ref) => changePower(ref, 'start'),
    stopMember: (ref) => changePower(ref, 'stop'),

    async resetMember(ref, options = {}) {
      checkRef(ref);
      const vm = await cluster.getVm(ref.namespace, ref.member);
      if (vm && vm.metadata.labels?.[poolLabel] !== ref.pool) throw notInPool(vm, ref, ref.pool);
      // a member whose VM is gone or going was mid-recreate: only an ephemeral reset deletes a VM
      if (vm && !vm.metadata.deletionTimestamp && vm.metadata.labels?.[ephemeralLabel] !== 'true') {
        await changePower(ref, 'stop');
        return 'stopped';
      }
      await recreateVmMember(ctx, ref, options);
      return 'recreated';
    },

    async presentClaim(facts, claim) {
      checkRef({ namespace: facts.namespace, member: facts.member });
      validateClaimToPresent(claim);
      await presentVmClaim(cluster, facts, claim);
    },

    async clearPresentation(ref, holder) {
      checkRef(ref);
      validateIdentity(holder);
      return await clearVmPresentation(cluster, ref, holder);
    },

    async gatherConnectFacts(ref, options) {
      return await gatherVmConnectFacts((await requireMember(ref)).facts, options);
    },

    async checkUsbSupport(ref) {
      const { vm, vmi, facts } = await requireMember(ref);
      return checkVmUsbSupport(vm, vmi, facts.desktopId);
    },

    async openConsoleStream(ref, console, options) {
      checkRef(ref);
      const desktopId = formatDesktopId({ kind: 'vm', ...ref });
      if (console === 'terminal') {
        throw new VdiError(
          'UNSUPPORTED_BACKEND',
          `${desktopId} is a VM: it has no terminal console; open its vnc or serial console.`,
          { details: { desktopId, console } },
        );
      }
      try {
        return await cluster.openVmiConsole(
          ref.namespace,
          ref.member,
          console === 'vnc' ? 'vnc' : 'console',
          options.maxPayload,
        );
      } catch (error) {
        // virt-api answers 404 without an instance and 400 for one that does not run
        if (isVdiError(error, 'NOT_FOUND', 'INVALID_INPUT')) {
          throw new VdiError(
            'DESKTOP_STOPPED',
            `${desktopId} does not run, so its ${console} console cannot open; start it first.`,
            { details: { desktopId, console }, cause: error },
          );
        }
        throw error;
      }
    },
  };
}
