import type { z } from 'zod/mini';
import type { DesktopKind } from '../desktop-backend.js';
import { answerError, answerFailure, answerJson } from './answers.js';
import type { BrokerLogger } from './broker-options.js';
import type { Caller } from './caller-access.js';
import type { DesktopReader } from './desktop-reader.js';
import type { BrokerRequest, BrokerResponse } from './http-io.js';
import type { CallerIdentity, IdentityRequest } from './identity.js';
import { checkInput, maxBodyBytes } from './input-rules.js';
import { matchRoute } from './match-route.js';
import type { OperationAnswers, OperationRouteName } from './operations.js';
import { Accepted, type RouteDeclaration } from './route-declaration.js';
import type { JsonRouteName, RouteHandlers } from './route-handlers.js';
import { type RouteName, routes } from './routes.js';

/** What the router needs: the broker's settings and parts. */
export interface RouterOptions {
  namespaces: readonly string[];
  /** Off: every `/api/vdi/` path answers 404. */
  enabled: boolean;
  /** Refuse anonymous callers on other `/api` paths too. */
  authRequired: boolean;
  identify(request: IdentityRequest): Promise<CallerIdentity>;
  isAdmin(login: string, groups: readonly string[]): boolean;
  desktops: DesktopReader;
  handlers: RouteHandlers;
  /** The answers of the routes anyone may call: the probes and the metrics. */
  operations: OperationAnswers;
  log: BrokerLogger;
}

/** Routes one request; `undefined` means the path is not the broker's and may go on to the host. */
export type Router = (request: BrokerRequest) => Promise<BrokerResponse | undefined>;

// The answer to a caller who is not a signed-in user, or nothing for a user.
function refuse(identity: CallerIdentity): BrokerResponse | undefined {
  switch (identity.kind) {
    case 'anonymous':
      return answerFailure(
        'UNAUTHENTICATED',
        'Sign in first: this request carries no identity the broker trusts.',
      );
    case 'invalid':
      return answerFailure(
        'UNAUTHENTICATED',
        identity.part === 'groups'
          ? identity.header === undefined
            ? `The groups ${identity.provider} vouched for are no usable list: none may be empty, longer than 1024 ` +
              'characters, or have surrounding spaces or control characters; fix the groups at the identity provider.'
            : `The ${identity.provider} groups header ${identity.header} carries no usable list: it must be sent ` +
              'once, as groups joined by bare commas, none empty, none with surrounding spaces or control characters.'
          : `The ${identity.provider} identity header${identity.header ? ` ${identity.header}` : ''} carries no usable ` +
              'login: it must be sent once, with one login that is not empty, has no comma and no surrounding spaces.',
      );
    case 'refused':
      return answerFailure('UNAUTHENTICATED', identity.message);
    case 'service':
      return answerFailure(
        'FORBIDDEN',
        'A service identity is not a user; the desktop routes serve users only.',
      );
    case 'user':
      return undefined;
  }
}

// Browsers mark cross-site requests; a claim or release must never ride on a user's proxy login from another site.
function isCrossSite(headers: Headers): boolean {
  const site = headers.get('sec-fetch-site');
  return site === 'cross-site' || site === 'same-site';
}

// An empty body (read as `{}`) or one the route's body rule accepts passes, as the rule's output.
async function checkBody(
  request: BrokerRequest,
  rule: z.ZodMiniType,
): Promise<{ refused: BrokerResponse } | { body: unknown }> {
  const read = await request.readBody();
  if (read.kind === 'too-large') {
    return {
      refused: answerFailure(
        'PAYLOAD_TOO_LARGE',
        `The request body is over ${maxBodyBytes} bytes; these routes take no body that large.`,
        { connection: 'close' },
      ),
    };
  }
  const text = new TextDecoder().decode(read.bytes).trim();
  let value: unknown = {};
  try {
    if (text !== '') value = JSON.parse(text);
  } catch {
    return {
      refused: answerFailure(
        'INVALID_INPUT',
        'The request body is not valid JSON; send no body, or a JSON object.',
      ),
    };
  }
  const checked = checkInput(rule, value);
  return checked.ok ? { body: checked.value } : { refused: answerFailure(checked.code, checked.message) };
}

/** What the checks every broker request passes first decided. */
type Admission =
  | { kind: 'answer'; response: BrokerResponse }
  | { kind: 'not-broker' }
  | { kind: 'open'; name: OperationRouteName }
  | { kind: 'route'; name: RouteName; params: Record<string, string>; caller: Caller };

const isOperation = (name: RouteName): name is OperationRouteName => routes[name].auth === 'none';

/**
 * The checks of {@link createRouter} up to the route's own rules: the match, the switch, the identity. A route
 * anyone may call skips the switch and the identity: a probe must pass while the API is off.
 */
function createAdmission(options: RouterOptions): (request: BrokerRequest) => Promise<Admission> {
  const { namespaces, enabled, authRequired, identify, isAdmin } = options;
  const answer = (response: BrokerResponse | undefined): Admission =>
    response ? { kind: 'answer', response } : { kind: 'not-broker' };
  return async (request) => {
    const match = matchRoute({
      method: request.method,
      rawPath: request.rawPath,
      servedNamespaces: namespaces,
    });
    if (match.kind === 'not-broker') {
      if (!authRequired || !request.rawPath.startsWith('/api/')) return { kind: 'not-broker' };
      const identity = await identify(request);
      return answer(identity.kind === 'user' || identity.kind === 'service' ? undefined : refuse(identity));
    }
    if (match.kind === 'route' && isOperation(match.name)) return { kind: 'open', name: match.name };
    if (!enabled && request.rawPath.startsWith('/api/vdi/')) {
      return answer(answerFailure('NOT_FOUND', 'The desktop broker is turned off here.'));
    }
    const identity = await identify(request);
    const refused = refuse(identity);
    if (refused || identity.kind !== 'user') return answer(refused);
    if (match.kind === 'reject') {
      return answer(
        answerFailure(match.code, match.message, match.allow ? { allow: match.allow.join(', ') } : {}),
      );
    }
    const caller = {
      login: identity.login,
      groups: identity.groups,
      admin: isAdmin(identity.login, identity.groups),
    };
    return { kind: 'route', name: match.name, params: match.params, caller };
  };
}

// A websocket carries the browser's login too: one opened from another site must not ride on it.
function isCrossOrigin(headers: Headers): boolean {
  const origin = headers.get('origin');
  if (origin === null) return false;
  try {
    return new URL(origin).host !== headers.get('host');
  } catch {
    return true;
  }
}

/** What {@link createUpgradeRouter} decided about an upgrade request. */
export type UpgradeAdmission =
  | { kind: 'answer'; response: BrokerResponse }
  | { kind: 'not-broker' }
  | { kind: 'console'; params: Record<string, string>; caller: Caller };

/**
 * Builds the admission of websocket upgrades from the route table: the same match, identity and caller checks
 * as {@link createRouter}, then the cross-site checks; only a websocket route of a signed-in user passes.
 */
export function createUpgradeRouter(
  options: RouterOptions,
): (request: BrokerRequest) => Promise<UpgradeAdmission> {
  const admit = createAdmission(options);
  return async (request) => {
    const admission = await admit(request);
    if (admission.kind === 'answer' || admission.kind === 'not-broker') return admission;
    const route: RouteDeclaration = routes[admission.name];
    if (admission.kind === 'open' || !route.upgrade) {
      return {
        kind: 'answer',
        response: answerFailure(
          'INVALID_INPUT',
          `${request.rawPath} is not a websocket route; send a plain request.`,
        ),
      };
    }
    if (isCrossSite(request.headers) || isCrossOrigin(request.headers)) {
      return {
        kind: 'answer',
        response: answerFailure(
          'FORBIDDEN',
          "Cross-site websockets may not open consoles; open the console from the broker's own origin.",
        ),
      };
    }
    return { kind: 'console', params: admission.params, caller: admission.caller };
  };
}

/**
 * Builds the broker's router from the route table: match and check the path, identify the caller, apply the
 * route's rules (cross-site, body, query, auth) and call its handler, whose answer is checked against the
 * route's response schema. Every failure is an error answer; nothing reaches the cluster before the checks.
 */
export function createRouter(options: RouterOptions): Router {
  const { desktops, handlers, log } = options;
  const admit = createAdmission(options);

  async function dispatch(
    name: RouteName,
    params: Record<string, string>,
    caller: Caller,
    request: BrokerRequest,
  ): Promise<BrokerResponse> {
    const route: RouteDeclaration = routes[name];
    if (!('schema' in route.response)) {
      return answerFailure(
        'INVALID_INPUT',
        `${request.rawPath} opens a console websocket; send a GET with Upgrade: websocket.`,
      );
    }
    if (route.method !== 'GET' && isCrossSite(request.headers)) {
      return answerFailure(
        'FORBIDDEN',
        'Cross-site requests may not change desktops; use the broker from its own origin.',
      );
    }
    let body: unknown;
    if (route.body) {
      const checked = await checkBody(request, route.body);
      if ('refused' in checked) return checked.refused;
      body = checked.body;
    }
    let query: unknown;
    if (route.query) {
      const values = Object.fromEntries(
        Object.keys(route.query.shape).map((key) => [key, request.query.get(key) ?? undefined]),
      );
      const checked = checkInput(route.query, values);
      if (!checked.ok) return answerFailure(checked.code, checked.message);
      query = checked.value;
    }
    let desktop: unknown;
    if (route.auth === 'holder-or-admin') {
      desktop = await desktops.read(
        (params.kind ?? 'vm') as DesktopKind,
        params.ns ?? '',
        params.member ?? '',
        caller,
      );
    }
    // The table and the handlers share their keys, so this handler takes this route's input.
    const handle = handlers[name as JsonRouteName] as (input: unknown) => Promise<unknown>;
    const answer = await handle({ caller, params, query, body, desktop });
    if (answer instanceof Accepted && route.accepted) {
      return answerJson(route.accepted.status, route.accepted.schema.parse(answer.body));
    }
    return answerJson(route.response.status, route.response.schema.parse(answer));
  }

  return async (request) => {
    const admission = await admit(request);
    if (admission.kind === 'not-broker') return undefined;
    if (admission.kind === 'answer') return admission.response;
    if (admission.kind === 'open') return await options.operations[admission.name]?.();
    try {
      return await dispatch(admission.name, admission.params, admission.caller, request);
    } catch (error) {
      return answerError(error, (unexpected) =>
        log(
          `broker: ${request.method} ${request.rawPath} failed unexpectedly: ${unexpected instanceof Error ? (unexpected.stack ?? unexpected.message) : String(unexpected)}`,
          { level: 'error', requestId: request.requestId },
        ),
      );
    }
  };
}
