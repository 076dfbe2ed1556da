import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { connect } from 'node:net';
import { promisify } from 'node:util';
import { CustomObjectsApi } from '@kubernetes/client-node';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { KubeCluster } from '../../../src/kube/cluster.js';
import { kubevirtResources, mergePatch } from '../../../src/testing/kubevirt/kube-calls.js';
import { renderScreen } from '../../../src/testing/kubevirt/rfb-screen.js';
import { rdpGuestAnnotations } from '../../../src/testing/rdp-guest.js';
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

const run = promisify(execFile);
const cluster = useSharedCluster();
const { browser, cleanups } = useChromium();
const row = 'li[data-desktop]';
const consoleSection = '.corral-console';
const password = 'Corr4l-s3cret';

/**
 * Alice's page on a VM whose guest runs FreeRDP's shadow server with `knob` (`tls`, or `nla <user> <password>`),
 * claimed and running; the broker's log lines are kept.
 */
async function setUp(knob: string) {
  const namespace = await createTestNamespace(cluster(), 'web-rdp');
  const kube = new KubeCluster(cluster().kubeConfig);
  const vm = stoppedVm('devpool-1', { 'corral.dev/vdi-pool': 'devpool' });
  await kube.createVm(namespace, {
    ...vm,
    spec: {
      ...vm.spec,
      template: { ...vm.spec.template, metadata: { annotations: { [rdpGuestAnnotations.server]: knob } } },
    },
  });
  // the guest's RDP server stops with its VMI
  cleanups.push(() => kube.stopVm(namespace, 'devpool-1').catch(() => undefined));
  const brokerLog: string[] = [];
  const server = await startPageBroker(cluster(), namespace, createTestClock(new Date()), {
    log: (line: string) => brokerLog.push(line),
  });
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
  const vmi = await waitFor(() => kube.getVmi(namespace, member), {
    describe: "the guest's RDP server to listen",
    until: (found) => found?.metadata.annotations?.[rdpGuestAnnotations.display] !== undefined,
  });
  const display = vmi?.metadata.annotations?.[rdpGuestAnnotations.display] ?? '';
  const ip = vmi?.status?.interfaces?.[0]?.ipAddress ?? '';
  const onGuest = (command: string, ...args: string[]) =>
    run(command, args, { env: { ...process.env, DISPLAY: display } });
  return { namespace, member, page, kube, display, ip, brokerLog, onGuest };
}

/** Clicks Connect and waits for the page to ask for the guest's login, the plan's target being RDP. */
async function connectToLogin(page: Page) {
  await page.click(`${row} button[data-action="connect"]`);
  await waitFor(() => page.locator(consoleSection).getAttribute('data-state'), {
    describe: 'the page to ask for the login of the RDP console',
    until: (state) => state === 'login',
  });
  expect(await page.locator(consoleSection).getAttribute('data-protocol')).toBe('rdp');
}

async function signIn(page: Page, username: string, typed: string) {
  await page.fill('.corral-rdp-login input[name="username"]', username);
  await page.fill('.corral-rdp-login input[name="password"]', typed);
  await page.click('button[data-action="rdp-sign-in"]');
}

/** The RGB of the guest's pixel (x, y) as IronRDP drew it on its canvas, with the canvas's size. */
function readRdpPixel(page: Page, x: number, y: number) {
  return page.evaluate(
    ([px, py]) => {
      const canvas = document.querySelector('iron-remote-desktop')?.shadowRoot?.querySelector('canvas');
      const context = canvas?.getContext('2d');
      if (!canvas || !context) return undefined;
      const [r = 0, g = 0, b = 0] = context.getImageData(px ?? 0, py ?? 0, 1, 1).data;
      return { rgb: [r, g, b], width: canvas.width, height: canvas.height };
    },
    [x, y],
  );
}

/** The size the page draws IronRDP's canvas at, in CSS pixels. */
const rdpCanvasBox = (page: Page) =>
  page.evaluate(() => {
    const box = document
      .querySelector('iron-remote-desktop')
      ?.shadowRoot?.querySelector('canvas')
      ?.getBoundingClientRect();
    return { width: Math.round(box?.width ?? 0), height: Math.round(box?.height ?? 0) };
  });

/** Puts `text` on the guest's X clipboard, as a program on the guest that copies it would. */
async function copyOnGuest(display: string, text: string) {
  // xclip forks to serve the selection until another client takes it or the display closes with the VMI
  const xclip = spawn('xclip', ['-selection', 'clipboard', '-i'], {
    env: { ...process.env, DISPLAY: display },
    stdio: ['pipe', 'ignore', 'ignore'],
  });
  xclip.stdin?.end(text);
  await new Promise((resolve) => xclip.once('exit', resolve));
}

// the shadow server's codecs may round a colour by a step or two
const near = (seen: number[] | undefined, wanted: number[]) =>
  seen !== undefined && wanted.every((value, at) => Math.abs((seen[at] ?? -100) - value) <= 8);

/** Watches the guest's X server for key presses, as an X client on its root window. */
function watchKeys(display: string): { pressed: () => string; stop: () => void } {
  const xev: ChildProcess = spawn('stdbuf', ['-oL', 'xev', '-root', '-event', 'keyboard'], {
    env: { ...process.env, DISPLAY: display },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  let output = '';
  xev.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  cleanups.push(() => xev.kill());
  return {
    // one keysym name a press, in order: `q`, `Control_L`, …
    pressed: () =>
      [...output.matchAll(/KeyPress event[\s\S]*?keysym 0x[0-9a-f]+, (\w+)\)/g)]
        .map((match) => match[1])
        .join(' '),
    stop: () => xev.kill(),
  };
}

const listens = (host: string, port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

describe('the RDP console in Chromium, against a real RDP server', () => {
  it("opens RDP through broker serve with NLA: a wrong password ends in the login's words, the right one shows the guest's screen and takes a key, the pointer and Ctrl+Alt+Del", async () => {
    const { page, display, brokerLog, onGuest } = await setUp(`nla alice ${password}`);
    await onGuest('xsetroot', '-solid', '#d04020');
    const keys = watchKeys(display);
    await connectToLogin(page);

    await signIn(page, 'alice', 'not-the-password');
    const message = await waitFor(() => page.locator('.corral-rdp-message').textContent(), {
      describe: 'the page to name the login as the likely cause',
      until: (text) => (text ?? '').includes('wrong user name or password is the likely cause'),
    });
    expect(message).toMatch(/^The desktop ended the connection during the login/);
    expect(await page.locator(consoleSection).getAttribute('data-state')).toBe('login');
    // the user name stays, the password field is empty again
    expect(await page.inputValue('.corral-rdp-login input[name="username"]')).toBe('alice');
    expect(await page.inputValue('.corral-rdp-login input[name="password"]')).toBe('');
    await keepScreenshot(page, 'console-rdp-wrong-password');

    await signIn(page, 'alice', password);
    // the state and the words the page shows, so that a failure says which
    await waitFor(
      async () =>
        `${await page.locator(consoleSection).getAttribute('data-state')}: ${await page.locator('.corral-console-status').textContent()}`,
      { describe: 'the RDP console to open', until: (shown) => shown.startsWith('open:') },
    );
    const drawn = await waitFor(() => readRdpPixel(page, 512, 384), {
      describe: "the canvas to show the colour drawn on the guest's display",
      until: (pixel) => near(pixel?.rgb, [0xd0, 0x40, 0x20]),
    });
    expect({ width: drawn?.width, height: drawn?.height }).toEqual({ width: 1024, height: 768 });
    await onGuest('xsetroot', '-solid', '#2050c0');
    await waitFor(() => readRdpPixel(page, 100, 700), {
      describe: 'the canvas to follow the guest when its colour changes',
      until: (pixel) => near(pixel?.rgb, [0x20, 0x50, 0xc0]),
    });

    // the pointer: the page point that shows guest pixel (400, 300)
    const box = await page.evaluate(() => {
      const rect = document
        .querySelector('iron-remote-desktop')
        ?.shadowRoot?.querySelector('canvas')
        ?.getBoundingClientRect();
      return rect && { x: rect.x, y: rect.y, width: rect.width, height: rect.height };
    });
    if (!box) throw new Error('no RDP canvas');
    await page.mouse.move(box.x + (400.5 * box.width) / 1024, box.y + (300.5 * box.height) / 768);
    await waitFor(async () => (await onGuest('xdotool', 'getmouselocation')).stdout, {
      describe: "the guest's X pointer to move to 400,300",
      until: (where) => /^x:(399|40[01]) y:(299|30[01]) /.test(where),
    });

    await page.keyboard.press('q');
    await waitFor(async () => keys.pressed(), {
      describe: "the key q to reach the guest's X server",
      until: (pressed) => pressed.split(' ').includes('q'),
    });
    await page.click('button[data-action="ctrl-alt-del"]');
    await waitFor(async () => keys.pressed(), {
      describe: "Ctrl+Alt+Del to reach the guest's X server",
      until: (pressed) => /Control_L Alt_L Delete/.test(pressed),
    });
    keys.stop();
    await keepScreenshot(page, 'console-rdp');
    // the login never reached the broker's log
    expect(brokerLog.filter((line) => line.includes(password))).toEqual([]);
  });

  it("puts the RDP console in full screen with keys still reaching the guest, and says that the guest's RDP server offers no clipboard instead of sending text nowhere", async () => {
    const { page, display, onGuest } = await setUp('tls');
    await copyOnGuest(display, 'copied on the guest');
    const keys = watchKeys(display);
    await connectToLogin(page);
    await signIn(page, '', '');
    await waitFor(() => readRdpPixel(page, 10, 10), {
      describe: "the canvas to show the guest's 1024×768 screen",
      until: (pixel) => pixel?.width === 1024 && pixel.height === 768,
    });

    // the clipboard: FreeRDP's shadow server has no clipboard channel (cliprdr), so IronRDP's would go nowhere
    const missing =
      "The desktop's RDP server has not offered a clipboard, so text cannot be copied to or from it here. Some servers offer none; a Windows desktop offers it once its session has started.";
    await page.click('button[data-action="clipboard"]');
    await page.fill('.corral-clipboard-text', 'typed in the page');
    // forced: once the page has said the clipboard is missing, the button is disabled and a click does nothing
    await page.click('button[data-action="send-clipboard"]', { force: true });
    await waitFor(() => page.locator(consoleSection).getAttribute('data-clipboard-problem'), {
      describe: 'the page to say that the desktop offers no clipboard',
      until: (problem) => problem !== null,
    });
    expect(await page.textContent('.corral-clipboard-note')).toBe(missing);
    expect(await page.getAttribute('button[data-action="clipboard"]', 'title')).toBe(missing);
    expect(await page.isDisabled('button[data-action="send-clipboard"]')).toBe(true);
    // the guest's clipboard still holds its own copy
    expect((await onGuest('xclip', '-selection', 'clipboard', '-o')).stdout).toBe('copied on the guest');
    await keepScreenshot(page, 'console-rdp-no-clipboard');
    await page.click('button[data-action="clipboard"]');

    // full screen: the guest's screen scaled up to it, its shape kept, and the keyboard still the guest's
    const before = await rdpCanvasBox(page);
    await page.click('button[data-action="fullscreen"]');
    await waitFor(() => page.evaluate(() => document.fullscreenElement?.className ?? ''), {
      describe: 'the console section to go full screen',
      until: (name) => name === 'corral-console',
    });
    const full = await waitFor(() => rdpCanvasBox(page), {
      describe: "IronRDP to scale the guest's screen up to the full-screen console",
      until: (box) => box.height > before.height,
    });
    expect(full.width / full.height).toBeCloseTo(1024 / 768, 1);
    expect(await page.textContent('button[data-action="fullscreen"]')).toBe('Exit full screen');
    await page.keyboard.press('w');
    await waitFor(async () => keys.pressed(), {
      describe: "a key typed in full screen to reach the guest's X server",
      until: (pressed) => pressed.split(' ').includes('w'),
    });
    await page.click('button[data-action="fullscreen"]');
    await waitFor(() => page.evaluate(() => document.fullscreenElement === null), {
      describe: 'the page to leave full screen',
      until: (left) => left,
    });
    keys.stop();
  });

  it("falls back to the VNC console, with the reason, when the guest's 3389 closes before RDP opens", async () => {
    const { namespace, member, page, ip } = await setUp('tls');
    await connectToLogin(page);
    // the guest's RDP service stops: the test kit stops its server when the VMI loses the knob
    await cluster()
      .kubeConfig.makeApiClient(CustomObjectsApi)
      .patchNamespacedCustomObject(
        {
          ...kubevirtResources.vmi,
          namespace,
          name: member,
          body: { metadata: { annotations: { [rdpGuestAnnotations.server]: null } } },
        },
        mergePatch,
      );
    await waitFor(() => listens(ip, 3389), {
      describe: "the guest's 3389 to close",
      until: (open) => !open,
    });
    await signIn(page, '', '');
    await waitFor(() => page.locator(consoleSection).getAttribute('data-protocol'), {
      describe: 'the page to open the next console of the plan, VNC',
      until: (protocol) => protocol === 'vnc',
    });
    await waitFor(() => readVncScreen(page), {
      describe: `the noVNC canvas to show ${member}`,
      until: (shown) => showsScreen(shown, renderScreen({ name: member })),
    });
    expect(await page.locator('.corral-skipped li[data-protocol="rdp"]').textContent()).toBe(
      'rdp skipped: The desktop refused the connection on its RDP port: no RDP server is listening there (socket error 10061).',
    );
    await keepScreenshot(page, 'console-rdp-fallback');
  });
});
