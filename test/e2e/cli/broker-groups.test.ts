import type { ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { cliEnv, collectOutput, createNamespace, startCli, useCliCluster } from './cli-support.js';

const cluster = useCliCluster();
const running: ChildProcess[] = [];

afterEach(() => {
  for (const child of running.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

async function serve(namespace: string, env: Record<string, string>, extra: string[] = []): Promise<string> {
  const args = ['broker', 'serve', '--listen', '127.0.0.1:0', '--trust-header', 'X-Forwarded-User'];
  const child = startCli(
    [...args, ...extra, '-n', namespace, '--kubeconfig', cluster().kubeconfigPath],
    cliEnv({ CORRAL_VDI_BROKER: '1', CORRAL_ADMIN_GROUPS: 'vdi-admins', ...env }),
  );
  running.push(child);
  const listening = /broker listening on (http:\/\/\S+)/;
  return listening.exec(await collectOutput(child).waitFor(listening))?.[1] ?? '';
}

async function listAll(url: string, headers: Record<string, string>): Promise<number> {
  const answer = await fetch(`${url}/api/vdi/desktops?all=1`, {
    headers: { 'X-Forwarded-User': 'bob@example.com', ...headers },
  });
  await answer.body?.cancel();
  return answer.status;
}

describe('corral-vdi broker serve with a groups header', () => {
  it('makes a member of CORRAL_ADMIN_GROUPS an admin by the groups header --trust-groups-header names, and refuses a malformed one with 401', async () => {
    const namespace = await createNamespace(cluster(), 'cli-groups');
    const url = await serve(namespace, {}, ['--trust-groups-header', 'X-Forwarded-Groups']);
    expect(await listAll(url, { 'X-Forwarded-Groups': 'devs,vdi-admins' })).toBe(200);
    expect(await listAll(url, { 'X-Forwarded-Groups': 'devs' })).toBe(403);
    // the default header is not read once another is named
    expect(await listAll(url, { 'X-Auth-Request-Groups': 'vdi-admins' })).toBe(403);
    expect(await listAll(url, { 'X-Forwarded-Groups': 'devs,,vdi-admins' })).toBe(401);
  });

  it('takes the groups header from CORRAL_TRUST_GROUPS_HEADER', async () => {
    const namespace = await createNamespace(cluster(), 'cli-groups-env');
    const url = await serve(namespace, { CORRAL_TRUST_GROUPS_HEADER: 'X-Team' });
    expect(await listAll(url, { 'X-Team': 'vdi-admins' })).toBe(200);
    expect(await listAll(url, { 'X-Team': 'devs' })).toBe(403);
  });
});
