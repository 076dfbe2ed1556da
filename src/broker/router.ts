import type { z } from 'zod';
import { answerError, answerFailure, answerJson } from './answers.js';
import type { Caller } from './caller-access.js';
import type { DesktopReader } from './desktop-reader.js';
import type { BrokerRequest, BrokerResponse } from './http-io.js';
import type { CallerIdentity, IdentityRequest } from './identity.js';
import { checkInput, maxBodyBytes } from './input-rules.js';
import { matchRoute } from './match-route.js';
import type { RouteDeclaration } from './route-declaration.js';
import type { RouteHandlers } from './route-handlers.js';
import { type RouteName, routes } from './routes.js';

/** What the router needs: the broker's settings and parts. */
export interface RouterOptions {
  namespaces: readonly string[];
  /** Off: every `/api/vdi/` path answers 404. */
  enabled: boolean;
  /** Refuse anonymous callers on other `/api` paths too. */
  authRequired: boolean;
  identify(request: IdentityRequest): Promise<CallerIdentity>;
  isAdmin(login: string): boolean;
  desktops: DesktopReader;
  handlers: RouteHandlers;
  log: (message: string) => void;
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
        `The ${identity.provider} identity header${identity.header ? ` ${identity.header}` : ''} carries no usable ` +
          'login: it must be sent once, with one login that is not empty, has no comma and no surrounding spaces.',
      );
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

// An empty body or one the route's body rule accepts passes; its content is never used.
async function checkBody(request: BrokerRequest, rule: z.ZodType): Promise<BrokerResponse | undefined> {
  const read = await request.readBody();
  if (read.kind === 'too-large') {
    return answerFailure(
      'PAYLOAD_TOO_LARGE',
      `The request body is over ${maxBodyBytes} bytes; these routes take no body.`,
      { connection: 'close' },
    );
  }
  const text = new TextDecoder().decode(read.bytes).trim();
  if (text === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return answerFailure(
      'INVALID_INPUT',
      'The request body is not valid JSON; send no body, or a JSON object.',
    );
  }
  const checked = checkInput(rule, value);
  return checked.ok ? undefined : answerFailure(checked.code, checked.message);
}

/**
 * Builds the broker's router from the route table: match and check the path, identify the caller, apply the
 * route's rules (cross-site, body, query, auth) and call its handler, whose answer is checked against the
 * route's response schema. Every failure is an error answer; nothing reaches the cluster before the checks.
 */
export function createRouter(options: RouterOptions): Router {
  const { namespaces, enabled, authRequired, identify, isAdmin, desktops, handlers, log } = options;

  async function dispatch(
    name: RouteName,
    params: Record<string, string>,
    caller: Caller,
    request: BrokerRequest,
  ): Promise<BrokerResponse> {
    const route: RouteDeclaration = routes[name];
    if (route.method === 'POST' && isCrossSite(request.headers)) {
      return answerFailure(
        'FORBIDDEN',
        'Cross-site requests may not change desktops; use the broker from its own origin.',
      );
    }
    if (route.body) {
      const bad = await checkBody(request, route.body);
      if (bad) return bad;
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
      desktop = await desktops.read(params.ns ?? '', params.member ?? '', caller);
    }
    // The table and the handlers share their keys, so this handler takes this route's input.
    const handle = handlers[name] as (input: unknown) => Promise<unknown>;
    const answer = await handle({ caller, params, query, desktop });
    return answerJson(route.response.status, route.response.schema.parse(answer));
  }

  return async (request) => {
    const match = matchRoute({
      method: request.method,
      rawPath: request.rawPath,
      servedNamespaces: namespaces,
    });
    if (match.kind === 'not-broker') {
      if (!authRequired || !request.rawPath.startsWith('/api/')) return undefined;
      const identity = await identify(request);
      return identity.kind === 'anonymous' || identity.kind === 'invalid' ? refuse(identity) : undefined;
    }
    if (!enabled && request.rawPath.startsWith('/api/vdi/')) {
      return answerFailure('NOT_FOUND', 'The desktop broker is turned off here.');
    }
    const identity = await identify(request);
    const refused = refuse(identity);
    if (refused || identity.kind !== 'user') return refused;
    if (match.kind === 'reject') {
      return answerFailure(match.code, match.message, match.allow ? { allow: match.allow.join(', ') } : {});
    }
    try {
      const caller = { login: identity.login, admin: isAdmin(identity.login) };
      return await dispatch(match.name, match.params, caller, request);
    } catch (error) {
      return answerError(error, (unexpected) =>
        log(
          `broker: ${request.method} ${request.rawPath} failed unexpectedly: ${unexpected instanceof Error ? (unexpected.stack ?? unexpected.message) : String(unexpected)}`,
        ),
      );
    }
  };
}
