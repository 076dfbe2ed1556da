import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  ApiException,
  type KubernetesObject,
  KubernetesObjectApi,
  loadAllYaml,
} from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { parseDuration } from '../../../src/parse-duration.js';
import { createTestNamespace, useSharedCluster } from '../../support/cluster.js';
import { documentedPermissions, type Permission, permissionName } from '../rbac/documented-role.js';

const cluster = useSharedCluster();
const folder = resolve(import.meta.dirname, '../../../deploy');

interface RbacObject extends KubernetesObject {
  rules: Array<{ apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] }>;
}

/** Every object of deploy/*.yaml (or of a variant's folder, such as `oidc`), its namespaces renamed to the test's own. */
function deployObjects(namespaces: { broker: string; served: string }, variant = ''): KubernetesObject[] {
  const from = join(folder, variant);
  return readdirSync(from)
    .filter((file) => file.endsWith('.yaml'))
    .sort()
    .flatMap((file) =>
      loadAllYaml(
        readFileSync(join(from, file), 'utf8')
          .replaceAll('corral-system', namespaces.broker)
          .replaceAll('corral-vms', namespaces.served),
      ),
    ) as KubernetesObject[];
}

const nameOf = (object: KubernetesObject) => `${object.kind}/${object.metadata?.name}`;

// One permission per verb, as the least-privilege suite names them.
function permissionsOf(role: RbacObject, scope: Permission['scope']): string[] {
  return role.rules
    .flatMap((rule) =>
      rule.apiGroups.flatMap((group) =>
        rule.resources.flatMap((resource) =>
          rule.verbs.map((verb) => permissionName({ scope, group, resource, verb })),
        ),
      ),
    )
    .sort();
}

async function dryRunCreate(object: KubernetesObject & { spec?: unknown }): Promise<string> {
  try {
    await KubernetesObjectApi.makeApiClient(cluster().kubeConfig).create(object, undefined, 'All');
    return 'accepted';
  } catch (error) {
    if (error instanceof ApiException) return `${error.code} ${JSON.parse(String(error.body)).message}`;
    throw error;
  }
}

describe('the deploy example', () => {
  it('is accepted object by object by the apiserver in a server-side dry run', async () => {
    const broker = await createTestNamespace(cluster(), 'deploy');
    const served = await createTestNamespace(cluster(), 'deploy-vms');
    const objects = deployObjects({ broker, served });
    expect(objects.map(nameOf)).toEqual([
      `Namespace/${broker}`,
      `Namespace/${served}`,
      'Deployment/corral-vdi-broker',
      'Service/corral-vdi-broker',
      'PodDisruptionBudget/corral-vdi-broker',
      'ServiceAccount/corral-vdi-broker',
      'Role/corral-vdi-broker',
      'RoleBinding/corral-vdi-broker',
      'Role/corral-vdi-broker-leader',
      'RoleBinding/corral-vdi-broker-leader',
      'ClusterRole/corral-vdi-broker',
      'ClusterRoleBinding/corral-vdi-broker',
    ]);
    for (const object of objects) {
      // the test made its namespaces already: a Namespace passes validation and is refused only as existing
      const expected =
        object.kind === 'Namespace' ? `409 namespaces "${object.metadata?.name}" already exists` : 'accepted';
      expect(`${nameOf(object)}: ${await dryRunCreate(object)}`).toBe(`${nameOf(object)}: ${expected}`);
    }
    // a dry run checks what it is sent: a broken Deployment is refused
    const deployment = objects.find((object) => object.kind === 'Deployment') as KubernetesObject & {
      spec: { replicas: number };
    };
    expect(await dryRunCreate({ ...deployment, spec: { ...deployment.spec, replicas: -1 } })).toMatch(
      /^422 /,
    );
  });

  it('creates the namespaces its objects live in, ahead of them, as kubectl apply -f deploy/ sends them', () => {
    const objects = deployObjects({ broker: 'corral-system', served: 'corral-vms' });
    const made = objects.flatMap((object, index) =>
      object.kind === 'Namespace' ? [[object.metadata?.name, index]] : [],
    );
    const firstUse = new Map<string, number>();
    objects.forEach((object, index) => {
      const namespace = object.metadata?.namespace;
      if (namespace !== undefined && !firstUse.has(namespace)) firstUse.set(namespace, index);
    });
    expect([...firstUse.keys()].sort()).toEqual(['corral-system', 'corral-vms']);
    for (const [namespace, index] of firstUse) {
      expect(made.find(([name]) => name === namespace)?.[1], namespace).toBeLessThan(index);
    }
  });

  it('grants exactly the documented Role and ClusterRole, the console websockets, and the leader Lease alone', () => {
    const objects = deployObjects({ broker: 'corral-system', served: 'corral-vms' });
    const find = (kind: string, name: string) =>
      objects.find((object) => object.kind === kind && object.metadata?.name === name) as RbacObject;
    const documented = documentedPermissions();
    const names = (scope: Permission['scope']) =>
      documented.filter((permission) => permission.scope === scope).map(permissionName);
    expect(permissionsOf(find('Role', 'corral-vdi-broker'), 'namespace')).toEqual(
      [
        ...names('namespace'),
        'get virtualmachineinstances/vnc.subresources.kubevirt.io',
        'get virtualmachineinstances/console.subresources.kubevirt.io',
      ].sort(),
    );
    expect(permissionsOf(find('ClusterRole', 'corral-vdi-broker'), 'cluster')).toEqual(
      names('cluster').sort(),
    );
    expect(find('Role', 'corral-vdi-broker-leader').rules).toEqual([
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
      {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        resourceNames: ['corral-broker-leader'],
        verbs: ['get', 'update'],
      },
    ]);
  });

  it('runs three replicas whose probes and scrape port are the broker’s operations listener', () => {
    const deployment = deployObjects({ broker: 'corral-system', served: 'corral-vms' }).find(
      (object) => object.kind === 'Deployment',
    ) as
      | (KubernetesObject & {
          spec: {
            replicas: number;
            template: {
              spec: {
                containers: Array<{
                  name: string;
                  args: string[];
                  ports: Array<{ name: string; containerPort: number }>;
                  livenessProbe: { httpGet: { path: string; port: string } };
                  readinessProbe: { httpGet: { path: string; port: string } };
                }>;
              };
            };
          };
        })
      | undefined;
    const broker = deployment?.spec.template.spec.containers.find((container) => container.name === 'broker');
    expect(deployment?.spec.replicas).toBe(3);
    expect(broker?.args).toEqual(
      expect.arrayContaining([
        '--listen=127.0.0.1:8080',
        '--metrics-listen=0.0.0.0:9090',
        '--leader-elect',
        '--leader-namespace=corral-system',
      ]),
    );
    expect(broker?.ports).toEqual([{ name: 'metrics', containerPort: 9090 }]);
    expect(broker?.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'metrics' });
    expect(broker?.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'metrics' });
  });
});

interface Container {
  name: string;
  args: string[];
  ports: Array<{ name: string; containerPort: number }>;
  volumeMounts?: Array<{ name: string; mountPath: string; readOnly?: boolean }>;
}
interface Deployment extends KubernetesObject {
  spec: {
    template: {
      spec: {
        serviceAccountName: string;
        containers: Container[];
        volumes?: Array<{ name: string; secret?: { secretName: string } }>;
      };
    };
  };
}

describe('the OIDC variant of the deploy example (deploy/oidc/)', () => {
  it('is accepted object by object by the apiserver in a server-side dry run, beside the namespaces and RBAC', async () => {
    const broker = await createTestNamespace(cluster(), 'deploy-oidc');
    const served = await createTestNamespace(cluster(), 'deploy-oidc-vms');
    const objects = deployObjects({ broker, served }, 'oidc');
    expect(objects.map(nameOf)).toEqual([
      'Deployment/corral-vdi-broker',
      'Service/corral-vdi-broker',
      'PodDisruptionBudget/corral-vdi-broker',
    ]);
    for (const object of objects) {
      expect(`${nameOf(object)}: ${await dryRunCreate(object)}`).toBe(`${nameOf(object)}: accepted`);
    }
  });

  it('runs the broker alone with its sign-in flags, the client secret and session key mounted from one Secret', () => {
    const objects = deployObjects({ broker: 'corral-system', served: 'corral-vms' }, 'oidc');
    const deployment = objects.find((object) => object.kind === 'Deployment') as Deployment;
    const pod = deployment.spec.template.spec;
    expect(pod.serviceAccountName).toBe('corral-vdi-broker');
    expect(pod.containers.map((container) => container.name)).toEqual(['broker']);
    const [broker] = pod.containers;
    const flag = (name: string) =>
      broker?.args.find((arg) => arg.startsWith(`--${name}=`))?.slice(`--${name}=`.length);
    expect(broker?.args).toEqual(expect.arrayContaining(['--ui', '--leader-elect', '--listen=0.0.0.0:8080']));
    expect(flag('trust-header')).toBeUndefined();
    expect(flag('oidc-issuer')).toMatch(/^https:\/\//);
    expect(flag('oidc-redirect-url')).toMatch(/^https:\/\/.*\/auth\/callback$/);
    const mount = broker?.volumeMounts?.find((each) => each.name === 'oidc');
    expect(mount?.readOnly).toBe(true);
    expect(flag('oidc-client-secret-file')).toBe(`${mount?.mountPath}/client-secret`);
    expect(flag('oidc-session-key-file')).toBe(`${mount?.mountPath}/session-key`);
    expect(pod.volumes?.find((volume) => volume.name === 'oidc')?.secret?.secretName).toBe('corral-vdi-oidc');
    expect(broker?.ports.map((port) => port.name)).toEqual(['http', 'metrics']);
  });

  it('needs no RBAC beyond deploy/rbac.yaml: no rule there reads Secrets', () => {
    const rules = deployObjects({ broker: 'corral-system', served: 'corral-vms' }).flatMap(
      (object) => (object as Partial<RbacObject>).rules ?? [],
    );
    expect(rules.length).toBeGreaterThan(0);
    expect(rules.flatMap((rule) => rule.resources)).not.toContain('secrets');
  });
});

describe('the shutdown of the deploy example and its OIDC variant', () => {
  interface DrainedPod {
    terminationGracePeriodSeconds: number;
    containers: Array<{
      name: string;
      env?: Array<{ name: string; value: string }>;
      lifecycle?: { preStop?: { sleep?: { seconds: number } } };
    }>;
  }
  it.each([
    ['deploy/', ''],
    ['deploy/oidc/', 'oidc'],
  ])(
    '%s drains each broker before it stops, within a grace period that covers the drain and the 20 s shutdown bound',
    (_, variant) => {
      const deployment = deployObjects({ broker: 'corral-system', served: 'corral-vms' }, variant).find(
        (object) => object.kind === 'Deployment',
      ) as KubernetesObject & { spec: { template: { spec: DrainedPod } } };
      const pod = deployment.spec.template.spec;
      const broker = pod.containers.find((container) => container.name === 'broker');
      const drain = broker?.env?.find((each) => each.name === 'CORRAL_VDI_DRAIN_DELAY')?.value ?? '0';
      const drainSeconds = parseDuration(drain) / 1000;
      expect(drainSeconds).toBeGreaterThan(0);
      expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(drainSeconds + 20);
      // a sidecar in front of the broker takes SIGTERM only once the broker's drain and console closes are over
      for (const sidecar of pod.containers.filter((container) => container.name !== 'broker')) {
        expect(sidecar.lifecycle?.preStop?.sleep?.seconds).toBeGreaterThan(drainSeconds);
        expect(sidecar.lifecycle?.preStop?.sleep?.seconds).toBeLessThan(pod.terminationGracePeriodSeconds);
      }
    },
  );
});
