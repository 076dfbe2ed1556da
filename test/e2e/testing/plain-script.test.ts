import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { ensureControlPlaneBinaries } from '../../../src/testing/binaries.js';

const packageRoot = fileURLToPath(new URL('../../../', import.meta.url));
// A project of its own that installed the package, as a user's script meets it: no vitest around it.
const project = mkdtempSync(join(tmpdir(), 'corral-vdi-plain-script-'));
mkdirSync(join(project, 'node_modules', '@corral'), { recursive: true });
symlinkSync(packageRoot, join(project, 'node_modules', '@corral', 'vdi'));

afterAll(() => rmSync(project, { recursive: true, force: true }));

interface ScriptRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runScript(name: string, source: string, env: NodeJS.ProcessEnv = process.env): Promise<ScriptRun> {
  const path = join(project, name);
  writeFileSync(path, source);
  return new Promise((resolve) => {
    execFile(process.execPath, [path], { cwd: project, env, timeout: 120_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr });
    });
  });
}

describe('a local cluster in a plain script', () => {
  it('resolves stop() once every process has exited, and the line after the await runs', async () => {
    const run = await runScript(
      'stop.mjs',
      `import { existsSync } from 'node:fs';
import { startLocalCluster } from '@corral/vdi/testing';
const cluster = await startLocalCluster();
console.log('started');
await cluster.stop();
console.log('done', existsSync(cluster.connection.dataDir) ? 'folder left' : 'folder removed');
`,
    );
    expect(run.stderr).not.toMatch(/unsettled top-level await/);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^done folder removed$/m);
  });

  it('settles a start that fails, after stopping what it started', async () => {
    const binaries = await ensureControlPlaneBinaries();
    const assets = join(project, 'broken-assets');
    mkdirSync(assets);
    symlinkSync(binaries.etcd, join(assets, 'etcd'));
    writeFileSync(join(assets, 'kube-apiserver'), '#!/bin/sh\necho "refusing to start" >&2\nexit 3\n');
    chmodSync(join(assets, 'kube-apiserver'), 0o755);
    const run = await runScript(
      'failed-start.mjs',
      `import { startLocalCluster } from '@corral/vdi/testing';
const outcome = await startLocalCluster().then(() => 'started', (error) => error.code);
console.log('done', outcome);
`,
      { ...process.env, KUBEBUILDER_ASSETS: assets },
    );
    expect(run.stderr).not.toMatch(/unsettled top-level await/);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe('done CONTROL_PLANE_FAILED\n');
  });
});

// The script runs the built package (dist/), as scripts/test.sh builds it before the tests.
if (!existsSync(join(packageRoot, 'dist', 'testing', 'index.js'))) {
  throw new Error(
    'dist/testing/index.js is missing: build the package first (npx tsup), as scripts/test.sh does.',
  );
}
