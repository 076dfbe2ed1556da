import { describe, expect, it } from 'vitest';
import { createAdminCheck } from '../../../src/broker/caller-access.js';
import type { DesktopReader } from '../../../src/broker/desktop-reader.js';
import { webRequest } from '../../../src/broker/http-io.js';
import {
  createOperationAnswers,
  createReadiness,
  type OperationAnswers,
} from '../../../src/broker/operations.js';
import type { RouteHandlers } from '../../../src/broker/route-handlers.js';
import { createRouter, createUpgradeRouter } from '../../../src/broker/router.js';
import { type RouteName, routes } from '../../../src/broker/routes.js';
import { canInspect, refusalError } from '../../../src/claims/access.js';
import type { MemberClassification } from '../../../src/claims/classify-member.js';
import type { DesktopView } from '../../../src/claims/desktop-view.js';

const alice = 'alice@example.com';
const bob = 'bob@example.com';
const admin = 'admin@example.com';

function viewOf(member: string, owner: string | undefined): DesktopView {
  return {
    id: `vm/corral-vms/${member}`,
    kind: 'vm',
    namespace: 'corral-vms',
    member,
    pool: 'devpool',
    poolId: 'vm/corral-vms/devpool',
    owner,
    sessionId: owner && 'session-1',
    claimedAt: undefined,
    expiresAt: undefined,
    legacy: false,
    phase: 'Running',
    running: true,
    ephemeral: false,
  };
}

const desktopBody = (view: DesktopView) => ({
  ...view,
  owner: view.owner ?? null,
  sessionId: view.sessionId ?? null,
  claimedAt: null,
  expiresAt: null,
  connected: false,
  disconnectedAt: null,
  reclaimAt: null,
  reclaimReason: null,
});

// devpool-1 is alice's, devpool-2 nobody's; the router reads desktops only through this reader, which asks
// the one access rule as the real reader does.
const desktops: DesktopReader = {
  read: async (kind, _namespace, member, caller) => {
    const owner = member === 'devpool-1' ? alice : undefined;
    const expiresAt = new Date('2026-07-02T13:00:00.000Z');
    const state: MemberClassification =
      owner === undefined
        ? { kind: 'free', member }
        : owner === caller.login
          ? { kind: 'held-by-caller', member, holder: owner, expiresAt, resourceVersion: '1' }
          : { kind: 'held-by-other', member, holder: owner, expiresAt };
    const decision = canInspect({
      state,
      identity: caller.login,
      isAdmin: caller.admin,
      desktopId: `${kind}/corral-vms/${member}`,
    });
    if (decision.kind === 'refused') throw refusalError(decision);
    return { view: viewOf(member, owner), lease: undefined };
  },
  describe: (view) => desktopBody(view),
  leasesByName: async () => new Map(),
};

/** Handlers that record their calls and answer what each route's schema takes. */
function recordingHandlers(calls: Array<{ name: RouteName; input: unknown }>): RouteHandlers {
  const record =
    <T>(name: RouteName, answer: T) =>
    async (input: unknown) => {
      calls.push({ name, input });
      return answer;
    };
  const task = {
    id: 'vdi-release-corral-vms-devpool-1-abc',
    action: 'vdi release' as const,
    desktop: 'vm/corral-vms/devpool-1',
    user: alice,
    status: 'done' as const,
    startedAt: '2026-07-02T12:00:00.000Z',
    finishedAt: null,
    error: null,
  };
  return {
    listPools: record('listPools', { pools: [] }),
    claim: record('claim', {
      ...desktopBody(viewOf('devpool-1', alice)),
      owner: alice,
      sessionId: 'session-1',
      retried: false,
      adopted: false,
      warm: false,
    }),
    listDesktops: record('listDesktops', { desktops: [] }),
    getDesktop: async (input) => {
      calls.push({ name: 'getDesktop', input });
      return desktops.describe(input.desktop.view, input.desktop.lease);
    },
    startDesktop: record('startDesktop', desktopBody(viewOf('devpool-1', alice))),
    releaseDesktop: record('releaseDesktop', { desktop: 'vm/corral-vms/devpool-1', task: task.id }),
    connectDesktop: record('connectDesktop', {
      desktopId: 'vm/corral-vms/devpool-1',
      namespace: 'corral-vms',
      member: 'devpool-1',
      holder: alice,
      target: { protocol: 'vnc' as const, namespace: 'corral-vms', vm: 'devpool-1' },
      fallbacks: [],
      skipped: [],
      launches: [],
    }),
    mintRdpToken: record('mintRdpToken', {
      token: 'a-token',
      expiresAt: '2026-07-02T12:01:00.000Z',
      destination: '127.1.0.2:3389',
    }),
    openapi: record('openapi', { openapi: '3.1.0' }),
    getTask: record('getTask', task),
    taskLog: record('taskLog', { records: [] }),
    getWaiter: record('getWaiter', waiter),
    cancelWait: record('cancelWait', {
      ...waiter,
      status: 'cancelled' as const,
      position: null,
      waiters: null,
    }),
  };
}

const waiter = {
  id: 'vm/corral-vms/devpool/0123456789',
  poolId: 'vm/corral-vms/devpool',
  status: 'waiting' as const,
  position: 2,
  waiters: 3,
  enqueuedAt: '2026-07-02T12:00:00.000Z',
  desktop: null,
  error: null,
};

function setUp(
  handlers?: Partial<RouteHandlers>,
  operations: OperationAnswers = createOperationAnswers(
    createReadiness([], () => {}),
    undefined,
  ),
  enabled = true,
) {
  const calls: Array<{ name: RouteName; input: unknown }> = [];
  const logs: string[] = [];
  const options = {
    namespaces: ['corral-vms'],
    enabled,
    authRequired: false,
    identify: async ({ headers }) => {
      const login = headers.get('x-user');
      const refused = headers.get('x-refused');
      if (refused !== null) return { kind: 'refused', provider: 'test', message: refused };
      return login === null ? { kind: 'anonymous' } : { kind: 'user', login, provider: 'test', groups: [] };
    },
    isAdmin: createAdminCheck([admin], []),
    desktops,
    handlers: { ...recordingHandlers(calls), ...handlers },
    operations,
    log: (line: string) => logs.push(line),
  } satisfies Parameters<typeof createRouter>[0];
  const route = createRouter(options);
  const admitUpgrade = createUpgradeRouter(options);
  const upgrade = (path: string, as?: string, extra: Record<string, string> = {}) => {
    const headers = new Headers({ host: 'broker.test', ...extra });
    if (as) headers.set('x-user', as);
    return admitUpgrade(webRequest(new Request(`http://broker.test${path}`, { headers }), undefined));
  };
  const call = async (method: string, path: string, as?: string, init: RequestInit = {}) => {
    const headers = new Headers(init.headers);
    if (as) headers.set('x-user', as);
    const response = await route(
      webRequest(new Request(`http://broker.test${path}`, { ...init, method, headers }), undefined),
    );
    const json = response?.headers['content-type']?.startsWith('application/json');
    return response && { ...response, body: json ? JSON.parse(response.body) : response.body };
  };
  return { call, calls, logs, upgrade };
}

// A path of the route with sample values for its parameters.
const samplePath = (path: string) =>
  path.replace(
    /\{(\w+)\}/g,
    (_, name: string) =>
      ({
        kind: 'vm',
        ns: 'corral-vms',
        pool: 'devpool',
        member: 'devpool-1',
        id: 'vdi-release-x-1',
        protocol: 'vnc',
        waiter: '0123456789',
      })[name] ?? name,
  );

describe('createRouter', () => {
  it("answers credentials a provider refused with 401 UNAUTHENTICATED and the provider's message", async () => {
    const { call, calls } = setUp();
    const reply = await call('POST', '/api/vdi/pools/vm/corral-vms/devpool/claim', undefined, {
      headers: { 'x-refused': 'The bearer token expired; get a new token from the issuer.' },
    });
    expect(reply?.status).toBe(401);
    expect(reply?.body.error).toEqual({
      code: 'UNAUTHENTICATED',
      message: 'The bearer token expired; get a new token from the issuer.',
    });
    expect(calls).toEqual([]);
  });

  it.each(Object.entries(routes).filter(([, route]) => !('upgrade' in route) && route.auth !== 'none'))(
    'dispatches %s to its handler with its declared status',
    async (name, route) => {
      const { call, calls } = setUp();
      const reply = await call(route.method, samplePath(route.path), alice);
      expect(reply?.status).toBe(route.response.status);
      expect(calls.map((made) => made.name)).toEqual([name]);
      expect(reply?.headers).toMatchObject({
        'content-type': 'application/json; charset=utf-8',
        'cache-control': 'no-store',
      });
    },
  );

  it('hands a handler the checked parameters, its declared query only, and the caller', async () => {
    const { call, calls } = setUp();
    await call('GET', '/api/vdi/desktops?all=1&identity=bob', admin);
    expect(calls[0]?.input).toEqual({
      caller: { login: admin, groups: [], admin: true },
      params: {},
      query: { all: '1' },
      desktop: undefined,
    });
    await call('POST', '/api/vdi/pools/vm/corral-vms/devpool/claim?user=bob', alice, {
      body: '{"identity":"bob"}',
    });
    // the claim's body rule keeps only its own fields: an identity in it never reaches the handler
    expect(calls[1]?.input).toEqual({
      caller: { login: alice, groups: [], admin: false },
      params: { kind: 'vm', ns: 'corral-vms', pool: 'devpool' },
      query: undefined,
      body: {},
      desktop: undefined,
    });
  });

  it('lets only the holder or an admin reach a holder-or-admin route, before its handler runs', async () => {
    const { call, calls } = setUp();
    const path = '/api/vdi/desktops/vm/corral-vms/devpool-1/release';
    expect(await call('POST', path, bob)).toMatchObject({
      status: 403,
      body: { error: { code: 'NOT_HOLDER' } },
    });
    const unclaimed = await call('POST', '/api/vdi/desktops/vm/corral-vms/devpool-2/release', bob);
    expect(unclaimed).toMatchObject({ status: 404, body: { error: { code: 'CLAIM_ENDED' } } });
    expect(calls).toEqual([]);
    expect((await call('POST', path, alice))?.status).toBe(202);
    expect((await call('POST', path, admin))?.status).toBe(202);
    expect(calls[1]?.input).toMatchObject({
      caller: { login: admin, groups: [], admin: true },
      desktop: { view: { owner: alice } },
    });
  });

  it('answers 500 without details, and logs, when a handler breaks its response schema', async () => {
    const { call, logs } = setUp({ listPools: async () => ({ pools: [{ id: 'half a pool' }] }) as never });
    const reply = await call('GET', '/api/vdi/pools', alice);
    expect(reply).toMatchObject({
      status: 500,
      body: {
        error: { code: 'INTERNAL', message: 'The broker failed unexpectedly; its log has the details.' },
      },
    });
    expect(logs).toHaveLength(1);
    expect(logs[0]).toContain('GET /api/vdi/pools failed unexpectedly');
  });

  it('refuses a bad body or query before the handler runs', async () => {
    const { call, calls } = setUp();
    const claim = '/api/vdi/pools/vm/corral-vms/devpool/claim';
    expect(await call('POST', claim, alice, { body: '[1]' })).toMatchObject({ status: 400 });
    expect(await call('POST', claim, alice, { body: '{' })).toMatchObject({ status: 400 });
    expect(await call('GET', '/api/vdi/desktops?all=2', alice)).toMatchObject({ status: 400 });
    expect(await call('POST', claim, alice, { headers: { 'sec-fetch-site': 'cross-site' } })).toMatchObject({
      status: 403,
      body: { error: { code: 'FORBIDDEN' } },
    });
    expect(calls).toEqual([]);
  });

  it('leaves paths that are not its own to the host', async () => {
    const { call } = setUp();
    expect(await call('GET', '/api/vms', alice)).toBeUndefined();
  });

  it('answers a plain request to a console websocket route with 400 and calls no handler', async () => {
    const { call, calls } = setUp();
    const reply = await call('GET', '/api/vdi/desktops/vm/corral-vms/devpool-1/console/vnc', alice);
    expect(reply).toMatchObject({ status: 400, body: { error: { code: 'INVALID_INPUT' } } });
    expect(reply?.body.error.message).toContain('Upgrade: websocket');
    expect(calls).toEqual([]);
  });
});

describe('createUpgradeRouter', () => {
  const vnc = '/api/vdi/desktops/vm/corral-vms/devpool-1/console/vnc';

  it('admits a signed-in user to a console route with the checked parameters', async () => {
    const { upgrade } = setUp();
    expect(await upgrade(vnc, alice)).toEqual({
      kind: 'console',
      params: { kind: 'vm', ns: 'corral-vms', member: 'devpool-1', protocol: 'vnc' },
      caller: { login: alice, groups: [], admin: false },
    });
  });

  it('refuses, as plain answers, the anonymous, a bad console, a route that is no websocket, and other sites', async () => {
    const { upgrade } = setUp();
    const code = async (path: string, as?: string, headers?: Record<string, string>) => {
      const admission = await upgrade(path, as, headers);
      return admission.kind === 'answer'
        ? [admission.response.status, JSON.parse(admission.response.body).error.code]
        : admission.kind;
    };
    expect(await code(vnc)).toEqual([401, 'UNAUTHENTICATED']);
    expect(await code('/api/vdi/desktops/vm/corral-vms/devpool-1/console/spice', alice)).toEqual([
      400,
      'INVALID_INPUT',
    ]);
    // rdp is a console route now; its own checks come after this admission
    expect(await code('/api/vdi/desktops/vm/corral-vms/devpool-1/console/rdp', alice)).toBe('console');
    expect(await code('/api/vdi/desktops/vm/other-ns/devpool-1/console/vnc', alice)).toEqual([
      404,
      'NOT_FOUND',
    ]);
    expect(await code('/api/vdi/desktops/pod/corral-vms/devpool-1/console/terminal', alice)).toEqual([
      400,
      'INVALID_INPUT',
    ]);
    expect(await code('/api/vdi/desktops/ct/corral-vms/devpool-1/console/terminal', alice)).toBe('console');
    expect(await code('/api/vdi/pools', alice)).toEqual([400, 'INVALID_INPUT']);
    expect(await code(vnc, alice, { 'sec-fetch-site': 'cross-site' })).toEqual([403, 'FORBIDDEN']);
    expect(await code(vnc, alice, { origin: 'https://evil.example' })).toEqual([403, 'FORBIDDEN']);
    expect(await code(vnc, alice, { origin: 'http://broker.test' })).toBe('console');
    expect(await code('/api/vms/devpool-1/vnc', alice)).toBe('not-broker');
  });
});

describe('the routes anyone may call', () => {
  it('answers /healthz without an identity, also while the API is off, and calls no handler', async () => {
    const { call, calls } = setUp(undefined, undefined, false);
    expect(await call('GET', '/healthz')).toMatchObject({ status: 200, body: { status: 'alive' } });
    expect(await call('GET', '/api/vdi/pools', alice)).toMatchObject({ status: 404 });
    expect(calls).toEqual([]);
  });

  it('fails /readyz with NOT_READY until every readiness check resolved, and again once stopping', async () => {
    let synced: () => void = () => {};
    const cacheSync = new Promise<void>((resolve) => {
      synced = resolve;
    });
    const readiness = createReadiness([cacheSync], () => {});
    const { call } = setUp(undefined, createOperationAnswers(readiness, undefined));
    expect(await call('GET', '/readyz')).toMatchObject({
      status: 503,
      body: { error: { code: 'NOT_READY', message: expect.stringContaining('starting') } },
    });
    synced();
    await cacheSync;
    expect(await call('GET', '/readyz')).toMatchObject({ status: 200, body: { status: 'ready' } });
    readiness.stop();
    expect(await call('GET', '/readyz')).toMatchObject({
      status: 503,
      body: { error: { code: 'NOT_READY', message: expect.stringContaining('shutting down') } },
    });
  });

  it('stays unready, and logs why, when a readiness check rejects', async () => {
    const logs: string[] = [];
    const failing = Promise.reject(new Error('the Lease cache could not list'));
    const readiness = createReadiness([failing], (line) => logs.push(line));
    await failing.catch(() => {});
    await Promise.resolve();
    expect(readiness.state()).toBe('failed');
    expect(logs).toEqual([expect.stringContaining('the Lease cache could not list')]);
  });

  it('leaves /metrics to the host unless metrics are served, then answers them as text', async () => {
    expect(await setUp().call('GET', '/metrics')).toBeUndefined();
    const metrics = {
      contentType: 'text/plain; version=0.0.4; charset=utf-8',
      render: async () => 'corral_vdi_leader 1\n',
    } as Parameters<typeof createOperationAnswers>[1];
    const { call } = setUp(
      undefined,
      createOperationAnswers(
        createReadiness([], () => {}),
        metrics,
      ),
    );
    expect(await call('GET', '/metrics')).toEqual({
      status: 200,
      headers: { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'cache-control': 'no-store' },
      body: 'corral_vdi_leader 1\n',
    });
  });

  it('refuses a websocket upgrade of a probe', async () => {
    const { upgrade } = setUp();
    expect(await upgrade('/healthz')).toMatchObject({ kind: 'answer', response: { status: 400 } });
  });
});
