import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createOidcSignIn } from '../../../src/broker/oidc-sign-in.js';
import { setPoolSettings } from '../../../src/pools/set-pool-settings.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createPoolMembers, createTestNamespace, useSharedCluster } from '../../support/cluster.js';
import { startLocalIssuer } from '../../support/oidc-issuer.js';
import { alice, keepScreenshot, startPageBroker, useChromium } from './browser-support.js';

const cluster = useSharedCluster();
const { browser, cleanups } = useChromium();

// The issuer must know the redirect URI before the broker listens, so the broker's port is chosen first.
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

describe('the Desktops page with the broker’s own OIDC sign-in, in Chromium', () => {
  it('signs alice in at the local issuer, lets her claim a desktop, refuses a changed cookie, and signs her out', async () => {
    const namespace = await createTestNamespace(cluster(), 'oidc-web');
    await createPoolMembers(cluster(), namespace, 'devpool', 1);
    const port = await freePort();
    const redirectUrl = `http://127.0.0.1:${port}/auth/callback`;
    const issuer = await startLocalIssuer({
      redirectUris: [redirectUrl],
      accounts: [{ email: alice, groups: ['devs'] }],
    });
    cleanups.push(() => issuer.close());
    const signIn = await createOidcSignIn({
      issuer: issuer.url,
      clientId: issuer.clientId,
      clientSecret: issuer.clientSecret,
      redirectUrl,
    });
    const server = await startPageBroker(cluster(), namespace, createTestClock(new Date()), {
      identity: [signIn.identity],
      signIn,
      listen: `127.0.0.1:${port}`,
    });
    cleanups.push(() => server.close());
    // alice is no admin: the page lists the pool, and she claims from it, as a member of devs by the issuer's claim
    await setPoolSettings(server.broker.vdi.context, { name: 'devpool', namespace, allowedGroups: ['devs'] });
    const context = await browser().newContext({ viewport: { width: 1100, height: 800 } });
    cleanups.push(() => context.close());
    const page = await context.newPage();

    // the page sends her to the issuer, whose dev interactions take any password
    await page.goto(`${server.url}/`);
    await page.waitForURL((url) => url.origin === issuer.url);
    await page.fill('input[name="login"]', alice);
    await page.fill('input[name="password"]', 'any password');
    await page.click('button[type="submit"]');
    await page.click('button:has-text("Continue")');
    await page.waitForURL(`${server.url}/`);

    const pool = `li[data-pool="vm/${namespace}/devpool"]`;
    await page.click(`${pool} button[data-action="claim"]`);
    await waitFor(() => page.locator('li[data-desktop]').first().getAttribute('data-desktop'), {
      describe: "alice's desktop to appear on the page",
    });
    await keepScreenshot(page, 'oidc-signed-in');
    const [lease] = await server.broker.vdi.context.cluster.listLeases(namespace);
    expect(lease?.spec?.holderIdentity).toBe(alice);

    // the session cookie: HttpOnly, SameSite=Lax; a changed one is refused 401 and claims nothing
    const [session] = (await context.cookies(server.url)).filter(
      (cookie) => cookie.name === 'corral-vdi-session',
    );
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Lax', secure: false });
    const value = session?.value ?? '';
    const at = Math.floor(value.length / 2);
    const changed = `${value.slice(0, at)}${value[at] === 'A' ? 'B' : 'A'}${value.slice(at + 1)}`;
    const refused = await fetch(`${server.url}/api/vdi/pools/vm/${namespace}/devpool/claim`, {
      method: 'POST',
      headers: { cookie: `corral-vdi-session=${changed}` },
    });
    expect(refused.status).toBe(401);
    expect((await refused.json()).error.code).toBe('UNAUTHENTICATED');
    expect(await server.broker.vdi.context.cluster.listLeases(namespace)).toHaveLength(1);

    await page.click('form.corral-sign-out button');
    await page.waitForSelector('text=You are signed out');
    const after = await page.request.get(`${server.url}/api/vdi/desktops`);
    expect(after.status()).toBe(401);
  });
});
