import { readFileSync } from 'node:fs';
import {
  AuthorizationV1Api,
  type KubeConfig,
  loadAllYaml,
  RbacAuthorizationV1Api,
} from '@kubernetes/client-node';
import type { LocalClusterAccess } from '../../../src/testing/local-cluster.js';
import { waitFor } from '../../../src/testing/wait-for.js';

interface RbacRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

/** One permission of the documented Role or ClusterRole. */
export interface Permission {
  scope: 'namespace' | 'cluster';
  group: string;
  resource: string;
  verb: string;
}

/** `verb resource.group (scope)`, as the table of the least-privilege suite names a permission. */
export function permissionName({ scope, group, resource, verb }: Permission): string {
  return `${verb} ${resource}${group ? `.${group}` : ''}${scope === 'cluster' ? ' (cluster)' : ''}`;
}

/** Every permission of the Role and ClusterRole in docs/claims.md#permissions, one per verb. */
export function documentedPermissions(): Permission[] {
  const docs = readFileSync('docs/claims.md', 'utf8');
  const start = docs.indexOf('## Permissions');
  const section = docs.slice(start, docs.indexOf('\n## ', start + 1));
  const yaml = /```yaml\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  const permissions: Permission[] = [];
  for (const object of loadAllYaml(yaml) as Array<{ kind: string; rules: RbacRule[] }>) {
    const scope = object.kind === 'ClusterRole' ? 'cluster' : 'namespace';
    for (const rule of object.rules)
      for (const group of rule.apiGroups)
        for (const resource of rule.resources)
          for (const verb of rule.verbs) permissions.push({ scope, group, resource, verb });
  }
  return permissions;
}

function rulesOf(permissions: Permission[]): RbacRule[] {
  return permissions.map(({ group, resource, verb }) => ({
    apiGroups: [group],
    resources: [resource],
    verbs: [verb],
  }));
}

// A namespaced permission the ClusterRole grants cluster-wide too is only missing once both lack it.
const covers = (missing: Permission, granted: Permission) =>
  (missing.scope === granted.scope || missing.scope === 'namespace') &&
  missing.group === granted.group &&
  missing.resource === granted.resource &&
  missing.verb === granted.verb;

/**
 * Binds `user` to the documented Role in `namespace` and to the documented ClusterRole (under names of the
 * namespace's own), without `missing` when given (a namespaced one is taken out of the ClusterRole too), and waits until the apiserver authorizes by them. Returns the
 * user's configuration and a function that removes the cluster-wide objects again.
 */
export async function bindDocumentedRole(
  cluster: LocalClusterAccess,
  input: { namespace: string; user: string; missing?: Permission | undefined },
): Promise<{ kubeConfig: KubeConfig; unbind(): Promise<void> }> {
  const { namespace, user, missing } = input;
  const granted = documentedPermissions().filter((permission) => !missing || !covers(missing, permission));
  const rbac = cluster.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
  const subjects = [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }];
  const name = `corral-vdi-${namespace}`;
  // the four objects name each other only by name, so they go in at once
  await Promise.all([
    rbac.createNamespacedRole({
      namespace,
      body: {
        metadata: { name: 'corral-vdi' },
        rules: rulesOf(granted.filter((p) => p.scope === 'namespace')),
      },
    }),
    rbac.createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: 'corral-vdi' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'corral-vdi' },
        subjects,
      },
    }),
    rbac.createClusterRole({
      body: { metadata: { name }, rules: rulesOf(granted.filter((p) => p.scope === 'cluster')) },
    }),
    rbac.createClusterRoleBinding({
      body: {
        metadata: { name },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
        subjects,
      },
    }),
  ]);
  // RBAC takes effect once the apiserver's informers saw the bindings: wait for the last granted rule of each
  const reviews = cluster.kubeConfig.makeApiClient(AuthorizationV1Api);
  const probes = (['namespace', 'cluster'] as const).flatMap((scope) =>
    granted.filter((permission) => permission.scope === scope).slice(-1),
  );
  await Promise.all(
    probes.map(async (probe) => {
      const { scope } = probe;
      await waitFor(
        async () =>
          (
            await reviews.createSubjectAccessReview({
              body: {
                spec: {
                  user,
                  resourceAttributes: {
                    group: probe.group,
                    resource: probe.resource.split('/')[0],
                    subresource: probe.resource.split('/')[1],
                    verb: probe.verb,
                    ...(scope === 'namespace' ? { namespace } : {}),
                  },
                },
              },
            })
          ).status?.allowed === true,
        { describe: `${user} to be granted ${permissionName(probe)}` },
      );
    }),
  );
  return {
    kubeConfig: cluster.userKubeConfig(user),
    async unbind() {
      await rbac.deleteClusterRoleBinding({ name });
      await rbac.deleteClusterRole({ name });
    },
  };
}
