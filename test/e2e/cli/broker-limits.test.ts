import type { ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { createPoolMembers } from '../../support/cluster.js';
import { cliEnv, collectOutput, createNamespace, startCli, useCliCluster } from './cli-support.js';

const cluster = useCliCluster();
const running: ChildProcess[] = [];

afterEach(() => {
  for (const child of running.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

/** A broker on the pools `devpool`, `gpu` and `spare` of one member each, limited by `env` and `extra` flags. */
async function serve(prefix: string, env: Record<string, string>, extra: string[] = []) {
  const namespace = await createNamespace(cluster(), prefix);
  await Promise.all(
    ['devpool', 'gpu', 'spare'].map((pool) => createPoolMembers(cluster(), namespace, pool, 1)),
  );
  const args = ['broker', 'serve', '--listen', '127.0.0.1:0', '--trust-header', 'X-Forwarded-User'];
  const child = startCli(
    [...args, ...extra, '-n', namespace, '--kubeconfig', cluster().kubeconfigPath],
    cliEnv({ CORRAL_VDI_BROKER: '1', CORRAL_ADMINS: 'admin@example.com', ...env }),
  );
  running.push(child);
  const listening = /broker listening on (http:\/\/\S+)/;
  const url = listening.exec(await collectOutput(child).waitFor(listening))?.[1] ?? '';
  const claim = async (pool: string) => {
    const answer = await fetch(`${url}/api/vdi/pools/vm/${namespace}/${pool}/claim`, {
      method: 'POST',
      headers: { 'X-Forwarded-User': 'alice@example.com' },
    });
    const body = (await answer.json()) as { error?: { code: string } };
    return `${answer.status} ${body.error?.code ?? 'claimed'}`;
  };
  return { claim };
}

describe('corral-vdi broker serve with a per-user limit', () => {
  it('refuses a claim past CORRAL_MAX_DESKTOPS_PER_USER with 409 USER_LIMIT_REACHED', async () => {
    const { claim } = await serve('cli-limit-env', { CORRAL_MAX_DESKTOPS_PER_USER: '1' });
    expect(await claim('devpool')).toBe('200 claimed');
    expect(await claim('gpu')).toBe('409 USER_LIMIT_REACHED');
  });

  it('takes --max-desktops-per-user over the variable', async () => {
    const { claim } = await serve('cli-limit-flag', { CORRAL_MAX_DESKTOPS_PER_USER: '1' }, [
      '--max-desktops-per-user',
      '2',
    ]);
    expect(await claim('devpool')).toBe('200 claimed');
    expect(await claim('gpu')).toBe('200 claimed');
    expect(await claim('spare')).toBe('409 USER_LIMIT_REACHED');
  });
});
