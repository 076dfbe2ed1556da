import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { generateKeyPair, SignJWT, UnsecuredJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryAuditSink } from '../../../src/audit.js';
import { createOidcSignIn } from '../../../src/broker/oidc-sign-in.js';
import { type BrokerServer, serveBroker } from '../../../src/broker/serve.js';
import { sealSession, sessionKeyFrom, unsealSignIn } from '../../../src/broker/session-cookie.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi, type Vdi } from '../../../src/vdi.js';
import { createPoolMembers, createTestNamespace, useSharedCluster } from '../../support/cluster.js';
import { type LocalIssuer, startLocalIssuer } from '../../support/oidc-issuer.js';

const cluster = useSharedCluster();
const alice = 'alice@example.com';
const admin = 'admin@example.com';
const sessionSecret = 'a-session-secret-of-the-broker-tests-0123456789';
const hour = 60 * 60_000;

let issuer: LocalIssuer;
let server: BrokerServer;
let vdi: Vdi;
let namespace: string;

beforeAll(async () => {
  namespace = await createTestNamespace(cluster(), 'oidc');
  await createPoolMembers(cluster(), namespace, 'devpool', 2);
  issuer = await startLocalIssuer({
    redirectUris: ['http://127.0.0.1:9/auth/callback'],
    accounts: [{ email: alice, groups: ['devs'] }],
  });
  const signIn = await createOidcSignIn({
    issuer: issuer.url,
    clientId: issuer.clientId,
    clientSecret: issuer.clientSecret,
    redirectUrl: 'http://127.0.0.1:9/auth/callback',
    sessionSecret,
    keyRefetchCooldownMs: 1_000,
  });
  vdi = createVdi({
    kubeConfig: cluster().kubeConfig,
    namespace,
    audit: new MemoryAuditSink(),
    retry: { retries: 1, minDelayMs: 10 },
  });
  server = await serveBroker({
    vdi,
    identity: [signIn.identity],
    signIn,
    namespaces: [namespace],
    adminGroups: ['vdi-admins'],
    listen: '127.0.0.1:0',
    handleSignals: false,
    log: () => {},
  });
});
afterAll(async () => {
  await server?.close();
  await issuer?.close();
});

interface Answer {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: the tests read answers field by field
  body: any;
}

async function call(
  method: string,
  path: string,
  credentials: { token?: string; cookie?: string; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...credentials.headers };
  if (credentials.token !== undefined) headers.authorization = `Bearer ${credentials.token}`;
  if (credentials.cookie !== undefined) headers.cookie = `corral-vdi-session=${credentials.cookie}`;
  const response = await fetch(`${server.url}${path}`, { method, headers, redirect: 'manual' });
  const text = await response.text();
  const isJson = response.headers.get('content-type')?.includes('json') && text !== '';
  return { status: response.status, headers: response.headers, body: isJson ? JSON.parse(text) : text };
}

const claimPath = () => `/api/vdi/pools/vm/${namespace}/devpool/claim`;

// What a refused request must leave as it was: the claims (Leases) of the namespace and the task log.
async function clusterState(): Promise<string[]> {
  const leases = await vdi.context.cluster.listLeases(namespace);
  const records = await (vdi.audit as MemoryAuditSink).list();
  return [
    ...leases.map((lease) => `lease ${lease.metadata?.name}`),
    ...records.map((record) => record.action),
  ];
}

async function tokenOfUnknownKey(): Promise<string> {
  const { privateKey } = await generateKeyPair('RS256');
  return await new SignJWT({ email: alice, email_verified: true })
    .setProtectedHeader({ alg: 'RS256', kid: randomUUID() })
    .setIssuer(issuer.url)
    .setAudience(issuer.clientId)
    .setSubject(alice)
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(privateKey);
}

const badTokens: Array<[string, () => Promise<string>, string]> = [
  ['an expired token', () => issuer.mintToken({ email: alice, expiresIn: -120 }), 'expired at'],
  [
    'a token for another audience',
    () => issuer.mintToken({ email: alice, audience: 'another-app' }),
    'another audience ("another-app")',
  ],
  ['a token signed by an unknown key', tokenOfUnknownKey, 'a key http://127.0.0.1'],
  [
    'a none-algorithm token',
    async () =>
      new UnsecuredJWT({ email: alice, email_verified: true })
        .setIssuer(issuer.url)
        .setAudience(issuer.clientId)
        .setSubject(alice)
        .setExpirationTime('5m')
        .encode(),
    'not signed with a key pair',
  ],
  [
    'a token signed with the client secret (HS256)',
    async () =>
      await new SignJWT({ email: alice, email_verified: true })
        .setProtectedHeader({ alg: 'HS256' })
        .setIssuer(issuer.url)
        .setAudience(issuer.clientId)
        .setSubject(alice)
        .setExpirationTime('5m')
        .sign(new TextEncoder().encode(issuer.clientSecret)),
    'not signed with a key pair',
  ],
  [
    'a token whose signature was changed',
    async () => {
      const [head, payload, signature = ''] = (await issuer.mintToken({ email: alice })).split('.');
      return [head, payload, `${signature.slice(0, -4)}${signature.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`].join(
        '.',
      );
    },
    'signature does not verify',
  ],
  [
    'a token without an expiry',
    () => issuer.mintToken({ email: alice, expiresIn: null }),
    '"exp" claim is missing',
  ],
  [
    'a token whose groups claim is not a list',
    () => issuer.mintToken({ email: alice, groups: 'devs,vdi-admins' }),
    '"groups" claim is not a list',
  ],
  [
    'a token whose issuer says the email is not verified',
    () => issuer.mintToken({ email: alice, claims: { email_verified: false } }),
    'not verified',
  ],
];

describe('bearer tokens of the OpenID issuer', () => {
  it.each(badTokens)('refuses %s with 401 UNAUTHENTICATED and claims nothing', async (_, mint, reason) => {
    const before = await clusterState();
    const answer = await call('POST', claimPath(), { token: await mint() });
    expect(answer.status).toBe(401);
    expect(answer.body.error.code).toBe('UNAUTHENTICATED');
    expect(answer.body.error.message).toContain(reason);
    expect(await clusterState()).toEqual(before);
  });

  it('takes a token that expired within the 30 s of clock skew', async () => {
    const answer = await call('GET', '/api/vdi/desktops', {
      token: await issuer.mintToken({ email: alice, expiresIn: -10 }),
    });
    expect(answer.status).toBe(200);
  });

  it("takes the groups from the token's groups claim: a member of an admin group is an admin", async () => {
    const everyone = '/api/vdi/desktops?all=1';
    const member = await issuer.mintToken({ email: admin, groups: ['devs', 'vdi-admins'] });
    const other = await issuer.mintToken({ email: alice, groups: ['devs'] });
    expect((await call('GET', everyone, { token: member })).status).toBe(200);
    const refused = await call('GET', everyone, { token: other });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('FORBIDDEN');
  });

  it('follows a key rotation, fetching the keys again at most once per cooldown for unknown keys', async () => {
    const before = await issuer.mintToken({ email: alice });
    expect((await call('GET', '/api/vdi/desktops', { token: before })).status).toBe(200);
    await issuer.rotateKeys();
    const after = await issuer.mintToken({ email: alice });
    const fetches = issuer.keyFetches();
    // a burst of tokens of unknown keys costs the issuer at most one fetch per cooldown
    const burst = await Promise.all(
      Array.from(
        { length: 20 },
        async () => (await call('GET', '/api/vdi/desktops', { token: await tokenOfUnknownKey() })).status,
      ),
    );
    expect(burst.every((status) => status === 401)).toBe(true);
    expect(issuer.keyFetches() - fetches).toBeLessThanOrEqual(1);
    // the new key is taken once the cooldown allows a fetch; the old one, still published, goes on working
    await waitFor(async () => (await call('GET', '/api/vdi/desktops', { token: after })).status, {
      describe: 'a token of the new key to be taken',
      until: (status) => status === 200,
      timeoutMs: 10_000,
    });
    expect((await call('GET', '/api/vdi/desktops', { token: before })).status).toBe(200);
  });

  it("claims a desktop for the token's login", async () => {
    const answer = await call('POST', claimPath(), { token: await issuer.mintToken({ email: alice }) });
    expect(answer.status).toBe(200);
    expect(answer.body.owner).toBe(alice);
  });
});

describe('the session cookie', () => {
  const key = sessionKeyFrom(sessionSecret);
  const seal = async (session: Parameters<typeof sealSession>[1], now: Date) =>
    (await sealSession(key, session, now)).sealed;
  const sealedNow = (login = alice) => seal({ login, groups: ['devs'], signedInAt: new Date() }, new Date());

  it('identifies the user it was sealed for', async () => {
    const answer = await call('GET', '/api/vdi/desktops', { cookie: await sealedNow() });
    expect(answer.status).toBe(200);
  });

  it.each([
    [
      'a cookie changed by the browser',
      async () => {
        const sealed = await sealedNow(admin);
        const at = Math.floor(sealed.length / 2);
        return `${sealed.slice(0, at)}${sealed[at] === 'A' ? 'B' : 'A'}${sealed.slice(at + 1)}`;
      },
      'not one this broker sealed',
    ],
    [
      'a cookie sealed with another key',
      async () =>
        (
          await sealSession(
            sessionKeyFrom('another-broker-with-another-session-secret'),
            { login: admin, groups: [], signedInAt: new Date() },
            new Date(),
          )
        ).sealed,
      'not one this broker sealed',
    ],
    [
      'an expired cookie',
      () => {
        const then = new Date(Date.now() - 9 * hour);
        return seal({ login: alice, groups: [], signedInAt: then }, then);
      },
      'expired',
    ],
  ])('refuses %s with 401 UNAUTHENTICATED and claims nothing', async (_, cookie, reason) => {
    const before = await clusterState();
    const answer = await call('POST', claimPath(), { cookie: await cookie() });
    expect(answer.status).toBe(401);
    expect(answer.body.error.code).toBe('UNAUTHENTICATED');
    expect(answer.body.error.message).toContain(reason);
    expect(await clusterState()).toEqual(before);
  });

  it('is renewed when past half its life, and not before', async () => {
    const fiveHoursAgo = new Date(Date.now() - 5 * hour);
    const old = await seal({ login: alice, groups: [], signedInAt: fiveHoursAgo }, fiveHoursAgo);
    const renewed = await call('GET', '/api/vdi/desktops', { cookie: old });
    expect(renewed.status).toBe(200);
    const [cookie] = renewed.headers.getSetCookie();
    expect(cookie).toMatch(/^corral-vdi-session=[^;]+; Path=\/; HttpOnly; SameSite=Lax; Max-Age=28800$/);
    expect(
      (await call('GET', '/api/vdi/desktops', { cookie: await sealedNow() })).headers.getSetCookie(),
    ).toEqual([]);
  });

  it('is never renewed past 24 hours from sign-in', async () => {
    const signedInAt = new Date(Date.now() - 20 * hour);
    const sealed = await seal({ login: alice, groups: [], signedInAt }, new Date(Date.now() - 5 * hour));
    const [cookie = ''] = (await call('GET', '/api/vdi/desktops', { cookie: sealed })).headers.getSetCookie();
    // renewed at hour 20 of the session: 4 hours are left of its 24, not a fresh 8
    const maxAge = Number(/Max-Age=(\d+)/.exec(cookie)?.[1]);
    expect(maxAge).toBeGreaterThan(4 * 60 * 60 - 60);
    expect(maxAge).toBeLessThanOrEqual(4 * 60 * 60);
  });
});

describe('the sign-in routes', () => {
  it('sends a visit to the page without a session to the sign-in, keeping where it was going', async () => {
    const answer = await call('GET', '/?connect=vm/x/y');
    expect(answer.status).toBe(302);
    expect(answer.headers.get('location')).toBe(
      `/auth/login?return=${encodeURIComponent('/?connect=vm/x/y')}`,
    );
  });

  it('starts a sign-in at the issuer with PKCE, state and nonce in a short-lived HttpOnly cookie', async () => {
    const answer = await call('GET', '/auth/login?return=/');
    expect(answer.status).toBe(302);
    const location = new URL(answer.headers.get('location') ?? '');
    expect(location.origin).toBe(issuer.url);
    expect(Object.fromEntries(location.searchParams)).toMatchObject({
      client_id: issuer.clientId,
      response_type: 'code',
      redirect_uri: 'http://127.0.0.1:9/auth/callback',
      code_challenge_method: 'S256',
      scope: 'openid email groups',
    });
    expect(location.searchParams.get('state')).toMatch(/^[\w-]{20,}$/);
    expect(location.searchParams.get('nonce')).toMatch(/^[\w-]{20,}$/);
    expect(answer.headers.getSetCookie()).toEqual([
      expect.stringMatching(/^corral-vdi-sign-in=[^;]+; Path=\/; HttpOnly; SameSite=Lax; Max-Age=600$/),
    ]);
  });

  it.each([
    ['//evil.example/x', '/'],
    ['https://evil.example/', '/'],
    ['/\\evil.example', '/'],
    ['/?connect=vm/x/y', '/?connect=vm/x/y'],
  ])('returns a sign-in asked to end at %j to %j: a local path only', async (asked, returnTo) => {
    const answer = await call('GET', `/auth/login?${new URLSearchParams({ return: asked })}`);
    const sealed = /^corral-vdi-sign-in=([^;]+)/.exec(answer.headers.getSetCookie()[0] ?? '')?.[1] ?? '';
    const started = await unsealSignIn(sessionKeyFrom(sessionSecret), sealed, new Date());
    expect(started).toMatchObject({ returnTo });
  });

  it('names its cookies __Host- and makes them Secure when the redirect URL is https', async () => {
    const signIn = await createOidcSignIn({
      issuer: issuer.url,
      clientId: issuer.clientId,
      redirectUrl: 'https://desktops.example.com/auth/callback',
    });
    const host = createServer((req, res) => {
      void signIn.handle(req, res);
    });
    await new Promise<void>((resolve) => host.listen(0, '127.0.0.1', resolve));
    try {
      const answer = await fetch(`http://127.0.0.1:${(host.address() as AddressInfo).port}/auth/login`, {
        redirect: 'manual',
      });
      expect(answer.headers.getSetCookie()).toEqual([
        expect.stringMatching(
          /^__Host-corral-vdi-sign-in=[^;]+; Path=\/; HttpOnly; SameSite=Lax; Secure; Max-Age=600$/,
        ),
      ]);
    } finally {
      host.close();
    }
  });

  it('refuses a callback this browser did not start, with 401 UNAUTHENTICATED', async () => {
    const answer = await call('GET', '/auth/callback?code=stolen&state=guessed');
    expect(answer.status).toBe(401);
    expect(answer.body.error.code).toBe('UNAUTHENTICATED');
    expect(answer.body.error.message).toContain('start again at /auth/login');
  });

  it('signs out by clearing the cookie, but not from another site', async () => {
    const crossSite = await call('POST', '/auth/logout', { headers: { 'sec-fetch-site': 'cross-site' } });
    expect(crossSite.status).toBe(403);
    expect(crossSite.headers.getSetCookie()).toEqual([]);
    const answer = await call('POST', '/auth/logout', { cookie: 'x' });
    expect(answer.status).toBe(200);
    expect(answer.headers.getSetCookie()).toEqual([
      'corral-vdi-session=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0',
    ]);
    expect((await call('GET', '/auth/logout')).status).toBe(405);
  });
});
