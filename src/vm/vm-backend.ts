import type { VdiContext } from '../context.js';
import type {
  DesktopBackend,
  MemberFacts,
  MemberRef,
  PowerChangeResult,
  StartFrom,
} from '../desktop-backend.js';
import { isVdiError, VdiError } from '../errors.js';
import { formatDesktopId } from '../ids.js';
import { assignedToKey, ephemeralLabel, poolLabel } from '../keys.js';
import type { ListOptions } from '../kube/cluster.js';
import { isConflictReason } from '../kube/errors.js';
import { vmKind } from '../kube/resource-kinds.js';
import type { VirtualMachine, VirtualMachineInstance } from '../kubevirt-types.js';
import { memberNotFoundReason, notPoolMember } from '../member-not-found.js';
import { pauseAfterConflict } from '../pause-after-conflict.js';
import { sanitizeLabelValue } from '../sanitize-label-value.js';
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
import { clearVmPresentation, presentVmClaim, sealVmRelease } from './vm-presentation.js';
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

// a few rereads are normal while the VM's status changes
const startAttempts = 5;

// A watch cache hands out the same objects until they change, and a claim storm lists the pool once per claim:
// each VM's facts are worked out once per pair of objects.
const listedFacts = new WeakMap<
  VirtualMachine,
  { vmi: VirtualMachineInstance | undefined; facts: MemberFacts }
>();

function factsOfListed(vm: VirtualMachine, vmi: VirtualMachineInstance | undefined): MemberFacts {
  const known = listedFacts.get(vm);
  if (known !== undefined && known.vmi === vmi) return known.facts;
  const facts = toVmMemberFacts(vm, vmi);
  listedFacts.set(vm, { vmi, facts });
  return facts;
}

/**
 * A VM pool's member VMs as listed and each one's facts, its instance taken from one list of the namespace's
 * instances; every VM pool member of the namespace when `pool` is `undefined`.
 */
export async function listVmPoolMembers(
  cluster: VdiContext['cluster'],
  namespace: string,
  pool: string | undefined,
  options: ListOptions = {},
): Promise<{ vms: VirtualMachine[]; members: MemberFacts[] }> {
  const [vms, vmis] = await Promise.all([
    cluster.listVms(namespace, pool === undefined ? poolLabel : `${poolLabel}=${pool}`, options),
    cluster.listVmis(namespace, options),
  ]);
  const vmiByName = new Map(vmis.map((vmi) => [vmi.metadata.name, vmi]));
  return { vms, members: vms.map((vm) => factsOfListed(vm, vmiByName.get(vm.metadata.name))) };
}

/**
 * Whether a VM may have an instance: KubeVirt shows `Stopped` and not `created` only once it has seen its instance
 * gone, and keeps `created` while a deleted instance still exists.
 */
function showsInstance(vm: VirtualMachine): boolean {
  return vm.status?.printableStatus !== 'Stopped' || vm.status.created === true;
}

interface RequiredMember {
  vm: VirtualMachine;
  vmi: VirtualMachineInstance | undefined;
  facts: MemberFacts;
}

/**
 * The KubeVirt VM {@link DesktopBackend}: a pool's members are the VirtualMachines labelled
 * `corral.dev/vdi-pool=<pool>`, their facts come from each VM and its VirtualMachineInstance, a start writes the
 * VM's run field (conditional on the VM as read) and a stop goes through KubeVirt's `stop` subresource, and an ephemeral member is reset by cloning it again from the golden
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

  // Written conditional on the VM as read: a stop (or any change) that lands after the read wins, never the start.
  async function writeRunField(ref: MemberRef, read: StartFrom): Promise<void> {
    await cluster.patchVm(ref.namespace, ref.member, {
      metadata: { resourceVersion: read.resourceVersion },
      spec: read.usesLegacyRunField ? { running: true } : { runStrategy: 'Always' },
    });
  }

  async function startVm(ref: MemberRef, asRead: StartFrom | undefined): Promise<PowerChangeResult> {
    if (asRead) {
      await writeRunField(ref, asRead).catch((error: unknown) => {
        // a refusal of KubeVirt's admission can be a 409 too: only a stale resourceVersion is a change
        if (!isConflictReason(error, 'Conflict')) throw error;
        throw new VdiError(
          'CONFLICT',
          `VM ${ref.namespace}/${ref.member} changed since it was read; read it again before starting it.`,
          { retryable: true, details: { ...ref, stale: true }, cause: error },
        );
      });
      return 'changed';
    }
    for (let attempt = 1; ; attempt += 1) {
      const vm = await cluster.getVm(ref.namespace, ref.member);
      if (!vm) throw memberNotFound(ref);
      if (!asksToStop(vm) && (vm.spec.runStrategy === 'Always' || vm.spec.running === true)) return 'already';
      const facts = toVmMemberFacts(vm, undefined);
      try {
        await writeRunField(ref, facts);
        return 'changed';
      } catch (error) {
        // the VM's status writes bump its resourceVersion too: read it again, once they had a moment to settle
        if (!isConflictReason(error, 'Conflict') || attempt === startAttempts) throw error;
        await pauseAfterConflict(attempt);
      }
    }
  }

  async function changePower(
    ref: MemberRef,
    action: 'start' | 'stop',
    asRead?: StartFrom,
  ): Promise<PowerChangeResult> {
    checkRef(ref);
    const desktopId = formatDesktopId({ kind: 'vm', ...ref });
    try {
      if (action === 'stop') return await cluster.stopVm(ref.namespace, ref.member);
      return await startVm(ref, asRead);
    } catch (error) {
      // a start written on an old read: the caller reads again and decides
      if (isVdiError(error, 'CONFLICT') && error.details.stale === true) throw error;
      if (isVdiError(error, 'NOT_FOUND')) throw memberNotFound(ref, error);
      if (isVdiError(error, 'MEMBER_NOT_FOUND')) throw error;
      // a refused permission is the caller's to grant, not KubeVirt's refusal: it passes unchanged
      if (isVdiError(error, 'FORBIDDEN')) throw error;
      throw new VdiError(
        action === 'start' ? 'START_FAILED' : 'STOP_FAILED',
        `Could not ${action} ${desktopId}: ${(error as Error).message} Try again once the cause is fixed.`,
        { retryable: true, details: { desktopId }, cause: error },
      );
    }
  }

  // undefined when there is no VM of that name
  async function readVmMember(ref: MemberRef): Promise<RequiredMember | undefined> {
    checkRef(ref);
    const [vm, vmi] = await Promise.all([
      cluster.getVm(ref.namespace, ref.member),
      cluster.getVmi(ref.namespace, ref.member),
    ]);
    if (!vm) return undefined;
    if (!vm.metadata.labels?.[poolLabel]) throw notPoolMember('vm', ref, `${poolLabel} label`);
    return { vm, vmi, facts: toVmMemberFacts(vm, vmi) };
  }

  async function requireMember(ref: MemberRef): Promise<RequiredMember> {
    const found = await readVmMember(ref);
    if (!found) throw memberNotFound(ref);
    return found;
  }

  return {
    kind: 'vm',

    async listMembers(namespace, pool, options = {}) {
      validateNamespace(namespace);
      if (pool !== undefined) validatePoolName(pool);
      return (await listVmPoolMembers(cluster, namespace, pool, options)).members;
    },

    async listMembersByHolder(namespace, pool, { holders, limit, continue: from }) {
      validateNamespace(namespace);
      validatePoolName(pool);
      const named =
        holders === undefined
          ? `!${assignedToKey}`
          : `${assignedToKey} in (${[...new Set(holders.map(sanitizeLabelValue))].join(',')})`;
      const page = await cluster
        .resource(vmKind)
        .in(namespace)
        .listPage(`${poolLabel}=${pool},${named}`, {
          limit,
          ...(from === undefined ? {} : { continue: from }),
        });
      // only a VM that shows an instance has one to read: each by name, never the namespace's list
      const members = await Promise.all(
        page.items.map(async (vm) =>
          toVmMemberFacts(
            vm,
            showsInstance(vm) ? await cluster.getVmi(namespace, vm.metadata.name ?? '') : undefined,
          ),
        ),
      );
      return { members, ...(page.continue === undefined ? {} : { continue: page.continue }) };
    },

    followMembers(namespace, pool, onChange) {
      const caches = cluster.cachesOf(namespace);
      if (!caches?.vms.isSynced() || !caches.vmis.isSynced()) return undefined;
      const { vms, vmis } = caches;
      const tell = ({ object }: { object: { metadata: { name?: string } } }) =>
        onChange(object.metadata.name ?? '');
      vms.onChange(tell);
      vmis.onChange(tell);
      return {
        names: () => (vms.list(`${poolLabel}=${pool}`) ?? []).map((vm) => vm.metadata.name ?? ''),
        member(name) {
          const vm = vms.get(name);
          if (vm?.metadata.labels?.[poolLabel] !== pool) return undefined;
          return factsOfListed(vm, vmis.get(name));
        },
      };
    },

    cachedMember(ref) {
      checkRef(ref);
      const caches = cluster.cachesOf(ref.namespace);
      if (!caches?.vms.isSynced() || !caches.vmis.isSynced()) return undefined;
      const vm = caches.vms.get(ref.member);
      const { resourceVersion } = vm?.metadata ?? {};
      if (!vm?.metadata.labels?.[poolLabel] || resourceVersion === undefined) return undefined;
      const vmi = caches.vmis.getSeenSince(ref.member, resourceVersion);
      return vmi ? factsOfListed(vm, vmi.object) : undefined;
    },

    async readMember(ref, options = {}) {
      checkRef(ref);
      const since = options.seenSince;
      if (since !== undefined) {
        // Each of the two from its cache when that has seen the version, else fresh. The VMIs' cache moves on only
        // as instances start and stop, so a VMI it has not seen is asked for at once; the VMs' cache, which a busy
        // namespace moves on quickly, is looked at again once that answer is in.
        const seenVmi = cluster.getVmAndVmiSeenSince(ref.namespace, ref.member, since).vmi;
        const vmi = seenVmi ? seenVmi.object : await cluster.getVmi(ref.namespace, ref.member);
        const seenVm = cluster.getVmAndVmiSeenSince(ref.namespace, ref.member, since).vm?.object;
        // a VM the cache holds carries the pool label; one it lacks may have lost it, which a fresh read tells
        const vm = seenVm ?? (await cluster.getVm(ref.namespace, ref.member));
        if (!vm) return undefined;
        if (!vm.metadata.labels?.[poolLabel]) throw notPoolMember('vm', ref, `${poolLabel} label`);
        return toVmMemberFacts(vm, vmi);
      }
      return (await readVmMember(ref))?.facts;
    },

    startMember: (ref, asRead) => changePower(ref, 'start', asRead),
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
      return await presentVmClaim(cluster, facts, claim);
    },

    async clearPresentation(ref, holder, sessionId) {
      checkRef(ref);
      validateIdentity(holder);
      return await clearVmPresentation(cluster, ref, holder, sessionId);
    },

    async sealRelease(ref, holder, sessionId) {
      checkRef(ref);
      validateIdentity(holder);
      return await sealVmRelease(cluster, ref, holder, sessionId);
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
