import type { KubeConfig } from '@kubernetes/client-node';
import { VdiError } from '../errors.js';
import { apiFailureOf } from './errors.js';
import { rawRequest } from './raw-request.js';
import type { KubeObject, ResourceKind } from './resource.js';

/**
 * Which version of each kind the cluster serves: a descriptor's own, or the newest served of those it names, found by
 * API discovery of its group once and then kept. A failed discovery is not kept, so the next call asks again.
 */
export class ApiDiscovery {
  private readonly discovered = new Map<string, Promise<string[]>>();
  private readonly servedVersions: (group: string) => Promise<string[]>;

  /** `servedVersions` reads the versions a group serves ({@link readServedVersions}), counted and retried. */
  constructor(servedVersions: (group: string) => Promise<string[]>) {
    this.servedVersions = servedVersions;
  }

  /**
   * The version of `kind` the cluster serves.
   *
   * @throws `VdiError` `UNSUPPORTED_BACKEND` when it serves none of the versions the kind names.
   */
  async versionOf(kind: ResourceKind<KubeObject, string>): Promise<string> {
    const { group, version } = kind;
    if (typeof version === 'string') return version;
    let asked = this.discovered.get(group);
    if (asked === undefined) {
      const discovery = this.servedVersions(group);
      discovery.catch(() => {
        if (this.discovered.get(group) === discovery) this.discovered.delete(group);
      });
      this.discovered.set(group, discovery);
      asked = discovery;
    }
    const served = await asked;
    const chosen = version.discover.find((known) => served.includes(known));
    if (chosen !== undefined) return chosen;
    throw new VdiError(
      'UNSUPPORTED_BACKEND',
      `The cluster does not serve ${version.apiName} (${group} ${version.discover.join(' or ')}), ${version.whenUnserved}`,
      { details: { group, servedVersions: served } },
    );
  }
}

/** The versions an API group serves, by `GET /apis/{group}`; none for a group the apiserver does not serve. */
export async function readServedVersions(
  kubeConfig: KubeConfig,
  group: string,
  onBytes: (bytes: number) => void,
): Promise<string[]> {
  try {
    const text = await rawRequest(kubeConfig, 'GET', `/apis/${group}`, undefined, onBytes);
    const answer = JSON.parse(text) as { versions?: { version: string }[] };
    return (answer.versions ?? []).map((entry) => entry.version);
  } catch (error) {
    // an API group the apiserver does not serve is a plain 404
    if (apiFailureOf(error)?.status === 404) return [];
    throw error;
  }
}
