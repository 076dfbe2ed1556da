import { describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { inputAtAnnotation } from '../../../src/keys.js';
import { KubeCluster } from '../../../src/kube/cluster.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import {
  createPoolMembers,
  createTestNamespace,
  useSharedCluster,
  waitForRunningVmi,
} from '../../support/cluster.js';
import { connectRfb, createByteReader } from '../../support/rfb-client.js';
import { alice, keepScreenshot, startPageBroker, startSignInProxy, useChromium } from './browser-support.js';

const minute = 60_000;
const cluster = useSharedCluster();
const { browser, cleanups } = useChromium();

describe('the idle banner of the Desktops page', () => {
  it('shows a banner on a desktop about to be reclaimed as idle, and drops it after a key press in its console', async () => {
    const namespace = await createTestNamespace(cluster(), 'web-idle');
    await createPoolMembers(cluster(), namespace, 'devpool', 1);
    const clock = createTestClock(new Date());
    const server = await startPageBroker(cluster(), namespace, clock, {
      idleTimeoutMs: 30 * minute,
      idleWarningMs: 5 * minute,
    });
    cleanups.push(() => server.close());
    const kube = new KubeCluster(cluster().kubeConfig);
    const claimed = await fetch(`${server.url}/api/vdi/pools/vm/${namespace}/devpool/claim`, {
      method: 'POST',
      headers: { 'Tailscale-User-Login': alice },
    });
    const { member } = (await claimed.json()) as { member: string };
    await waitForRunningVmi(kube, namespace, member);
    const socket = new WebSocket(
      `${server.url.replace('http', 'ws')}/api/vdi/desktops/vm/${namespace}/${member}/console/vnc`,
      { headers: { 'Tailscale-User-Login': alice }, perMessageDeflate: false },
    );
    cleanups.push(async () => socket.terminate());
    const read = createByteReader(socket);
    await new Promise((resolve, reject) => {
      socket.once('open', resolve);
      socket.once('error', reject);
    });
    const rfb = await connectRfb(socket, read);

    clock.advance(26 * minute);
    expect(await server.broker.sessions.runPass()).toMatchObject({ warned: 1, reclaimed: 0 });
    const proxy = await startSignInProxy(server.url, alice);
    const context = await browser().newContext({ viewport: { width: 1100, height: 800 } });
    cleanups.push(
      () => proxy.close(),
      () => context.close(),
    );
    const page = await context.newPage();
    await page.goto(`${proxy.url}/`);
    const banner = page.locator(`li[data-desktop="vm/${namespace}/${member}"] .corral-idle-warning`);
    await banner.waitFor();
    expect(await banner.getAttribute('role')).toBe('alert');
    expect(await banner.textContent()).toMatch(
      /^No key or pointer input has reached this desktop for a while/,
    );
    await keepScreenshot(page, 'idle-banner');

    const typedAt = clock.now().toISOString();
    rfb.typeKey(0x61);
    await waitFor(() => kube.getLease(namespace, `corral-vdi-${member}`), {
      describe: 'the key press marked on the Lease',
      until: (lease) => lease?.metadata.annotations?.[inputAtAnnotation] === typedAt,
    });
    await page.evaluate(() =>
      (document.querySelector('corral-desktops') as unknown as { refresh(): Promise<void> }).refresh(),
    );
    await banner.waitFor({ state: 'detached' });
  });
});
