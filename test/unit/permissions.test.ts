import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadAllYaml } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';

// Every Kubernetes request of the SDK goes through KubeCluster: its methods by name, or the typed accessor of a kind
// (`cluster.resource(podKind)`), whose descriptors in resource-kinds.ts name each kind's group and resource.
const clusterSource = readFileSync('src/kube/cluster.ts', 'utf8');

/** A permission as `group resource verb scope`, where scope is `namespace` (a Role) or `cluster`. */
type Permission = string;

interface MethodRule {
  group: string;
  resource: string;
  verb: string;
  /** Whether the method lists across all namespaces when its namespace is left out. */
  clusterWideWithoutNamespace: boolean;
  /** Whether the call reads every namespace or a resource outside namespaces (nodes, kubevirts). */
  clusterScoped: boolean;
}

/** Each descriptor of resource-kinds.ts by its name: its group, resource and whether it lives in namespaces. */
function kindTable(): Map<string, { group: string; resource: string; namespaced: boolean }> {
  const source = readFileSync('src/kube/resource-kinds.ts', 'utf8');
  const kinds = new Map<string, { group: string; resource: string; namespaced: boolean }>();
  for (const [, name = '', body = ''] of source.matchAll(
    /export const (\w+Kind): ResourceKind<[^=]*= \{([\s\S]*?)\n\};/g,
  )) {
    kinds.set(name, {
      group: /group: '([^']*)'/.exec(body)?.[1] ?? '?',
      resource: /plural: '(\w+)'/.exec(body)?.[1] ?? '?',
      namespaced: /namespaced: true/.test(body),
    });
  }
  return kinds;
}

// what each accessor verb asks of RBAC
const accessorVerbs: Record<string, string> = {
  get: 'get',
  list: 'list',
  listPage: 'list',
  listToWatch: 'list',
  watch: 'watch',
  create: 'create',
  replace: 'update',
  patch: 'patch',
  delete: 'delete',
};

// a read-modify-write reads, then creates or replaces
const readModifyWriteVerbs = ['get', 'create', 'update'];

/** The rules of the accessor calls in `text`: `.resource(podKind).in(ns).get(…)`, or through a variable bound to one. */
function accessorRules(text: string): MethodRule[] {
  const kinds = kindTable();
  const rules: MethodRule[] = [];
  const add = (kindName: string, verb: string, namespaced: boolean) => {
    const kind = kinds.get(kindName);
    rules.push({
      group: kind?.group ?? '?',
      resource: kind?.resource ?? '?',
      verb,
      clusterWideWithoutNamespace: false,
      clusterScoped: !namespaced || !kind?.namespaced,
    });
  };
  const bound = /\.resource\((\w+Kind)\)(\s*\.in\((?:[^()]|\([^()]*\))*\))?/g;
  for (const found of text.matchAll(bound)) {
    const [whole, kindName = '', namespace] = found;
    const after = text.slice((found.index ?? 0) + whole.length);
    const verb = /^\s*\.(\w+)\(/.exec(after)?.[1];
    if (verb !== undefined && accessorVerbs[verb] !== undefined)
      add(kindName, accessorVerbs[verb], !!namespace);
    // bound to a variable: its verbs, and a read-modify-write through it
    const variable = /(\w+) = [\w.]*$/.exec(text.slice(0, found.index))?.[1];
    if (variable === undefined || verb !== undefined) continue;
    for (const [, used = ''] of text.matchAll(new RegExp(`\\b${variable}\\)?\\.(\\w+)\\(`, 'g')))
      if (accessorVerbs[used] !== undefined) add(kindName, accessorVerbs[used], !!namespace);
    if (new RegExp(`readModifyWrite\\(\\s*${variable}\\b`).test(text))
      for (const verb of readModifyWriteVerbs) add(kindName, verb, !!namespace);
  }
  return rules;
}

/** The rules of a method that reaches a cached kind by table (`cachedKinds[cache]`): its verb, on every cached kind. */
function cachedKindRules(body: string): MethodRule[] {
  if (!/= cachedKinds\[cache\]/.test(body)) return [];
  const table = /const cachedKinds = \{([^}]*)\}/.exec(clusterSource)?.[1] ?? '';
  const verb = /\.resource\(kind\)\.in\(namespace\)\.(\w+)\(/.exec(body)?.[1] ?? '';
  return [...table.matchAll(/(\w+Kind)/g)].flatMap(([kindName = '']) =>
    accessorRules(`.resource(${kindName}).in(namespace).${verb}(`),
  );
}

/** The public methods of KubeCluster with the RBAC rules each one needs, read from the source. */
function methodRules(): Map<string, MethodRule[]> {
  const rules = new Map<string, MethodRule[]>();
  const starts = [...clusterSource.matchAll(/^ {2}(private )?(?:async )?(\w+)(?:<[^>]*>)?\(/gm)];
  starts.forEach((start, index) => {
    const [, isPrivate, name = ''] = start;
    if (isPrivate || name === 'constructor' || name === 'resource') return;
    const body = clusterSource.slice(start.index, starts[index + 1]?.index ?? clusterSource.length);
    // a power change goes to KubeVirt's subresource, named by the call's verb
    const power = /this\.call\(\s*'(start|stop)'/.exec(body);
    if (power) {
      rules.set(name, [
        {
          group: 'subresources.kubevirt.io',
          resource: `virtualmachines/${power[1]}`,
          verb: 'update',
          clusterWideWithoutNamespace: false,
          clusterScoped: false,
        },
      ]);
      return;
    }
    // a terminal: the pods/exec subresource, which the apiserver authorizes as create
    if (/this\.call\(\s*'create'[\s\S]*openPodExec\(/.test(body)) {
      const exec = { group: '', resource: 'pods/exec', verb: 'create' };
      rules.set(name, [{ ...exec, clusterWideWithoutNamespace: false, clusterScoped: false }]);
      return;
    }
    // a read-modify-write store of Leases through the Lease methods
    const delegated = [...body.matchAll(/this\.(\w+)\(namespace/g)].flatMap(
      ([, called = '']) => rules.get(called) ?? [],
    );
    const own = accessorRules(body).map((rule) => ({
      ...rule,
      // `namespace ? client.in(namespace) : client`: every namespace without one
      clusterWideWithoutNamespace: body.includes('client.in(namespace) : client'),
      clusterScoped: rule.clusterScoped && !body.includes('client.in(namespace) : client'),
    }));
    const listed = [...own, ...delegated, ...cachedKindRules(body)];
    if (listed.length > 0) rules.set(name, listed);
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
  const use = (rule: MethodRule, scope: 'cluster' | 'namespace') => {
    used.add(`${rule.group} ${rule.resource} ${rule.verb} ${scope}`);
    // a terminal is a websocket upgrade of a GET: the apiserver authorizes it as get, newer ones as create too
    if (rule.resource === 'pods/exec') used.add(`${rule.group} ${rule.resource} get ${scope}`);
  };
  for (const file of sourceFiles('src')) {
    const text = readFileSync(file, 'utf8');
    for (const call of text.matchAll(/\.(\w+)\(\s*(\)|undefined\b)?/g)) {
      const [, name = '', withoutNamespace] = call;
      for (const rule of rules.get(name) ?? []) {
        const wide = rule.clusterScoped || (rule.clusterWideWithoutNamespace && withoutNamespace);
        use(rule, wide ? 'cluster' : 'namespace');
      }
    }
    for (const rule of accessorRules(text)) use(rule, rule.clusterScoped ? 'cluster' : 'namespace');
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

// KubeVirt's install lets every authenticated user read its CR (ClusterRole kubevirt.io:default): docs/claims.md says so
const grantedByKubevirt = new Set<Permission>(['kubevirt.io kubevirts list cluster']);

describe('the permissions in docs/claims.md', () => {
  it('reads a rule for every public KubeCluster method', () => {
    const unread = [...methodRules()]
      .filter(([, rules]) => rules.some((rule) => rule.resource === '?'))
      .map(([name]) => name);
    expect(unread).toEqual([]);
    expect(methodRules().get('listVmis')).toMatchObject([
      { resource: 'virtualmachineinstances', verb: 'list' },
    ]);
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
      [...used]
        .filter((permission) => !documented.has(permission) && !grantedByKubevirt.has(permission))
        .sort(),
      'used, not documented',
    ).toEqual([]);
  });
});
