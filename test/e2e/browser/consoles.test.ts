import { performance } from 'node:perf_hooks';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { BrokerServer } from '../../../src/broker/serve.js';
import { createVdiClient } from '../../../src/client/index.js';
import { KubeCluster } from '../../../src/kube/cluster.js';
import { podKind } from '../../../src/kube/resource-kinds.js';
import type { VmDevices } from '../../../src/kubevirt-types.js';
import { simulatorAnnotations } from '../../../src/testing/kubevirt/fault-knobs.js';
import { renderScreen } from '../../../src/testing/kubevirt/rfb-screen.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createTestNamespace, stoppedVm, useSharedCluster } from '../../support/cluster.js';
import {
  alice,
  bob,
  keepScreenshot,
  readVncScreen,
  showsScreen,
  startPageBroker,
  startSignInProxy,
  useChromium,
} from './browser-support.js';

const cluster = useSharedCluster();
const { browser, cleanups } = useChromium();

async function setUp(devices: VmDevices = {}) {
  const namespace = await createTestNamespace(cluster(), 'web-console');
  const vm = stoppedVm('devpool-1', { 'corral.dev/vdi-pool': 'devpool' });
  await new KubeCluster(cluster().kubeConfig).createVm(namespace, {
    ...vm,
    spec: { ...vm.spec, template: { spec: { domain: { memory: { guest: '128Mi' }, devices } } } },
  });
  const server: BrokerServer = await startPageBroker(cluster(), namespace, createTestClock(new Date()));
  cleanups.push(() => server.close());
  const proxies = new Map<string, string>();
  const proxyFor = async (login: string) => {
    const known = proxies.get(login);
    if (known) return known;
    const proxy = await startSignInProxy(server.url, login);
    cleanups.push(() => proxy.close());
    proxies.set(login, proxy.url);
    return proxy.url;
  };
  const context = await browser().newContext({ viewport: { width: 1100, height: 900 } });
  cleanups.push(() => context.close());
  const open = async (login: string, query = ''): Promise<Page> => {
    const page = await context.newPage();
    await page.goto(`${await proxyFor(login)}/${query}`);
    return page;
  };
  const clientOf = async (login: string) =>
    createVdiClient({
      baseUrl: await proxyFor(login),
      fetch: (input, init) => fetch(input, init),
    });
  return { namespace, server, open, clientOf, proxyFor, kube: new KubeCluster(cluster().kubeConfig) };
}

const row = 'li[data-desktop]';

async function claimInPage(page: Page): Promise<{ desktopId: string; member: string }> {
  await page.click('button[data-action="claim"]');
  const desktopId = await waitFor(() => page.locator(row).first().getAttribute('data-desktop'), {
    describe: "alice's desktop to appear",
  });
  await waitFor(async () => (await page.locator(`${row} .corral-phase`).allTextContents()).join(), {
    describe: "alice's desktop to show Running",
    until: (phase) => phase === 'Running',
  });
  return { desktopId, member: desktopId.split('/')[2] ?? '' };
}

function waitForScreen(page: Page, expected: ReturnType<typeof renderScreen>, what: string) {
  return waitFor(() => readVncScreen(page), {
    describe: `the noVNC canvas to show ${what}`,
    until: (shown) => showsScreen(shown, expected),
  });
}

/** The `rows cols` that `stty size` printed after `marker`. */
function sizeIn(text: string | null, marker: string): { rows: number; cols: number } {
  const [, rows, cols] = new RegExp(`${marker}(\\d+) (\\d+)`).exec(text ?? '') ?? [];
  return { rows: Number(rows), cols: Number(cols) };
}

// xterm.js's scrollbar lies over the right edge of its box, 14 px wide
const scrollbarWidth = 14;

/**
 * How the shell's size (`stty size`) fills the terminal's box: the rows xterm.js draws, and the space left to the
 * right of the drawn columns and below the drawn rows, with the cell size those imply.
 */
async function fitOf(page: Page, shell: { rows: number; cols: number }) {
  const drawn = await page.evaluate(() => {
    const box = document.querySelector('.corral-screen') as HTMLElement;
    const screen = (box.querySelector('.xterm-screen') as HTMLElement).getBoundingClientRect();
    return {
      rows: box.querySelectorAll('.xterm-rows > div').length,
      width: screen.width,
      height: screen.height,
      boxWidth: box.clientWidth,
      boxHeight: box.clientHeight,
    };
  });
  return {
    rows: drawn.rows,
    spareWidth: drawn.boxWidth - scrollbarWidth - drawn.width,
    spareHeight: drawn.boxHeight - drawn.height,
    cellWidth: drawn.width / shell.cols,
    cellHeight: drawn.height / shell.rows,
  };
}

/** Expects xterm.js to draw the shell's rows and columns, filling its box up to less than one cell. */
async function expectFitted(page: Page, shell: { rows: number; cols: number }) {
  const fit = await fitOf(page, shell);
  expect(fit.rows, 'rows drawn').toBe(shell.rows);
  expect(fit.spareWidth, 'width left beside the columns').toBeGreaterThanOrEqual(0);
  expect(fit.spareWidth, 'width left beside the columns').toBeLessThan(fit.cellWidth);
  expect(fit.spareHeight, 'height left below the rows').toBeGreaterThanOrEqual(0);
  expect(fit.spareHeight, 'height left below the rows').toBeLessThan(fit.cellHeight);
}

describe('consoles in Chromium', () => {
  it('shows alice her VM on noVNC, takes a key, marks the disconnect when the tab closes, and reconnects within grace', async () => {
    const { namespace, open, clientOf, kube } = await setUp();
    const page = await open(alice);
    const { desktopId, member } = await claimInPage(page);

    const clicked = performance.now();
    await page.click(`${row} button[data-action="connect"]`);
    await waitForScreen(page, renderScreen({ name: member }), `the name ${member}`);
    const firstFrameMs = Math.round(performance.now() - clicked);
    console.info(`Connect to the first framebuffer: ${firstFrameMs} ms`);
    const vdi = await clientOf(alice);
    await waitFor(() => vdi.getDesktop(desktopId), {
      describe: 'the broker to count the console',
      until: (desktop) => desktop.connected && desktop.disconnectedAt === null,
    });
    await waitFor(async () => (await page.locator(`${row} .corral-session`).allTextContents()).join(), {
      describe: 'the page to say the desktop is connected',
      until: (text) => text.includes('Connected.'),
    });

    await page.keyboard.press('q');
    await waitForScreen(page, renderScreen({ name: member, lastKeysym: 0x71 }), 'the key q');
    await waitFor(() => kube.getVmi(namespace, member), {
      describe: 'the simulator to record the key',
      until: (vmi) =>
        vmi?.metadata.annotations?.[simulatorAnnotations.vncKeys]?.split(' ').includes('q') ?? false,
    });
    await keepScreenshot(page, 'console-vnc');

    await page.close();
    const dropped = await waitFor(() => vdi.getDesktop(desktopId), {
      describe: 'the disconnect mark to land when the tab closed',
      until: (desktop) => !desktop.connected && desktop.disconnectedAt !== null,
    });
    expect(dropped.reclaimReason).toBe('disconnect-grace');
    expect(Date.parse(dropped.reclaimAt ?? '')).toBeGreaterThan(Date.parse(dropped.disconnectedAt ?? ''));

    const again = await open(alice, `?connect=${desktopId}`);
    await waitForScreen(again, renderScreen({ name: member }), `the name ${member} again`);
    const back = await waitFor(() => vdi.getDesktop(desktopId), {
      describe: 'the reconnect to clear the disconnect mark',
      until: (desktop) => desktop.connected,
    });
    expect(back).toMatchObject({ owner: alice, disconnectedAt: null, reclaimAt: null });

    await again.click(`${row} button[data-action="release"]`);
    await waitFor(() => again.locator(row).count(), {
      describe: 'the released desktop to leave the page',
      until: (count) => count === 0,
    });
    expect(await vdi.listDesktops()).toEqual([]);
  });

  it('shows why a dropped console closed and reconnects once the desktop runs again', async () => {
    const { namespace, open, kube } = await setUp();
    const page = await open(alice);
    const { member } = await claimInPage(page);
    await page.click(`${row} button[data-action="connect"]`);
    await waitForScreen(page, renderScreen({ name: member }), `the name ${member}`);

    await kube.stopVm(namespace, member);
    const status = await waitFor(() => page.locator('.corral-console-status').textContent(), {
      describe: 'the page to say the console closed',
      until: (text) => text?.startsWith('The console closed') ?? false,
    });
    expect(status).not.toBe('The console closed.');
    await keepScreenshot(page, 'console-dropped');
    expect(await page.locator('button[data-action="reconnect"]').isVisible()).toBe(true);

    await waitFor(() => page.locator(`${row} button[data-action="start"]`).count(), {
      describe: 'the page to offer Start for the stopped desktop',
      until: (count) => count === 1,
    });
    // a stopped desktop's console is refused before any upgrade, in words that say what to do
    await page.click(`${row} button[data-action="connect"]`);
    await waitFor(() => page.locator('.corral-error').textContent(), {
      describe: 'the page to say the desktop must be started first',
      until: (text) => text?.endsWith('is not running; start it first, then connect to it.') ?? false,
    });
    expect(await page.locator('.corral-console').getAttribute('data-state')).toBe('failed');
    await page.click(`${row} button[data-action="start"]`);
    await waitFor(async () => (await page.locator(`${row} .corral-phase`).allTextContents()).join(), {
      describe: 'the desktop to run again',
      until: (phase) => phase === 'Running',
    });
    await page.click('button[data-action="reconnect"]');
    await waitForScreen(page, renderScreen({ name: member }), `the name ${member} after the reconnect`);
  });

  it('opens the serial console in xterm.js when the VM has no graphics device, and echoes what alice types', async () => {
    const { open } = await setUp({ autoattachGraphicsDevice: false });
    const page = await open(alice);
    const { member } = await claimInPage(page);
    await page.click(`${row} button[data-action="connect"]`);
    await waitFor(() => page.locator('.corral-console').getAttribute('data-protocol'), {
      describe: 'the page to open the serial console, the plan target without VNC',
      until: (protocol) => protocol === 'serial',
    });
    expect(await page.locator('.corral-skipped li[data-protocol="vnc"]').textContent()).toMatch(
      /^vnc skipped: .+/,
    );
    const terminalText = () => page.locator('.corral-screen .xterm-rows').textContent();
    await waitFor(terminalText, {
      describe: "the serial console's greeting in xterm.js",
      until: (text) => text?.includes(`${member} serial console (echo)`) ?? false,
    });
    await page.locator('.corral-screen .xterm').click();
    await page.keyboard.type('hello corral');
    await waitFor(terminalText, {
      describe: 'the echo of what alice typed',
      until: (text) => text?.includes('hello corral') ?? false,
    });
    await keepScreenshot(page, 'console-serial');
  });

  it("opens a container desktop's terminal in xterm.js fitted to its box, runs a command in its shell, and resizes the shell with the window", async () => {
    const namespace = await createTestNamespace(cluster(), 'web-ct');
    const server: BrokerServer = await startPageBroker(cluster(), namespace, createTestClock(new Date()));
    cleanups.push(() => server.close());
    const { vdi } = server.broker;
    await vdi.applyCtPool({ spec: { name: 'devbox', image: 'ghcr.io/acme/devbox:1.4', size: 1 } });
    await server.broker.reconcileCtPools();
    await waitFor(() => vdi.context.cluster.resource(podKind).in(namespace).get('devbox-1'), {
      describe: `Pod ${namespace}/devbox-1 to be Ready`,
      until: (pod) =>
        pod?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true,
    });
    let releaseUpgrades: () => void = () => {};
    const holdUpgrades = new Promise<void>((resolve) => {
      releaseUpgrades = resolve;
    });
    const proxy = await startSignInProxy(server.url, alice, { holdUpgrades });
    cleanups.push(() => proxy.close());
    const context = await browser().newContext({ viewport: { width: 1100, height: 900 } });
    cleanups.push(() => context.close());
    const page = await context.newPage();
    await page.goto(`${proxy.url}/`);
    const { desktopId, member } = await claimInPage(page);
    expect(desktopId).toBe(`ct/${namespace}/${member}`);
    await page.click(`${row} button[data-action="connect"]`);
    await waitFor(() => page.locator('.corral-console').getAttribute('data-protocol'), {
      describe: 'the page to open the terminal, the only console of a container',
      until: (protocol) => protocol === 'terminal',
    });
    const terminalText = () => page.locator('.corral-screen .xterm-rows').textContent();
    // alice types before the stream is open: nothing she typed may be lost
    await page.locator('.corral-screen .xterm').click();
    await page.keyboard.type('echo "host=$HOSTNAME size=$(stty size)"');
    await page.keyboard.press('Enter');
    releaseUpgrades();
    const answer = await waitFor(terminalText, {
      describe: "the shell's answer in xterm.js",
      until: (text) => new RegExp(`host=${member} size=\\d+ \\d+`).test(text ?? ''),
    });
    const before = sizeIn(answer, `host=${member} size=`);
    await expectFitted(page, before);
    await keepScreenshot(page, 'console-terminal');

    await page.setViewportSize({ width: 700, height: 600 });
    // the new size reaches the shell before the command that asks for it
    await waitFor(() => page.locator('.corral-screen .xterm-rows > div').count(), {
      describe: 'xterm.js to draw fewer rows in the smaller window',
      until: (rows) => rows < before.rows,
    });
    await page.keyboard.type('echo "after=$(stty size)"');
    await page.keyboard.press('Enter');
    const after = sizeIn(
      await waitFor(terminalText, {
        describe: "the shell's new size in xterm.js",
        until: (text) => /after=\d+ \d+/.test(text ?? ''),
      }),
      'after=',
    );
    await expectFitted(page, after);
    expect(after.rows).toBeLessThan(before.rows);
    expect(after.cols).toBeLessThan(before.cols);
  });

  it("refuses bob's websocket to alice's console with 403 before any upgrade", async () => {
    const { namespace, server, proxyFor } = await setUp();
    const claimed = await server.broker.vdi.claim({ pool: 'devpool', identity: alice, namespace });
    const path = `/api/vdi/desktops/vm/${namespace}/${claimed.member}/console/vnc`;
    const status = await new Promise<number>((resolve, reject) => {
      void proxyFor(bob).then((url) => {
        const socket = new WebSocket(`${url.replace('http:', 'ws:')}${path}`);
        socket.once('unexpected-response', (_request, response) => resolve(response.statusCode ?? 0));
        socket.once('open', () => reject(new Error("bob's console websocket opened")));
        socket.once('error', () => {});
      }, reject);
    });
    expect(status).toBe(403);
  });
});
