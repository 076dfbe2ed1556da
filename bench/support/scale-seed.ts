import { CustomObjectsApi, type KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { shortHash } from '../../src/hash.js';
import {
  assignedToKey,
  claimedAtAnnotation,
  holderGroupsAnnotation,
  leaseDurationSeconds,
  leaseHolderLabel,
  leaseKindLabel,
  leaseMemberLabel,
  leasePoolLabel,
  poolLabel,
  sessionIdAnnotation,
  uncheckedHolderGroups,
} from '../../src/keys.js';
import type { KubeCluster } from '../../src/kube/cluster.js';
import { makeKeepAliveClient } from '../../src/kube/connections.js';
import type { VirtualMachine } from '../../src/kubevirt-types.js';
import { sanitizeLabelValue } from '../../src/sanitize-label-value.js';
import { inParallel } from './measure.js';

// writes in flight while seeding: enough to keep the apiserver's two cores busy
const seedConcurrency = 128;
const vmApi = { group: 'kubevirt.io', version: 'v1', plural: 'virtualmachines' } as const;
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/** A stopped desktop VM shaped like a clone of a golden VM: a root disk from a DataVolume, cloud-init, one NIC. */
export function desktopVm(name: string, pool: string): VirtualMachine {
  return {
    metadata: { name, labels: { [poolLabel]: pool, 'app.kubernetes.io/part-of': 'desktops' } },
    spec: {
      runStrategy: 'Halted',
      dataVolumeTemplates: [
        {
          metadata: { name: `${name}-root` },
          spec: {
            source: { pvc: { namespace: 'golden-images', name: 'ubuntu-desktop-24-04' } },
            storage: { resources: { requests: { storage: '40Gi' } } },
          },
        },
      ],
      template: {
        metadata: { labels: { [poolLabel]: pool, 'kubevirt.io/domain': name } },
        spec: {
          domain: {
            cpu: { cores: 2 },
            memory: { guest: '4Gi' },
            resources: { requests: { memory: '4Gi' } },
            devices: {
              disks: [
                { name: 'rootdisk', disk: { bus: 'virtio' } },
                { name: 'cloudinit', disk: { bus: 'virtio' } },
              ],
              interfaces: [{ name: 'default', masquerade: {} }],
              clientPassthrough: {},
            },
          },
          networks: [{ name: 'default', pod: {} }],
          volumes: [
            { name: 'rootdisk', dataVolume: { name: `${name}-root` } },
            {
              name: 'cloudinit',
              cloudInitNoCloud: { userData: '#cloud-config\nhostname: desktop\nssh_pwauth: false\n' },
            },
          ],
        },
      },
    },
  };
}

/** One desktop VM to make: its namespace, pool and name. */
export interface SeededVm {
  namespace: string;
  pool: string;
  name: string;
}

/**
 * Creates the stopped desktop VMs `vms`, {@link seedConcurrency} at a time across namespaces and pools, and writes
 * each one's status as KubeVirt shows a stopped VM.
 */
export async function seedDesktopVms(kube: KubeCluster, vms: readonly SeededVm[]): Promise<void> {
  const custom = makeKeepAliveClient(kube.kubeConfig, CustomObjectsApi, () => {});
  await inParallel(vms.length, seedConcurrency, async (index) => {
    const { namespace, pool, name } = vms[index] as SeededVm;
    await kube.createVm(namespace, desktopVm(name, pool));
    const status = {
      printableStatus: 'Stopped',
      created: false,
      ready: false,
      conditions: [
        {
          type: 'Ready',
          status: 'False',
          reason: 'VMINotExists',
          message: 'VMI does not exist',
          lastProbeTime: null,
          lastTransitionTime: new Date().toISOString(),
        },
      ],
      volumeSnapshotStatuses: [
        {
          name: 'rootdisk',
          enabled: false,
          reason: 'No VolumeSnapshotClass: Volume snapshots are not configured',
        },
        { name: 'cloudinit', enabled: false, reason: 'Snapshot is not supported for this volumeSource type' },
      ],
    };
    await custom.patchNamespacedCustomObjectStatus(
      { ...vmApi, namespace, name, body: { status } },
      mergePatch,
    );
  });
}

/** One claim to make: the member's Lease, held by `holder`, last renewed at `renewedAt`. */
export interface SeededClaim extends SeededVm {
  holder: string;
  renewedAt: string;
}

/**
 * Creates a claim Lease for each of `claims`, {@link seedConcurrency} at a time, and writes the claim's presentation
 * copy on its VM, as a claim does.
 */
export async function seedClaims(kube: KubeCluster, claims: readonly SeededClaim[]): Promise<void> {
  await inParallel(claims.length, seedConcurrency, async (index) => {
    const { namespace, pool, name, holder, renewedAt } = claims[index] as SeededClaim;
    await kube.createLease(namespace, {
      metadata: {
        name: `corral-vdi-${name}`,
        // as a claim labels it: a claim that names no kind may be of any, and a pass would list Pods for it
        labels: {
          [leasePoolLabel]: pool,
          [leaseKindLabel]: 'vm',
          [leaseHolderLabel]: shortHash(holder),
          [leaseMemberLabel]: name,
        },
        annotations: {
          [sessionIdAnnotation]: `scale-${namespace}-${name}`,
          [holderGroupsAnnotation]: uncheckedHolderGroups,
        },
      },
      spec: { holderIdentity: holder, acquireTime: renewedAt, renewTime: renewedAt, leaseDurationSeconds },
    });
    await kube.patchVm(namespace, name, {
      metadata: {
        labels: { [assignedToKey]: sanitizeLabelValue(holder) },
        annotations: {
          [assignedToKey]: holder,
          [claimedAtAnnotation]: renewedAt,
          [sessionIdAnnotation]: `scale-${namespace}-${name}`,
        },
      },
    });
  });
}

/** What one bare list of everything under `path` cost, read page by page as a client without caches reads it. */
export interface BareList {
  items: number;
  pages: number;
  bytes: number;
  ms: number;
}

/**
 * Lists `path` (`/apis/kubevirt.io/v1/namespaces/<ns>/virtualmachines`) in pages of `limit` through `continue`,
 * with `labelSelector`: the floor of every row that reads a list.
 */
export async function listBare(
  kubeConfig: KubeConfig,
  target: { group: string; version: string; plural: string; namespace: string },
  labelSelector: string | undefined,
  limit = 500,
): Promise<BareList> {
  let bytes = 0;
  const custom = makeKeepAliveClient(kubeConfig, CustomObjectsApi, (read) => {
    bytes += read;
  });
  const started = performance.now();
  let items = 0;
  let pages = 0;
  let next: string | undefined;
  do {
    const page = (await custom.listNamespacedCustomObject({
      ...target,
      limit,
      ...(labelSelector ? { labelSelector } : {}),
      ...(next ? { _continue: next } : {}),
    })) as { items: unknown[]; metadata?: { continue?: string } };
    items += page.items.length;
    pages += 1;
    next = page.metadata?.continue || undefined;
  } while (next);
  return { items, pages, bytes, ms: performance.now() - started };
}
