import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadAllYaml } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';

// Every Kubernetes request of the SDK goes through KubeCluster; each public method is one (or two) RBAC rules.
const clusterSource = readFileSync('src/kube/cluster.ts', 'utf8');

/** A permission as `group resource verb scope`, where scope is `namespace` (a Role) or `cluster`. */
type Permission = string;

interface MethodRule {
  group: string;
  resource: string;
  verb: string;
  /** Whether the method lists across all namespaces when its namespace is left out. */
  clusterWideWithoutNamespace: boolean;
  /** Whether the resource lives outside namespaces (nodes, kubevirts). */
  clusterScoped: boolean;
}

// the core API's resources a container pool uses, by the client-node call that names each
const coreResources: Array<[RegExp, string]> = [
  [/openPodExec\(/, 'pods/exec'],
  // a watch names its collection's path
  [/(Namespaced)?ConfigMap\(|\/configmaps`/, 'configmaps'],
  [/(Namespaced)?PersistentVolumeClaim\(/, 'persistentvolumeclaims'],
  [/(Namespaced)?Service\(/, 'services'],
  [/(Namespaced)?Pod(ForAllNamespaces)?\(/, 'pods'],
];

function coreResource(body: string): [string, string] | undefined {
  const found = coreResources.find(([pattern]) => pattern.test(body));
  return found && ['', found[1]];
}

/** The public methods of KubeCluster with the RBAC rule each one needs, read from the source. */
function methodRules(): Map<string, MethodRule> {
  const rules = new Map<string, MethodRule>();
  const starts = [...clusterSource.matchAll(/^ {2}(private )?(?:async )?(\w+)\(/gm)];
  starts.forEach((start, index) => {
    const [, isPrivate, name = ''] = start;
    if (isPrivate || name === 'constructor') return;
    const body = clusterSource.slice(start.index, starts[index + 1]?.index ?? clusterSource.length);
    // a power change goes to KubeVirt's subresource, named by the call's verb
    const power = /this\.call\(\s*'(start|stop)'/.exec(body);
    if (power) {
      rules.set(name, {
        group: 'subresources.kubevirt.io',
        resource: `virtualmachines/${power[1]}`,
        verb: 'update',
        clusterWideWithoutNamespace: false,
        clusterScoped: false,
      });
      return;
    }
    const verb = /this\.(?:call|getOrUndefined)\(\s*'(\w+)'/.exec(body)?.[1];
    if (verb === undefined) return;
    const plural = /plural: '(\w+)'/.exec(body)?.[1];
    // clones go to the clone.kubevirt.io version the cluster serves
    const [group, resource] = /servedCloneApi\(|cloneGroup,/.test(body)
      ? ['clone.kubevirt.io', 'virtualmachineclones']
      : plural !== undefined
        ? ['kubevirt.io', plural]
        : body.includes('this.coordination.') || body.includes('...leaseApi')
          ? ['coordination.k8s.io', 'leases']
          : body.includes('listNode(')
            ? ['', 'nodes']
            : body.includes('readNamespace(')
              ? ['', 'namespaces']
              : (coreResource(body) ?? ['?', '?']);
    rules.set(name, {
      group,
      resource,
      verb,
      clusterWideWithoutNamespace:
        body.includes('listNamespacedCustomObject') && body.includes('listClusterCustomObject'),
      clusterScoped:
        !body.includes('Namespaced') &&
        (body.includes('listClusterCustomObject') ||
          body.includes('listNode(') ||
          body.includes('ForAllNamespaces(')),
    });
  });
  return rules;
}

function sourceFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return path === join('src', 'testing') ? [] : sourceFiles(path);
    return path.endsWith('.ts') && path !== join('src', 'kube', 'cluster.ts') ? [path] : [];
  });
}

/** What the SDK's own code (not its testing kit) asks of the cluster. */
function usedPermissions(): Set<Permission> {
  const rules = methodRules();
  const used = new Set<Permission>();
  for (const file of sourceFiles('src')) {
    const text = readFileSync(file, 'utf8');
    for (const call of text.matchAll(/\.(\w+)\(\s*(\)|undefined\b)?/g)) {
      const [, name = '', withoutNamespace] = call;
      const rule = rules.get(name);
      if (!rule) continue;
      const scope =
        rule.clusterScoped || (rule.clusterWideWithoutNamespace && withoutNamespace)
          ? 'cluster'
          : 'namespace';
      used.add(`${rule.group} ${rule.resource} ${rule.verb} ${scope}`);
      // a terminal is a websocket upgrade of a GET: the apiserver authorizes it as get, newer ones as create too
      if (rule.resource === 'pods/exec') used.add(`${rule.group} ${rule.resource} get ${scope}`);
    }
  }
  return used;
}

interface RbacRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

/** The Role and ClusterRole of docs/claims.md#permissions, as permissions. */
function documentedPermissions(): Set<Permission> {
  const docs = readFileSync('docs/claims.md', 'utf8');
  const section = docs.slice(
    docs.indexOf('## Permissions'),
    docs.indexOf('\n## ', docs.indexOf('## Permissions') + 1),
  );
  const yaml = /```yaml\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  const documented = new Set<Permission>();
  for (const object of loadAllYaml(yaml) as Array<{ kind: string; rules: RbacRule[] }>) {
    const scope = object.kind === 'ClusterRole' ? 'cluster' : 'namespace';
    for (const rule of object.rules)
      for (const group of rule.apiGroups)
        for (const resource of rule.resources)
          for (const verb of rule.verbs) documented.add(`${group} ${resource} ${verb} ${scope}`);
  }
  return documented;
}

describe('the permissions in docs/claims.md', () => {
  it('reads a rule for every public KubeCluster method', () => {
    const unread = [...methodRules()].filter(([, rule]) => rule.resource === '?').map(([name]) => name);
    expect(unread).toEqual([]);
    expect(methodRules().get('listVmis')).toMatchObject({
      resource: 'virtualmachineinstances',
      verb: 'list',
    });
  });

  it('are exactly what the SDK asks of the cluster, no more and no fewer', () => {
    const used = usedPermissions();
    const documented = documentedPermissions();
    expect(used.size).toBeGreaterThan(10);
    expect(
      [...documented].filter((permission) => !used.has(permission)).sort(),
      'documented, never used',
    ).toEqual([]);
    expect(
      [...used].filter((permission) => !documented.has(permission)).sort(),
      'used, not documented',
    ).toEqual([]);
  });
});
