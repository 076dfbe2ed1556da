import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  AppsV1Api,
  CoreV1Api,
  KubeConfig,
  RbacAuthorizationV1Api,
  type V1Container,
} from '@kubernetes/client-node';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { KubeCluster } from '../../../src/kube/cluster.js';
import { createPoolMembers } from '../../support/cluster.js';
import { chartPath, helmBinary, runHelm } from '../../support/helm.js';
import { cliEnv, collectOutput, startCli, useCliCluster } from './cli-support.js';

const cluster = useCliCluster();
const running: ChildProcess[] = [];
afterEach(() => {
  for (const child of running.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

beforeAll(() => {
  // builds Helm into the binary cache the first time (minutes), so no test's own timeout pays for it
  helmBinary();
}, 900_000);

/** A kubeconfig file that signs in with a token the apiserver issued to the ServiceAccount. */
async function serviceAccountKubeconfig(namespace: string, name: string): Promise<string> {
  const answer = await cluster()
    .kubeConfig.makeApiClient(CoreV1Api)
    .createNamespacedServiceAccountToken({ namespace, name, body: { spec: { expirationSeconds: 3600 } } });
  const config = new KubeConfig();
  config.loadFromOptions({
    clusters: [
      {
        name: 'local',
        server: cluster().server,
        caData: Buffer.from(cluster().certificates.caPem).toString('base64'),
        skipTLSVerify: false,
      },
    ],
    users: [{ name, token: answer.status?.token ?? '' }],
    contexts: [{ name: 'local', cluster: 'local', user: name, namespace }],
    currentContext: 'local',
  });
  const path = join(cluster().connection.dataDir, `kubeconfig-${namespace}-${name}`);
  writeFileSync(path, config.exportConfig(), { mode: 0o600 });
  return path;
}

/** The broker container's arguments with both listeners moved to free loopback ports. */
const onLoopback = (args: string[]) =>
  args.map((arg) =>
    arg.startsWith('--listen=')
      ? '--listen=127.0.0.1:0'
      : arg.startsWith('--metrics-listen=')
        ? '--metrics-listen=127.0.0.1:0'
        : arg,
  );

describe('the Helm chart installed with helm install', () => {
  it('runs a broker with the installed container settings under the installed RBAC, which leads and hands out a claim', async () => {
    const suffix = randomBytes(3).toString('hex');
    const [broker, served, name] = [`helm-${suffix}`, `helm-vms-${suffix}`, `corral-vdi-broker-${suffix}`];
    const helm = (args: string[]) =>
      runHelm([...args, '--kubeconfig', cluster().kubeconfigPath, '--namespace', broker]);
    const installed = await helm([
      'install',
      'corral-vdi',
      chartPath,
      '--create-namespace',
      '--set',
      `name=${name}`,
      '--set',
      `servedNamespaces={${served}}`,
      '--set',
      'drainDelay=5s',
    ]);
    expect(installed.code, installed.stderr).toBe(0);
    expect(installed.stdout).toMatch(/STATUS: deployed/);

    await createPoolMembers(cluster(), served, 'devpool', 1);
    const deployment = await cluster()
      .kubeConfig.makeApiClient(AppsV1Api)
      .readNamespacedDeployment({ namespace: broker, name });
    const container = deployment.spec?.template.spec?.containers.find(
      (each) => each.name === 'broker',
    ) as V1Container;
    const env = Object.fromEntries(
      (container.env ?? []).map((variable) => [variable.name, variable.value ?? '']),
    );
    expect(env).toMatchObject({ CORRAL_VDI_NAMESPACES: served, CORRAL_VDI_DRAIN_DELAY: '5s' });

    // the broker as the Pod runs it: its arguments and environment, the ServiceAccount's token
    const kubeconfig = await serviceAccountKubeconfig(broker, name);
    const child = startCli([...onLoopback(container.args ?? []), '--kubeconfig', kubeconfig], cliEnv(env));
    running.push(child);
    const log = collectOutput(child);
    const started = await log.waitFor(/broker: leading as \S+/);
    expect(started).toContain(`on Lease ${broker}/corral-broker-leader`);
    const url = /broker listening on (http:\/\/\S+)/.exec(started)?.[1] ?? '';

    // from 127.0.0.1, where the chart's --trusted-proxies puts the oauth2-proxy sidecar
    const claim = await fetch(`${url}/api/vdi/pools/vm/${served}/devpool/claim`, {
      method: 'POST',
      headers: { 'X-Forwarded-Email': 'alice@example.com' },
    });
    const body = (await claim.json()) as { id: string; owner: string };
    expect(claim.status, JSON.stringify(body)).toBe(200);
    expect(body.owner).toBe('alice@example.com');
    const member = body.id.split('/')[2];
    const lease = await new KubeCluster(cluster().kubeConfig).getLease(served, `corral-vdi-${member}`);
    expect(lease?.spec?.holderIdentity).toBe('alice@example.com');
    child.kill('SIGTERM');

    // an uninstall takes the cluster-wide objects and leaves the served namespace, where the desktops live
    const uninstalled = await helm(['uninstall', 'corral-vdi']);
    expect(uninstalled.code, uninstalled.stderr).toBe(0);
    const roles = await cluster().kubeConfig.makeApiClient(RbacAuthorizationV1Api).listClusterRole();
    expect(roles.items.map((role) => role.metadata?.name)).not.toContain(name);
    const namespace = await cluster().kubeConfig.makeApiClient(CoreV1Api).readNamespace({ name: served });
    expect(namespace.status?.phase).toBe('Active');
  });
});
