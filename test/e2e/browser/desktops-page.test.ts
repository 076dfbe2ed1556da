import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import type { BrokerServer } from '../../../src/broker/serve.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createPoolMembers, createTestNamespace, useSharedCluster } from '../../support/cluster.js';
import {
  alice,
  bob,
  keepScreenshot,
  startPageBroker,
  startSignInProxy,
  useChromium,
} from './browser-support.js';

const cluster = useSharedCluster();
const { browser, cleanups } = useChromium();

interface Stage {
  namespace: string;
  server: BrokerServer;
  /** Opens the page signed in as `login`, through its own proxy. */
  open(login: string, query?: string): Promise<Page>;
}

async function setUp(size: number): Promise<Stage> {
  const namespace = await createTestNamespace(cluster(), 'web');
  await createPoolMembers(cluster(), namespace, 'devpool', size);
  const server = await startPageBroker(cluster(), namespace, createTestClock(new Date()));
  cleanups.push(() => server.close());
  return {
    namespace,
    server,
    async open(login, query = '') {
      const proxy = await startSignInProxy(server.url, login);
      const context = await browser().newContext({ viewport: { width: 1100, height: 800 } });
      cleanups.push(
        () => proxy.close(),
        () => context.close(),
      );
      const page = await context.newPage();
      await page.goto(`${proxy.url}/${query}`);
      return page;
    },
  };
}

const textOf = (page: Page, selector: string) => async () =>
  (await page.locator(selector).allTextContents()).join(' | ');

describe('the Desktops page in Chromium', () => {
  it('lets alice get a desktop, shows its session and the console plan, and releases it', async () => {
    const { namespace, server, open } = await setUp(2);
    const page = await open(alice);
    const pool = `li[data-pool="vm/${namespace}/devpool"]`;
    await waitFor(textOf(page, `${pool} .corral-free`), {
      describe: 'the pool to show 2 of 2 free',
      until: (text) => text.includes('2 of 2 free'),
    });
    await waitFor(textOf(page, '.corral-empty:not([hidden])'), {
      describe: 'the page to say alice holds no desktop',
      until: (text) => text.includes('You hold no desktop'),
    });

    await page.click(`${pool} button[data-action="claim"]`);
    const row = 'li[data-desktop]';
    const desktopId = await waitFor(() => page.locator(row).first().getAttribute('data-desktop'), {
      describe: "alice's desktop to appear",
    });
    const member = desktopId.split('/')[2] ?? '';
    const held = await server.broker.vdi.listDesktops({ identity: alice });
    expect(held.map((desktop) => desktop.member)).toEqual([member]);
    await waitFor(textOf(page, `${pool} .corral-free`), {
      describe: 'the pool to show 1 of 2 free',
      until: (text) => text.includes('1 of 2 free'),
    });
    await waitFor(textOf(page, `${row} .corral-phase`), {
      describe: "alice's desktop to show Running",
      until: (text) => text === 'Running',
    });
    expect(await textOf(page, `${row} .corral-session`)()).toContain('Not connected.');
    await keepScreenshot(page, 'desktops-claimed');

    await page.click(`${row} button[data-action="connect"]`);
    const consoleSection = '.corral-console';
    await waitFor(() => page.locator(consoleSection).getAttribute('data-protocol'), {
      describe: 'the page to pick the plan target, VNC',
      until: (protocol) => protocol === 'vnc',
    });
    // the simulated VM has no address, so RDP is skipped, with the broker's reason shown
    expect(await textOf(page, '.corral-skipped li')()).toMatch(/^rdp skipped: .+/);

    await page.click(`${row} button[data-action="release"]`);
    await waitFor(() => page.locator(row).count(), {
      describe: "alice's desktop to leave the page",
      until: (count) => count === 0,
    });
    await waitFor(textOf(page, `${pool} .corral-free`), {
      describe: 'the pool to show 2 of 2 free again',
      until: (text) => text.includes('2 of 2 free'),
    });
    expect(await server.broker.vdi.listDesktops({ identity: alice })).toEqual([]);
    expect(await page.locator(consoleSection).isHidden()).toBe(true);
  });

  it('loads with no console error and no failed request, the favicon included', async () => {
    const { namespace, server } = await setUp(1);
    const proxy = await startSignInProxy(server.url, alice);
    const context = await browser().newContext({ viewport: { width: 1100, height: 800 } });
    cleanups.push(
      () => proxy.close(),
      () => context.close(),
    );
    const problems: string[] = [];
    context.on('console', (message) => {
      if (message.type() === 'error') problems.push(`${message.text()} ${message.location().url}`);
    });
    context.on('requestfailed', (request) => problems.push(`failed: ${request.url()}`));
    context.on('response', (response) => {
      if (response.status() >= 400) problems.push(`${response.status()}: ${response.url()}`);
    });
    const page = await context.newPage();
    await page.goto(`${proxy.url}/`);
    await waitFor(textOf(page, `li[data-pool="vm/${namespace}/devpool"] .corral-free`), {
      describe: 'the pool to show 1 of 1 free',
      until: (text) => text.includes('1 of 1 free'),
    });
    // the browser asks for a favicon once the page has loaded, if the page names none
    await page.waitForLoadState('networkidle');
    expect(problems).toEqual([]);
  });

  it("shows bob none of alice's desktops, and refuses him her console in words", async () => {
    const { namespace, server, open } = await setUp(1);
    const claimed = await server.broker.vdi.claim({ pool: 'devpool', identity: alice, namespace });
    const desktopId = `vm/${namespace}/${claimed.member}`;
    const page = await open(bob, `?connect=${desktopId}`);
    await waitFor(textOf(page, '.corral-error:not([hidden])'), {
      describe: 'the page to say bob does not hold the desktop',
      until: (text) => /alice@example.com|holds|holder/i.test(text),
    });
    expect(await page.locator('.corral-console').getAttribute('data-state')).toBe('failed');
    expect(await page.locator('li[data-desktop]').count()).toBe(0);
    await waitFor(textOf(page, `li[data-pool="vm/${namespace}/devpool"] .corral-free`), {
      describe: 'the pool to show 0 of 1 free',
      until: (text) => text.includes('0 of 1 free'),
    });
    expect(await page.locator('button[data-action="claim"]').isDisabled()).toBe(true);
    await keepScreenshot(page, 'desktops-refused');
  });
});
