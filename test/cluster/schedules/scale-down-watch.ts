import type { KubeConfig } from '@kubernetes/client-node';
import { releasingAnnotation, removalHolder } from '../../../src/keys.js';
import { leaseNameFor } from '../../../src/lease-name.js';
import { type RunningWatch, type WatchedObject, watchPath } from '../../chaos/watch-path.js';

/** The members a schedule scales: where to watch them, and which change of one stops it without deleting it. */
export interface WatchedMembers {
  /** The collection's path, such as `/api/v1/namespaces/<ns>/pods`. */
  path: string;
  /** Whether `object` stops a member that `before` showed (a VM's run strategy turned to Halted); none for Pods. */
  stops?: (before: WatchedObject | undefined, object: WatchedObject) => boolean;
}

/** One change seen by a watch, in the cluster's order (etcd's revision). */
interface Seen {
  revision: number;
  kind: 'lease' | 'member';
  type: string;
  object: WatchedObject;
}

/**
 * Watches a namespace's Leases and members from now on; `check` replays them in the cluster's order and names every
 * moment a member was deleted or stopped while a user held it without releasing it.
 */
export function watchScaleDowns(kubeConfig: KubeConfig, namespace: string, members: WatchedMembers) {
  const seen: Seen[] = [];
  const errors: unknown[] = [];
  const paths = {
    lease: `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`,
    member: members.path,
  };
  const watches: RunningWatch[] = (['lease', 'member'] as const).map((kind) =>
    watchPath(
      kubeConfig,
      paths[kind],
      {},
      (type, object) => seen.push({ revision: Number(object.metadata?.resourceVersion), kind, type, object }),
      (error) => errors.push(error),
    ),
  );
  return {
    ready: Promise.all(watches.map((watch) => watch.ready)),
    stop: () => {
      for (const watch of watches) watch.stop();
    },
    check(): { touched: string[]; errors: unknown[]; events: number; memberEvents: number } {
      const holders = new Map<string, { holder: string; releasing: boolean }>();
      const last = new Map<string, WatchedObject>();
      const touched: string[] = [];
      for (const { kind, type, object } of [...seen].sort((left, right) => left.revision - right.revision)) {
        const name = object.metadata?.name ?? '';
        if (kind === 'lease') {
          const spec = object.spec as { holderIdentity?: string } | undefined;
          const annotations = (object.metadata?.annotations ?? {}) as Record<string, string>;
          if (type === 'DELETED') holders.delete(name);
          else
            holders.set(name, {
              holder: spec?.holderIdentity ?? '',
              releasing: annotations[releasingAnnotation] !== undefined,
            });
          continue;
        }
        const claim = holders.get(leaseNameFor(name));
        const userHeld =
          claim !== undefined && claim.holder !== '' && claim.holder !== removalHolder && !claim.releasing;
        const deleting = type === 'DELETED' || object.metadata?.deletionTimestamp !== undefined;
        const stopped = members.stops?.(last.get(name), object) ?? false;
        if (userHeld && (deleting || stopped))
          touched.push(`${name} ${deleting ? 'deleted' : 'stopped'} held by ${claim.holder}`);
        last.set(name, object);
      }
      return {
        touched,
        errors,
        events: seen.length,
        memberEvents: seen.filter((change) => change.kind === 'member').length,
      };
    },
  };
}
