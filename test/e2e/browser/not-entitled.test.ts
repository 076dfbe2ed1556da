import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { podKind } from '../../../src/kube/resource-kinds.js';
import { setPoolSettings } from '../../../src/pools/set-pool-settings.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createPoolMembers, createTestNamespace, useSharedCluster } from '../../support/cluster.js';
import { alice, keepScreenshot, startPageBroker, startSignInProxy, useChromium } from './browser-support.js';

const cluster = useSharedCluster();
const image = 'ghcr.io/acme/devbox:1.4';
const { browser, cleanups } = useChromium();

const textOf = (page: Page, selector: string) => async () =>
  (await page.locator(selector).allTextContents()).join(' | ');

describe.each(['vm', 'ct'] as const)(
  'the Desktops page of a %s desktop whose pool no longer lets its holder in',
  (kind) => {
    it('leaves the pool out, says when and why the desktop goes back, and refuses its console with the reason', async () => {
      const namespace = await createTestNamespace(cluster(), `web-entitled-${kind}`);
      const server = await startPageBroker(cluster(), namespace, createTestClock(new Date()));
      cleanups.push(() => server.close());
      const { vdi } = server.broker;
      if (kind === 'vm') {
        await createPoolMembers(cluster(), namespace, 'gpu', 1);
        await setPoolSettings(vdi.context, { name: 'gpu', allowedGroups: ['ml'] });
      } else {
        await vdi.applyCtPool({ spec: { name: 'gpu', image, size: 1, allowedGroups: ['ml'] } });
        await vdi.reconcileCtPool({ name: 'gpu' });
        await waitFor(() => vdi.context.cluster.resource(podKind).in(namespace).get('gpu-1'), {
          describe: `Pod ${namespace}/gpu-1 to be Ready`,
          until: (pod) =>
            pod?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true,
        });
      }
      // alice claimed while her identity provider put her in ml; the pool now lets research in only
      const { member } = await vdi.claim({ pool: 'gpu', identity: alice, groups: ['ml'], kind });
      if (kind === 'vm') await setPoolSettings(vdi.context, { name: 'gpu', allowedGroups: ['research'] });
      else await vdi.applyCtPool({ spec: { name: 'gpu', image, size: 1, allowedGroups: ['research'] } });
      expect(await server.broker.sessions.runPass()).toMatchObject({ notEntitled: 1, errors: [] });

      const proxy = await startSignInProxy(server.url, alice);
      const context = await browser().newContext({ viewport: { width: 1100, height: 800 } });
      cleanups.push(
        () => proxy.close(),
        () => context.close(),
      );
      const page = await context.newPage();
      await page.goto(`${proxy.url}/`);
      const row = `li[data-desktop="${kind}/${namespace}/${member}"]`;
      const session = await waitFor(textOf(page, `${row} .corral-session`), {
        describe: "alice's desktop to show its pending reclaim",
        until: (text) => text.includes('reclaimed at'),
      });
      expect(session).toContain('because its pool no longer lets you in');
      expect(await page.locator(`li[data-pool="${kind}/${namespace}/gpu"]`).count()).toBe(0);

      await page.click(`${row} button[data-action="connect"]`);
      const error = await waitFor(textOf(page, '.corral-error:not([hidden])'), {
        describe: 'the page to say why the console is refused',
        until: (text) => text.length > 0,
      });
      expect(error).toContain(`may not use pool ${kind}/${namespace}/gpu`);
      await keepScreenshot(page, `not-entitled-${kind}`);
    });
  },
);
