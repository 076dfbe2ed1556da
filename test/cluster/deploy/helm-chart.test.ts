import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  ApiException,
  type KubernetesObject,
  KubernetesObjectApi,
  loadAllYaml,
  PatchStrategy,
} from '@kubernetes/client-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { createTestNamespace, useSharedCluster } from '../../support/cluster.js';
import { chartPath, helmBinary, renderChart, renderError, runHelm } from '../../support/helm.js';

const cluster = useSharedCluster();
const deployFolder = resolve(import.meta.dirname, '../../../deploy');
// the settings of deploy/oidc/broker.yaml
const oidcValues = {
  mode: 'oidc',
  ui: true,
  'oidc.issuer': 'https://login.example.com/realms/corp',
  'oidc.clientId': 'corral-vdi',
  'oidc.redirectUrl': 'https://desktops.example.com/auth/callback',
  admins: null,
  adminGroups: ['vdi-admins'],
};

interface Container {
  name: string;
  env?: Array<{ name: string; value: string }>;
}
interface Deployment extends KubernetesObject {
  spec: { replicas: number; template: { spec: { containers: Container[] } } };
}

function yamlObjects(...files: string[]): KubernetesObject[] {
  return files.flatMap((file) =>
    loadAllYaml(readFileSync(join(deployFolder, file), 'utf8')),
  ) as KubernetesObject[];
}

const keyOf = (object: KubernetesObject) =>
  `${object.kind}/${object.metadata?.namespace ? `${object.metadata.namespace}/` : ''}${object.metadata?.name}`;

/**
 * The objects by kind, namespace and name. The chart keeps the served namespaces on uninstall (an annotation for
 * Helm alone), and leaves the broker's own namespace to `helm install --create-namespace`, as Helm needs it before
 * the release: both are put back the way deploy/ has them.
 */
function normalised(
  objects: KubernetesObject[],
  releaseNamespace?: string,
): Record<string, KubernetesObject> {
  const made: KubernetesObject[] = releaseNamespace
    ? [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: releaseNamespace } }]
    : [];
  const byKey: Record<string, KubernetesObject> = {};
  for (const object of [...made, ...objects]) {
    const copy = structuredClone(object);
    if (copy.kind === 'Namespace') delete copy.metadata?.annotations?.['helm.sh/resource-policy'];
    if (copy.metadata?.annotations && Object.keys(copy.metadata.annotations).length === 0)
      delete copy.metadata.annotations;
    byKey[keyOf(copy)] = copy;
  }
  return byKey;
}

const brokerEnv = (objects: KubernetesObject[]) =>
  (objects.find((object) => object.kind === 'Deployment') as Deployment).spec.template.spec.containers.find(
    (container) => container.name === 'broker',
  )?.env;

/** Sends the object to the apiserver as Helm 4 does, a server-side apply, in a dry run. */
async function dryRunApply(object: KubernetesObject): Promise<string> {
  try {
    await KubernetesObjectApi.makeApiClient(cluster().kubeConfig).patch(
      object,
      undefined,
      'All',
      'helm',
      true,
      PatchStrategy.ServerSideApply,
    );
    return 'accepted';
  } catch (error) {
    if (error instanceof ApiException) return `${error.code} ${JSON.parse(String(error.body)).message}`;
    throw error;
  }
}

beforeAll(() => {
  // builds Helm into the binary cache the first time (minutes), so no test's own timeout pays for it
  helmBinary();
}, 900_000);

describe('the Helm chart (deploy/helm/corral-vdi)', () => {
  it('passes helm lint, in strict mode, in each mode', async () => {
    for (const set of [
      [],
      [
        '--set',
        'mode=oidc',
        '--set',
        'oidc.issuer=https://login.example.com',
        '--set',
        'oidc.clientId=vdi',
        '--set',
        'oidc.redirectUrl=https://vdi.example.com/auth/callback',
      ],
    ]) {
      const run = await runHelm(['lint', '--strict', chartPath, ...set]);
      expect(run.code, `${run.stdout}${run.stderr}`).toBe(0);
      expect(run.stdout).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
    }
  });

  it('renders by default exactly the objects of deploy/, as installed into corral-system', async () => {
    const rendered = normalised(await renderChart('corral-system'), 'corral-system');
    const deployed = normalised(yamlObjects('00-namespaces.yaml', 'broker.yaml', 'rbac.yaml'));
    expect(Object.keys(rendered).sort()).toEqual(Object.keys(deployed).sort());
    for (const key of Object.keys(deployed)) expect(rendered[key], key).toEqual(deployed[key]);
  });

  it("renders in oidc mode, with deploy/oidc's settings, exactly deploy/oidc/ beside the namespaces and the RBAC", async () => {
    const rendered = normalised(await renderChart('corral-system', oidcValues), 'corral-system');
    const deployed = normalised(yamlObjects('00-namespaces.yaml', 'oidc/broker.yaml', 'rbac.yaml'));
    expect(Object.keys(rendered).sort()).toEqual(Object.keys(deployed).sort());
    for (const key of Object.keys(deployed)) expect(rendered[key], key).toEqual(deployed[key]);
  });

  it('gives every served namespace the Role and RoleBinding, and drops the leader Role without leader election', async () => {
    const objects = await renderChart('vdi', {
      servedNamespaces: ['team-a', 'team-b'],
      replicas: 1,
      'leaderElection.enabled': false,
    });
    const keys = objects.map(keyOf).filter((key) => key.startsWith('Role'));
    expect(keys.sort()).toEqual([
      'Role/team-a/corral-vdi-broker',
      'Role/team-b/corral-vdi-broker',
      'RoleBinding/team-a/corral-vdi-broker',
      'RoleBinding/team-b/corral-vdi-broker',
    ]);
    const env = brokerEnv(objects);
    expect(env).toContainEqual({ name: 'CORRAL_VDI_NAMESPACES', value: 'team-a,team-b' });
    const deployment = objects.find((object) => object.kind === 'Deployment') as Deployment & {
      spec: { template: { spec: { containers: Array<{ args: string[] }> } } };
    };
    expect(deployment.spec.replicas).toBe(1);
    expect(
      deployment.spec.template.spec.containers[0]?.args.filter((arg) => arg.startsWith('--leader')),
    ).toEqual([]);
  });

  it('sets CORRAL_VDI_DRAIN_DELAY as drainDelay says, 10s by default, and leaves it out when empty', async () => {
    const names = (objects: KubernetesObject[]) => brokerEnv(objects)?.map((variable) => variable.name);
    expect(brokerEnv(await renderChart('corral-system'))).toContainEqual({
      name: 'CORRAL_VDI_DRAIN_DELAY',
      value: '10s',
    });
    expect(brokerEnv(await renderChart('corral-system', { drainDelay: '30s' }))).toContainEqual({
      name: 'CORRAL_VDI_DRAIN_DELAY',
      value: '30s',
    });
    expect(names(await renderChart('corral-system', { drainDelay: '' }))).not.toContain(
      'CORRAL_VDI_DRAIN_DELAY',
    );
  });

  it('renders a ServiceMonitor of the metrics port only when asked, with the labels Prometheus selects by', async () => {
    expect((await renderChart('corral-system')).map(keyOf)).not.toContain(
      'ServiceMonitor/corral-system/corral-vdi-broker',
    );
    const monitor = (
      await renderChart('corral-system', {
        'metrics.serviceMonitor.enabled': true,
        'metrics.serviceMonitor.labels.release': 'kube-prometheus-stack',
      })
    ).find((object) => object.kind === 'ServiceMonitor');
    expect(monitor).toMatchObject({
      apiVersion: 'monitoring.coreos.com/v1',
      metadata: { labels: { release: 'kube-prometheus-stack' } },
      spec: {
        selector: { matchLabels: { 'app.kubernetes.io/name': 'corral-vdi-broker' } },
        endpoints: [{ port: 'metrics', path: '/metrics', interval: '30s' }],
      },
    });
  });

  it('refuses values the broker could not run with, saying which to change', async () => {
    expect(await renderError({ mode: 'proxy' })).toMatch(/mode/);
    expect(await renderError({ mode: 'oidc' })).toMatch(/oidc\.issuer is needed in oidc mode/);
    expect(await renderError({ 'leaderElection.enabled': false })).toMatch(
      /replicas above 1 need leaderElection/,
    );
    expect(await renderError({ drainDelay: 'ten seconds' })).toMatch(/drainDelay/);
    expect(await renderError({ 'oidc.secret.create': true, ...oidcValues })).toMatch(
      /clientSecret is needed/,
    );
  });

  it('is accepted object by object by the apiserver in a server-side apply dry run, in each mode with its Secret', async () => {
    const broker = await createTestNamespace(cluster(), 'helm');
    const served = await createTestNamespace(cluster(), 'helm-vms');
    const modes = {
      gateway: {
        'gateway.oauth2Proxy.secret.create': true,
        'gateway.oauth2Proxy.secret.env.OAUTH2_PROXY_CLIENT_ID': 'corral-vdi',
        drainDelay: '10s',
      },
      oidc: {
        ...oidcValues,
        'oidc.secret.create': true,
        'oidc.secret.clientSecret': 'the-client-secret',
        'oidc.secret.sessionKey': 'a-session-key-of-the-dry-run',
      },
    };
    for (const [mode, values] of Object.entries(modes)) {
      const objects = await renderChart(broker, { servedNamespaces: [served], ...values });
      expect(objects.map((object) => object.kind)).toContain('Secret');
      for (const object of objects) {
        expect(`${mode} ${keyOf(object)}: ${await dryRunApply(object)}`).toBe(
          `${mode} ${keyOf(object)}: accepted`,
        );
      }
    }
    // a dry run checks what it is sent: a broken Deployment is refused
    const deployment = (await renderChart(broker, { servedNamespaces: [served] })).find(
      (object) => object.kind === 'Deployment',
    ) as Deployment;
    expect(
      await dryRunApply({ ...deployment, spec: { ...deployment.spec, replicas: -1 } } as Deployment),
    ).toMatch(/^422 /);
  });
});
