import { fileURLToPath } from 'node:url';
import { CustomObjectsApi } from '@kubernetes/client-node';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import type { BrokerServer } from '../../../src/broker/serve.js';
import { KubeCluster } from '../../../src/kube/cluster.js';
import { simulatorAnnotations } from '../../../src/testing/kubevirt/fault-knobs.js';
import { kubevirtResources, mergePatch } from '../../../src/testing/kubevirt/kube-calls.js';
import { renderScreen } from '../../../src/testing/kubevirt/rfb-screen.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createTestNamespace, stoppedVm, useSharedCluster } from '../../support/cluster.js';
import {
  alice,
  keepScreenshot,
  readVncScreen,
  showsScreen,
  startPageBroker,
  startSignInProxy,
  useChromium,
} from './browser-support.js';

const docsScreenshot = fileURLToPath(new URL('../../../docs/desktops-page.png', import.meta.url));
const cluster = useSharedCluster();
const { browser, cleanups } = useChromium();
const row = 'li[data-desktop]';

/** Alice's page with her VM's VNC console open. */
async function openVncConsole() {
  const namespace = await createTestNamespace(cluster(), 'web-toolbar');
  const kube = new KubeCluster(cluster().kubeConfig);
  await kube.createVm(namespace, stoppedVm('devpool-1', { 'corral.dev/vdi-pool': 'devpool' }));
  const server: BrokerServer = await startPageBroker(cluster(), namespace, createTestClock(new Date()));
  cleanups.push(() => server.close());
  const proxy = await startSignInProxy(server.url, alice);
  cleanups.push(() => proxy.close());
  const context = await browser().newContext({ viewport: { width: 1100, height: 800 } });
  cleanups.push(() => context.close());
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: proxy.url });
  const page = await context.newPage();
  await page.goto(`${proxy.url}/`);
  await page.click('button[data-action="claim"]');
  await waitFor(async () => (await page.locator(`${row} .corral-phase`).allTextContents()).join(), {
    describe: "alice's desktop to show Running",
    until: (phase) => phase === 'Running',
  });
  const member = 'devpool-1';
  await page.click(`${row} button[data-action="connect"]`);
  await waitFor(() => readVncScreen(page), {
    describe: `the noVNC canvas to show ${member}`,
    until: (shown) => showsScreen(shown, renderScreen({ name: member })),
  });
  const annotation = async (key: string) =>
    (await kube.getVmi(namespace, member))?.metadata.annotations?.[key];
  const guestCopies = (text: string) =>
    cluster()
      .kubeConfig.makeApiClient(CustomObjectsApi)
      .patchNamespacedCustomObject(
        {
          ...kubevirtResources.vmi,
          namespace,
          name: member,
          body: { metadata: { annotations: { [simulatorAnnotations.vncCopy]: text } } },
        },
        mergePatch,
      );
  return { page, member, annotation, guestCopies };
}

const keysOnGuest = (annotation: (key: string) => Promise<string | undefined>) => async () =>
  (await annotation(simulatorAnnotations.vncKeys))?.split(' ') ?? [];

/** The size the page draws the noVNC canvas at, in CSS pixels. */
const canvasBox = (page: Page) =>
  page.evaluate(() => {
    const box = document.querySelector('.corral-screen canvas')?.getBoundingClientRect();
    return { width: Math.round(box?.width ?? 0), height: Math.round(box?.height ?? 0) };
  });

describe('the console toolbar in Chromium', () => {
  it('sends Ctrl+Alt+Del to the VNC guest, and the keyboard stays with the desktop after the click', async () => {
    const { page, annotation } = await openVncConsole();
    await page.click('button[data-action="ctrl-alt-del"]');
    const keys = await waitFor(keysOnGuest(annotation), {
      describe: 'the guest to record Control, Alt and Delete',
      until: (pressed) => pressed.join(' ').includes('0xffe3 0xffe9 0xffff'),
    });
    expect(keys.slice(-3)).toEqual(['0xffe3', '0xffe9', '0xffff']);
    await page.keyboard.press('k');
    await waitFor(keysOnGuest(annotation), {
      describe: 'a key typed after the toolbar click to reach the guest',
      until: (pressed) => pressed.at(-1) === 'k',
    });
  });

  it("carries text from the page to the VNC guest's clipboard and the guest's copy back to the page", async () => {
    const { page, annotation, guestCopies } = await openVncConsole();
    await page.click('button[data-action="clipboard"]');
    await page.fill('.corral-clipboard-text', 'pasted from the page');
    await page.click('button[data-action="send-clipboard"]');
    await waitFor(() => annotation(simulatorAnnotations.vncClipboard), {
      describe: "the text to land on the guest's clipboard",
      until: (text) => text === 'pasted from the page',
    });

    await guestCopies('copied in the guest');
    await waitFor(() => page.inputValue('.corral-clipboard-text'), {
      describe: "the guest's copy to show in the clipboard panel",
      until: (text) => text === 'copied in the guest',
    });
    // and on this computer's clipboard, to paste anywhere
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe('copied in the guest');
    await keepScreenshot(page, 'console-clipboard');
    // the picture in docs/web.md and the README, taken again on request
    if (process.env.CORRAL_VDI_DOCS_SCREENSHOT === '1') await page.screenshot({ path: docsScreenshot });
  });

  it('puts the console in full screen, scaled up to it, keys still reaching the guest, and back', async () => {
    const { page, annotation } = await openVncConsole();
    const before = await canvasBox(page);
    await page.click('button[data-action="fullscreen"]');
    await waitFor(() => page.evaluate(() => document.fullscreenElement?.className ?? ''), {
      describe: 'the console section to go full screen',
      until: (name) => name === 'corral-console',
    });
    const full = await waitFor(() => canvasBox(page), {
      describe: 'noVNC to scale the screen up to the full-screen console',
      until: (box) => box.height > before.height,
    });
    // the guest's 320×200 keeps its shape
    expect(full.width / full.height).toBeCloseTo(320 / 200, 1);
    expect(await page.textContent('button[data-action="fullscreen"]')).toBe('Exit full screen');
    await page.keyboard.press('z');
    await waitFor(keysOnGuest(annotation), {
      describe: 'a key typed in full screen to reach the guest',
      until: (pressed) => pressed.at(-1) === 'z',
    });
    await page.click('button[data-action="fullscreen"]');
    await waitFor(() => page.evaluate(() => document.fullscreenElement === null), {
      describe: 'the page to leave full screen',
      until: (left) => left,
    });
  });

  it('scales the VNC screen with the window and hides the list on request', async () => {
    const { page } = await openVncConsole();
    const wide = await canvasBox(page);
    await page.click('button[data-action="toggle-list"]');
    const withoutList = await waitFor(() => canvasBox(page), {
      describe: 'the screen to grow into the room the list left',
      until: (box) => box.width > wide.width,
    });
    expect(await page.locator('.corral-sidebar').isHidden()).toBe(true);
    await page.setViewportSize({ width: 700, height: 500 });
    await waitFor(() => canvasBox(page), {
      describe: 'the screen to shrink with the window',
      until: (box) => box.width < withoutList.width && box.width > 0,
    });
  });
});
