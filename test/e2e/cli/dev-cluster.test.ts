import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { controlPlaneCacheDir, kubevirtCacheDir } from '../../../src/testing/binaries.js';
import { cliEnv, jsonOf, runCli } from './cli-support.js';

const scratch = mkdtempSync(join(tmpdir(), 'corral-vdi-dev-cluster-'));
// Its own state folder, so it never meets a control plane a developer runs; the binaries come from the usual cache.
const env = cliEnv({
  HOME: scratch,
  XDG_CACHE_HOME: join(scratch, 'cache'),
  KUBEBUILDER_ASSETS: process.env.KUBEBUILDER_ASSETS || controlPlaneCacheDir(),
  CORRAL_KUBEVIRT_ASSETS: process.env.CORRAL_KUBEVIRT_ASSETS || kubevirtCacheDir(),
});

afterAll(async () => {
  await runCli(['dev-cluster', 'down'], env);
  rmSync(scratch, { recursive: true, force: true });
});

describe('corral-vdi dev-cluster', () => {
  it('starts a local control plane in the background, reuses it, reports it, and stops it', async () => {
    const kubeconfig = join(scratch, 'dev.kubeconfig');
    const up = await runCli(['dev-cluster', 'up', '--kubeconfig', kubeconfig, '-o', 'json'], env);
    expect(up.code, up.stderr).toBe(0);
    const state = jsonOf<{
      running: boolean;
      reused: boolean;
      pid: number;
      server: string;
      kubeconfig: string;
      dataDir: string;
      startedAt: string;
    }>(up);
    expect(state).toMatchObject({
      running: true,
      reused: false,
      kubeconfig,
      server: expect.stringMatching(/^https:\/\/127\.0\.0\.1:\d+$/),
    });
    expect(existsSync(kubeconfig)).toBe(true);
    expect(existsSync(state.dataDir)).toBe(true);

    const listed = await runCli(['pool', 'list'], { ...env, KUBECONFIG: kubeconfig });
    expect(listed).toEqual({ code: 0, stdout: 'no pools in namespace corral-vms\n', stderr: '' });

    const again = await runCli(['dev-cluster', 'up'], env);
    expect(again).toEqual({
      code: 0,
      stdout: [
        `local control plane already running at ${state.server} (pid ${state.pid})`,
        `kubeconfig: ${kubeconfig}`,
        `use it:     export KUBECONFIG=${kubeconfig}`,
        '',
      ].join('\n'),
      stderr: '',
    });
    const status = await runCli(['dev-cluster', 'status'], env);
    expect(status.stdout).toBe(
      `local control plane running at ${state.server} (pid ${state.pid}, since ${state.startedAt})\nkubeconfig: ${kubeconfig}\n`,
    );

    const down = await runCli(['dev-cluster', 'down'], env);
    expect(down).toEqual({ code: 0, stdout: `local control plane stopped (pid ${state.pid})\n`, stderr: '' });
    expect(jsonOf(await runCli(['dev-cluster', 'status', '-o', 'json'], env))).toEqual({ running: false });
    expect(existsSync(state.dataDir)).toBe(false);
    const gone = await runCli(['pool', 'list'], { ...env, KUBECONFIG: kubeconfig });
    expect(gone.code).toBe(1);
  });
});
