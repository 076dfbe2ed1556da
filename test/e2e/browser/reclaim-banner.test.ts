import { describe, expect, it } from 'vitest';
import { KubeCluster } from '../../../src/kube/cluster.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createPoolMembers, createTestNamespace, useSharedCluster } from '../../support/cluster.js';
import { alice, keepScreenshot, startPageBroker, startSignInProxy, useChromium } from './browser-support.js';

const minute = 60_000;
const cluster = useSharedCluster();
const { browser, cleanups } = useChromium();

// m:ss as the banner counts, in seconds
function secondsOf(countdown: string | null): number {
  const [minutes, seconds] = (countdown ?? '').split(':').map(Number);
  return (minutes ?? Number.NaN) * 60 + (seconds ?? Number.NaN);
}

describe('the reclaim banner of the Desktops page', () => {
  it('counts down to a reclaim at the longest session, by the broker clock, and goes with the desktop', async () => {
    const namespace = await createTestNamespace(cluster(), 'web-max');
    await createPoolMembers(cluster(), namespace, 'devpool', 1);
    // the broker's clock runs far from the browser's: the countdown must follow the broker's
    const clock = createTestClock(new Date(Date.now() + 3 * 24 * 60 * minute));
    const server = await startPageBroker(cluster(), namespace, clock, {
      maxSessionMs: 60 * minute,
      reclaimWarningMs: 5 * minute,
    });
    cleanups.push(() => server.close());
    const claimed = await fetch(`${server.url}/api/vdi/pools/vm/${namespace}/devpool/claim`, {
      method: 'POST',
      headers: { 'Tailscale-User-Login': alice },
    });
    const { member } = (await claimed.json()) as { member: string };

    clock.advance(56 * minute);
    expect(await server.broker.sessions.runPass()).toMatchObject({ warned: 1, reclaimed: 0, errors: [] });
    const proxy = await startSignInProxy(server.url, alice);
    const context = await browser().newContext({ viewport: { width: 1100, height: 800 } });
    cleanups.push(
      () => proxy.close(),
      () => context.close(),
    );
    const page = await context.newPage();
    await page.goto(`${proxy.url}/`);
    const row = page.locator(`li[data-desktop="vm/${namespace}/${member}"]`);
    const banner = row.locator('.corral-reclaim-warning');
    await banner.waitFor();
    expect(await banner.getAttribute('role')).toBe('alert');
    expect(await banner.getAttribute('data-reason')).toBe('max-duration');
    expect(await banner.textContent()).toMatch(
      /^This desktop will be reclaimed in \d:\d\d \(at .+\) because the session reaches its longest allowed time\. Save your work now\.$/,
    );
    const countdown = banner.locator('.corral-countdown');
    const first = secondsOf(await countdown.textContent());
    // four minutes left by the broker's clock, less the moments the page took to load
    expect(first).toBeGreaterThan(3 * 60 + 30);
    expect(first).toBeLessThanOrEqual(4 * 60);
    await keepScreenshot(page, 'reclaim-banner');
    // it ticks in the page between two reads of the broker
    await waitFor(async () => secondsOf(await countdown.textContent()), {
      describe: 'the countdown ticking down',
      until: (seconds) => seconds < first,
      timeoutMs: 5_000,
    });

    clock.advance(4 * minute);
    expect(await server.broker.sessions.runPass()).toMatchObject({ reclaimed: 1, errors: [] });
    const kube = new KubeCluster(cluster().kubeConfig);
    expect(await kube.getLease(namespace, `corral-vdi-${member}`)).toBeUndefined();
    await page.evaluate(() =>
      (document.querySelector('corral-desktops') as unknown as { refresh(): Promise<void> }).refresh(),
    );
    await row.waitFor({ state: 'detached' });
  });
});
