import * as z from 'zod/mini';
import { consoleProtocolParam } from '../broker/input-rules.js';
import type { RouteDeclaration } from '../broker/route-declaration.js';
import { type RouteName, routes } from '../broker/routes.js';
import {
  type auditRecordSchema,
  type ClaimedDesktopBody,
  type ConnectAnswerBody,
  type DesktopBody,
  errorBodySchema,
  type PoolBody,
  type RdpTokenBody,
  type releaseAcceptedSchema,
  type TaskBody,
  type WaiterBody,
} from '../broker/schemas.js';
import { httpStatusByCode, VdiError, type VdiErrorCode } from '../errors.js';
import { parseDesktopId, parsePoolId } from '../ids.js';

/** A console the broker's websockets serve. @category client */
export type ConsoleProtocol = 'vnc' | 'serial' | 'rdp' | 'terminal';

/** A task log record as the API answers it. @category client */
export type AuditRecordBody = z.infer<typeof auditRecordSchema>;

/** The answer of a release: the desktop and the task that carries the release out. @category client */
export type ReleaseAcceptedBody = z.infer<typeof releaseAcceptedSchema>;

/** Options of {@link createVdiClient}. @category client */
export interface VdiClientOptions {
  /**
   * The broker's base URL, such as `https://corral.example.ts.net/`. In a page served beside the broker it is
   * the page's own origin, which is also the default there.
   */
  baseUrl?: string | URL;
  /** The fetch to call, for a host that wraps requests (extra headers, a test double of the network). */
  fetch?: typeof fetch;
}

/**
 * A typed client of the broker's HTTP API, for browsers and any runtime with `fetch`. The caller is whoever
 * the proxy in front of the broker signs in; the client never names a user.
 *
 * Every method throws a {@link VdiError} with the broker's code and message when the broker refuses, so
 * `isVdiError(error, 'NO_FREE_MEMBER')` works the same in a page as on the server.
 *
 * @category client
 */
export interface VdiClient {
  /**
   * The pools the broker serves, with member, claimed and free counts.
   * @throws {@link VdiError} `UNAUTHENTICATED`, `FORBIDDEN`, `CLUSTER_UNAVAILABLE` (the broker cannot be reached).
   */
  listPools(): Promise<PoolBody[]>;
  /**
   * Claims a desktop of a pool and starts it. Safe to repeat: a claim the caller already holds answers the same
   * desktop with `retried: true`, so a claim whose answer was lost on the network is sent again once.
   * @throws {@link VdiError} `NO_FREE_MEMBER`, `USER_LIMIT_REACHED` (the caller holds as many desktops as the broker
   *   or the pool allows; the message names them), `INVALID_INPUT` (a malformed pool ID), `NOT_FOUND`,
   *   `UNAUTHENTICATED`.
   */
  claim(poolId: string): Promise<ClaimedDesktopBody>;
  /**
   * Claims a desktop of a pool, or joins the pool's queue when no member is free for the caller: the broker
   * answers the desktop, or a waiter to poll with {@link VdiClient.getWaiter} until its `status` is `claimed`.
   * Safe to repeat: a caller already waiting gets the same waiter, one already holding a desktop that desktop.
   * @throws {@link VdiError} `INVALID_INPUT` (a malformed pool ID, a `waitTimeoutMs` that is not a positive whole
   *   number of at most an hour), `USER_LIMIT_REACHED` (before it queues), `NOT_FOUND`, `UNAUTHENTICATED`.
   */
  claimOrWait(
    poolId: string,
    options?: { waitTimeoutMs?: number },
  ): Promise<{ kind: 'claimed'; desktop: ClaimedDesktopBody } | { kind: 'waiting'; waiter: WaiterBody }>;
  /** A wait of the caller: its position, or the desktop once claimed. @throws {@link VdiError} `NOT_FOUND`. */
  getWaiter(waiterId: string): Promise<WaiterBody>;
  /** Cancels a wait of the caller; the answer is the waiter as it ended. @throws {@link VdiError} `NOT_FOUND`. */
  cancelWait(waiterId: string): Promise<WaiterBody>;
  /** The caller's desktops. @throws {@link VdiError} `UNAUTHENTICATED`, `FORBIDDEN`. */
  listDesktops(): Promise<DesktopBody[]>;
  /** One desktop the caller holds (or any, for an admin). @throws {@link VdiError} `NOT_HOLDER`, `CLAIM_ENDED`. */
  getDesktop(desktopId: string): Promise<DesktopBody>;
  /** Starts a desktop; a running one is left alone. @throws {@link VdiError} `CLAIM_EXPIRED`, `START_FAILED`. */
  start(desktopId: string): Promise<DesktopBody>;
  /** Asks for a release; poll {@link VdiClient.getTask} for its end. @throws {@link VdiError} `NOT_HOLDER`, `CLAIM_ENDED`. */
  release(desktopId: string): Promise<ReleaseAcceptedBody>;
  /** The console the broker's connect plan chose, its fallbacks and why others were skipped. @throws {@link VdiError} `DESKTOP_STOPPED`, `CLAIM_EXPIRED`. */
  connect(desktopId: string): Promise<ConnectAnswerBody>;
  /** A task the caller started, such as a release. @throws {@link VdiError} `NOT_FOUND`. */
  getTask(taskId: string): Promise<TaskBody>;
  /** The task log: the caller's own records (every record for an admin), oldest first. */
  listTaskLog(): Promise<AuditRecordBody[]>;
  /**
   * Mints the proxy token of a desktop's rdp console, for a browser RDP client (IronRDP): its `token` is the
   * RDCleanPath request's proxy_auth, its `destination` the guest's address, and `consoleUrl(desktop, 'rdp')` the
   * proxy address. Single use, valid for a minute, for the caller and this claim only: mint one per connection.
   * @throws {@link VdiError} `NOT_HOLDER`, `CLAIM_ENDED`, `DESKTOP_STOPPED` (stopped or no address yet),
   *   `UNSUPPORTED_BACKEND` (a container desktop).
   */
  rdpToken(desktop: string | Pick<DesktopBody, 'id'>): Promise<RdpTokenBody>;
  /**
   * The websocket URL of a desktop's console (`ws:` or `wss:` after the broker's scheme). Opening it needs no
   * more than the browser's sign-in with the proxy: the broker admits only the holder and admins.
   * @throws {@link VdiError} `INVALID_INPUT` for a malformed desktop ID or protocol.
   */
  consoleUrl(desktop: string | Pick<DesktopBody, 'id'>, protocol: ConsoleProtocol): string;
}

const consoleProtocols: readonly ConsoleProtocol[] = consoleProtocolParam.options;

// The routes that answer JSON; the console route upgrades to a websocket instead.
type JsonRouteName = {
  [Name in RouteName]: (typeof routes)[Name]['response'] extends { schema: z.ZodMiniType } ? Name : never;
}[RouteName];
type AnswerOf<Name extends JsonRouteName> = z.infer<(typeof routes)[Name]['response']['schema']>;

function isErrorCode(code: unknown): code is VdiErrorCode {
  return typeof code === 'string' && Object.hasOwn(httpStatusByCode, code);
}

// A page served beside the broker has an origin; anywhere else the base URL is required.
function resolveBase(baseUrl: string | URL | undefined): URL {
  const origin = (globalThis as { location?: { origin?: string } }).location?.origin;
  const given = baseUrl ?? origin;
  if (given === undefined) {
    throw new VdiError(
      'INVALID_INPUT',
      'createVdiClient needs a baseUrl outside a web page, such as https://corral.example.ts.net/.',
    );
  }
  try {
    const url = new URL(given, origin);
    if (!url.pathname.endsWith('/')) url.pathname += '/';
    return url;
  } catch (error) {
    throw new VdiError('INVALID_INPUT', `The broker URL "${String(given)}" is not a URL.`, { cause: error });
  }
}

function pathOf(name: RouteName, params: Record<string, string>): string {
  return routes[name].path
    .slice(1)
    .replace(/\{(\w+)\}/g, (_, key: string) => encodeURIComponent(params[key] ?? ''));
}

// a desktop has no position; a waiter always has one, if only null
function isWaiter(answer: ClaimedDesktopBody | WaiterBody): answer is WaiterBody {
  return 'position' in answer;
}

function waiterParams(waiterId: string): Record<string, string> {
  const [kind = '', ns = '', pool = '', waiter = '', ...rest] = waiterId.split('/');
  if (rest.length > 0 || waiter === '') {
    throw new VdiError(
      'INVALID_INPUT',
      `"${waiterId}" is not a waiter ID; use the ID a claim with wait answered, such as vm/corral-vms/devpool/0k3j5x9a2b.`,
    );
  }
  return { kind, ns, pool, waiter };
}

function desktopParams(desktopId: string): Record<string, string> {
  const { kind, namespace, member } = parseDesktopId(desktopId);
  return { kind, ns: namespace, member };
}

// The broker's error answer as a VdiError with the same code; anything else says what came back.
async function failureOf(response: Response): Promise<VdiError> {
  const body: unknown = await response.json().catch(() => undefined);
  const parsed = errorBodySchema.safeParse(body);
  const details = { status: response.status };
  if (parsed.success && isErrorCode(parsed.data.error.code)) {
    const { code, message } = parsed.data.error;
    return new VdiError(code, message, { details, retryable: response.status >= 500 });
  }
  return new VdiError(
    response.status === 401 ? 'UNAUTHENTICATED' : 'INTERNAL',
    `The broker answered HTTP ${response.status} without an error body; is this URL the broker?`,
    { details, retryable: response.status >= 500 },
  );
}

/**
 * Creates a {@link VdiClient} for a broker. In a page the broker serves (`corral-vdi broker serve --ui`) no
 * options are needed.
 *
 * @example
 * ```ts
 * import { createVdiClient } from '@corral/vdi/client';
 * import { isVdiError } from '@corral/vdi/core';
 *
 * const vdi = createVdiClient({ baseUrl: 'https://corral.example.ts.net/' });
 * try {
 *   const desktop = await vdi.claim('vm/corral-vms/devpool');
 *   const plan = await vdi.connect(desktop.id);
 *   const socket = new WebSocket(vdi.consoleUrl(desktop, 'vnc'));
 * } catch (error) {
 *   if (isVdiError(error, 'NO_FREE_MEMBER')) alert(error.message);
 *   else throw error;
 * }
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` when no base URL can be found or it is not a URL.
 * @category client
 */
export function createVdiClient(options: VdiClientOptions = {}): VdiClient {
  const base = resolveBase(options.baseUrl);
  const send = options.fetch ?? ((input, init) => globalThis.fetch(input, init));

  async function call<Name extends JsonRouteName>(
    name: Name,
    params: Record<string, string> = {},
    body?: unknown,
  ): Promise<AnswerOf<Name>> {
    const route: RouteDeclaration = routes[name];
    const url = new URL(pathOf(name, params), base);
    let response: Response;
    try {
      response = await send(url, {
        method: route.method,
        headers: {
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    } catch (error) {
      throw new VdiError(
        'CLUSTER_UNAVAILABLE',
        `Cannot reach the broker at ${url.origin}: ${(error as Error).message}.`,
        { retryable: true, cause: error },
      );
    }
    if (!response.ok) throw await failureOf(response);
    // a route's accepted answer (202) has a schema of its own
    const schema =
      response.status === route.accepted?.status
        ? route.accepted.schema
        : 'schema' in route.response
          ? route.response.schema
          : z.never();
    const parsed = schema.safeParse(await response.json().catch(() => undefined));
    if (!parsed.success) {
      throw new VdiError(
        'INTERNAL',
        `The broker's answer to ${route.method} /${pathOf(name, params)} is not what this client knows; update @corral/vdi.`,
        { details: { status: response.status } },
      );
    }
    return parsed.data as AnswerOf<Name>;
  }

  return {
    listPools: async () => (await call('listPools')).pools,
    async claim(poolId) {
      const { kind, namespace, pool } = parsePoolId(poolId);
      const params = { kind, ns: namespace, pool };
      try {
        return await call('claim', params);
      } catch (error) {
        // a lost answer may hide a claim that happened; the broker answers a repeat with that same desktop
        if (error instanceof VdiError && error.code === 'CLUSTER_UNAVAILABLE')
          return await call('claim', params);
        throw error;
      }
    },
    async claimOrWait(poolId, options = {}) {
      const { kind, namespace, pool } = parsePoolId(poolId);
      const answer: ClaimedDesktopBody | WaiterBody = await call(
        'claim',
        { kind, ns: namespace, pool },
        { wait: true, ...options },
      );
      return isWaiter(answer) ? { kind: 'waiting', waiter: answer } : { kind: 'claimed', desktop: answer };
    },
    getWaiter: async (waiterId) => await call('getWaiter', waiterParams(waiterId)),
    cancelWait: async (waiterId) => await call('cancelWait', waiterParams(waiterId)),
    listDesktops: async () => (await call('listDesktops')).desktops,
    getDesktop: async (desktopId) => await call('getDesktop', desktopParams(desktopId)),
    start: async (desktopId) => await call('startDesktop', desktopParams(desktopId)),
    release: async (desktopId) => await call('releaseDesktop', desktopParams(desktopId)),
    connect: async (desktopId) => await call('connectDesktop', desktopParams(desktopId)),
    getTask: async (taskId) => await call('getTask', { id: taskId }),
    listTaskLog: async () => (await call('taskLog')).records,
    rdpToken: async (desktop) =>
      await call('mintRdpToken', desktopParams(typeof desktop === 'string' ? desktop : desktop.id), {}),
    consoleUrl(desktop, protocol) {
      if (!consoleProtocols.includes(protocol)) {
        throw new VdiError(
          'INVALID_INPUT',
          `"${String(protocol)}" is not a console; use ${consoleProtocols.join(', ')}.`,
        );
      }
      const params = desktopParams(typeof desktop === 'string' ? desktop : desktop.id);
      const url = new URL(pathOf('openConsole', { ...params, protocol }), base);
      url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
      return url.href;
    },
  };
}
