import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi } from '../../../src/vdi.js';
import { createPoolMembers, createTestNamespace } from '../../support/cluster.js';
import { cliEnv, collectOutput, runCli, startCli, useCliCluster } from '../cli/cli-support.js';
import { alice, launchChromium, startSignInProxy } from './browser-support.js';

const cluster = useCliCluster();
let browser: Browser;
const cleanups: Array<() => unknown> = [];
const folder = mkdtempSync(join(tmpdir(), 'corral-browser-'));

beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  rmSync(folder, { recursive: true, force: true });
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function serveWithPage(namespace: string): Promise<string> {
  const child: ChildProcess = startCli(
    [
      'broker',
      'serve',
      '--ui',
      '--listen',
      '127.0.0.1:0',
      '--trust-header',
      'Tailscale-User-Login',
      '-n',
      namespace,
      '--kubeconfig',
      cluster().kubeconfigPath,
    ],
    cliEnv({ CORRAL_VDI_BROKER: '1' }),
  );
  cleanups.push(() => child.exitCode === null && child.kill('SIGKILL'));
  const output = await collectOutput(child).waitFor(/Desktops page: (http:\/\/\S+)\//);
  return /Desktops page: (http:\/\/\S+)\//.exec(output)?.[1] ?? '';
}

describe('the Desktops page from the CLI', () => {
  it('is served by broker serve --ui, and connect --broker --open opens the console page in $BROWSER', async () => {
    const namespace = await createTestNamespace(cluster(), 'web-cli');
    await createPoolMembers(cluster(), namespace, 'devpool', 1);
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace });
    const claimed = await vdi.claim({ pool: 'devpool', identity: alice });
    const desktopId = `vm/${namespace}/${claimed.member}`;
    const url = await serveWithPage(namespace);
    const proxy = await startSignInProxy(url, alice);
    cleanups.push(() => proxy.close());

    const page = await fetch(`${url}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'self'");
    expect(await page.text()).toContain('/ui/page.js');
    expect((await fetch(`${url}/ui/page.js`)).headers.get('content-type')).toMatch(/^text\/javascript/);
    for (const path of ['/ui/../package.json', '/ui/%2e%2e/package.json', '/ui/missing.js', '/index.html']) {
      expect((await fetch(`${url}${path}`)).status, path).toBe(404);
    }
    expect((await fetch(`${url}/`, { method: 'POST' })).status).toBe(405);

    const recorder = join(folder, 'record-url.sh');
    const recorded = join(folder, 'opened-url');
    writeFileSync(recorder, `#!/bin/sh\nprintf '%s' "$1" > '${recorded}'\n`, { mode: 0o755 });
    const opened = await runCli(
      ['connect', claimed.member, '--broker', proxy.url, '--open', '-n', namespace],
      cliEnv({ BROWSER: `${recorder} %s` }),
    );
    expect(opened.code, opened.stderr).toBe(0);
    const consolePage = await waitFor(() => readFileSync(recorded, 'utf8'), {
      describe: 'the browser command to get the console page',
    });
    expect(consolePage).toBe(`${proxy.url}/?connect=${encodeURIComponent(desktopId)}`);

    const context = await browser.newContext();
    cleanups.push(() => context.close());
    const tab = await context.newPage();
    await tab.goto(consolePage);
    await waitFor(() => tab.locator('.corral-console').getAttribute('data-desktop'), {
      describe: 'the console page to open the console of the desktop',
      until: (shown) => shown === desktopId,
    });
    await waitFor(() => tab.locator('.corral-console').getAttribute('data-protocol'), {
      describe: 'the console page to pick VNC',
      until: (protocol) => protocol === 'vnc',
    });

    const nowhere = await runCli(
      ['connect', claimed.member, '--broker', proxy.url, '--open', '-n', namespace],
      cliEnv({ BROWSER: join(folder, 'no-such-browser') }),
    );
    expect(nowhere.code, nowhere.stderr).toBe(0);
    expect(nowhere.stdout).toContain(`No browser could start; open ${consolePage}`);
  });
});
