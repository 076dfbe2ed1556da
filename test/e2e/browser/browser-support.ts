import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { MemoryAuditSink } from '../../../src/audit.js';
import { tailscaleIdentity } from '../../../src/broker/identity.js';
import { type BrokerServer, type ServeBrokerOptions, serveBroker } from '../../../src/broker/serve.js';
import type { Screen } from '../../../src/testing/kubevirt/rfb-screen.js';
import type { LocalClusterAccess } from '../../../src/testing/local-cluster.js';
import type { TestClock } from '../../../src/testing/test-clock.js';
import { createVdi } from '../../../src/vdi.js';

export const alice = 'alice@example.com';
export const bob = 'bob@example.com';
export const admin = 'admin@example.com';

const chromiumPath = '/usr/bin/chromium';
const projectRoot = fileURLToPath(new URL('../../../', import.meta.url));
/** The built page, as `corral-vdi broker serve --ui` serves it. */
export const desktopsPageFolder = fileURLToPath(new URL('../../../dist/ui/', import.meta.url));
/** Screenshots of the main states, kept after the run (gitignored). */
export const screenshotFolder = fileURLToPath(new URL('../../../test-results/browser/', import.meta.url));

/** Starts Debian's Chromium headless, installing it first when it is missing. */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(chromiumPath)) {
    execFileSync('bash', ['scripts/apt-install.sh', 'chromium'], { cwd: projectRoot, stdio: 'inherit' });
  }
  if (!existsSync(`${desktopsPageFolder}page.js`)) {
    throw new Error(
      `${desktopsPageFolder}page.js is missing: build the package first (npx tsup), as scripts/test.sh does.`,
    );
  }
  mkdirSync(screenshotFolder, { recursive: true });
  // root in a container has no user namespaces for Chromium's sandbox
  return await chromium.launch({ executablePath: chromiumPath, headless: true, args: ['--no-sandbox'] });
}

/**
 * Launches Chromium once for a test file and closes it after the file; each test's `cleanups` run after it, last
 * added first.
 */
export function useChromium(): { browser: () => Browser; cleanups: Array<() => unknown> } {
  let launched: Browser | undefined;
  const cleanups: Array<() => unknown> = [];
  beforeAll(async () => {
    launched = await launchChromium();
  });
  afterAll(async () => {
    await launched?.close();
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  const browser = () => {
    if (!launched) throw new Error('Chromium is not launched yet: use the browser inside a test');
    return launched;
  };
  return { browser, cleanups };
}

/** Saves a screenshot of the page under test-results/browser/. */
export async function keepScreenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: `${screenshotFolder}${name}.png`, fullPage: true });
}

const loginHeader = 'tailscale-user-login';

/**
 * A stand-in for the identity proxy (`tailscale serve`) in front of the broker: it sets the login header on
 * every request and websocket upgrade, replacing any the browser sent, as the real proxy does.
 */
export async function startSignInProxy(
  target: string,
  login: string,
  options: { holdUpgrades?: Promise<void> } = {},
): Promise<{ url: string; close(): Promise<void> }> {
  const upstream = new URL(target);
  const server: Server = createServer((req, res) => {
    const headers = { ...req.headers, [loginHeader]: login };
    const forwarded = request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forwarded.on('error', () => res.destroy());
    req.pipe(forwarded);
  });
  // upgraded sockets leave the server's bookkeeping, so closing it must end them itself
  const upgraded = new Set<{ destroy(): void }>();
  server.on('upgrade', async (req, socket, head) => {
    // a slow network between the page and the broker: the websocket stays connecting until released
    await options.holdUpgrades;
    const lines = [`${req.method} ${req.url} HTTP/1.1`];
    for (let at = 0; at < req.rawHeaders.length; at += 2) {
      const name = req.rawHeaders[at] ?? '';
      if (name.toLowerCase() !== loginHeader) lines.push(`${name}: ${req.rawHeaders[at + 1] ?? ''}`);
    }
    lines.push(`${loginHeader}: ${login}`, '', '');
    const back = connect(Number(upstream.port), upstream.hostname, () => {
      back.write(lines.join('\r\n'));
      back.write(head);
      socket.pipe(back).pipe(socket);
    });
    back.on('error', () => socket.destroy());
    socket.on('error', () => back.destroy());
    upgraded.add(socket).add(back);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        for (const socket of upgraded) socket.destroy();
      }),
  };
}

/** The broker with the Desktops page, as `broker serve --ui` runs it, on a test clock. */
export async function startPageBroker(
  cluster: LocalClusterAccess,
  namespace: string,
  clock: TestClock,
  options: Partial<ServeBrokerOptions> = {},
): Promise<BrokerServer> {
  const vdi = createVdi({
    kubeConfig: cluster.kubeConfig,
    namespace,
    clock,
    audit: new MemoryAuditSink(),
    retry: { retries: 1, minDelayMs: 10 },
  });
  return await serveBroker({
    vdi,
    identity: [tailscaleIdentity({ trustHeaders: true })],
    namespaces: [namespace],
    admins: [admin],
    listen: '127.0.0.1:0',
    handleSignals: false,
    desktopsPage: desktopsPageFolder,
    log: () => {},
    ...options,
  });
}

/** The noVNC canvas as drawn in the page: RGB, three bytes a pixel, row by row; `undefined` before a frame. */
export async function readVncScreen(page: Page): Promise<Screen | undefined> {
  const shown = await page.evaluate(() => {
    const canvas = document.querySelector<HTMLCanvasElement>('.corral-screen canvas');
    const context = canvas?.getContext('2d');
    if (!canvas || !context || canvas.width === 0) return undefined;
    const { data } = context.getImageData(0, 0, canvas.width, canvas.height);
    // base64 of the RGB bytes: a fraction of what an array of numbers costs to send back
    let binary = '';
    for (let at = 0; at < data.length; at += 4)
      binary += String.fromCharCode(data[at] ?? 0, data[at + 1] ?? 0, data[at + 2] ?? 0);
    return { width: canvas.width, height: canvas.height, rgb: btoa(binary) };
  });
  return shown && { ...shown, rgb: new Uint8Array(Buffer.from(shown.rgb, 'base64')) };
}

/** Whether the page shows `expected` exactly, pixel for pixel. */
export function showsScreen(shown: Screen | undefined, expected: Screen): boolean {
  return (
    shown !== undefined &&
    shown.width === expected.width &&
    shown.height === expected.height &&
    Buffer.from(shown.rgb).equals(Buffer.from(expected.rgb))
  );
}
