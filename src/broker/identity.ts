import { createHash, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { maxIdentityLength, parseOptions } from '../validate.js';

/**
 * What the broker knows of one request when it asks an {@link IdentityProvider}: its headers and the address
 * of the peer that opened the connection (the proxy, when there is one).
 *
 * @category broker
 */
export interface IdentityRequest {
  /** The request's headers, as the proxy in front left them. */
  headers: Headers;
  /** The TCP peer's address; `undefined` when the runtime does not tell (a fetch handler without it). */
  remoteAddress: string | undefined;
}

/**
 * What an {@link IdentityProvider} says about one request:
 *
 * - a string: the caller's login (the groups, if any, come from the provider's `groupsHeader`);
 * - `{ login, groups }`: the login with the groups the provider vouches for itself, such as a token's claim;
 * - `{ refused }`: the request carries credentials this provider owns (a bearer token, its session cookie) that
 *   fail its checks; the broker answers 401 `UNAUTHENTICATED` with this message and asks no other provider;
 * - `undefined`: the request carries nothing this provider vouches for; the broker asks the next one.
 *
 * @category broker
 */
export type Identification =
  | string
  | { login: string; groups: readonly string[] }
  | { refused: string }
  | undefined;

/**
 * Turns a request into the caller's login. A provider reads only the request pipeline (headers the proxy set,
 * the peer address, its own credentials such as a bearer token), never a body or a query. It returns
 * `undefined` when the request carries no identity it trusts; the broker then tries the next provider, and a
 * request no provider identifies is anonymous.
 *
 * @example
 * ```ts
 * // A provider of your own: a mutual-TLS terminator that puts the client certificate's subject in a header.
 * const mtls: IdentityProvider = {
 *   name: 'mtls',
 *   identify: ({ headers, remoteAddress }) =>
 *     remoteAddress === '127.0.0.1' ? (headers.get('x-client-subject') ?? undefined) : undefined,
 * };
 * ```
 * @category broker
 */
export interface IdentityProvider {
  /** A short name for logs, such as `tailscale`. */
  readonly name: string;
  /** The request header the login comes from, when there is one: a refusal names it. */
  readonly header?: string;
  /**
   * The request header the caller's groups come from (comma-separated), when there is one. It is read only on a
   * request this provider vouched for, so the groups are as trusted as the login.
   */
  readonly groupsHeader?: string;
  /** The caller's login (with groups), a refusal, or `undefined` when this provider does not vouch for the request. */
  identify(request: IdentityRequest): Identification | Promise<Identification>;
}

/**
 * Who a request is from, as the broker decides it.
 *
 * - `user`: a login from an identity provider.
 * - `service`: a peer that presented one of the configured service tokens; it is not a user.
 * - `anonymous`: no provider identified the request.
 * - `invalid`: a trusted header was present but carried no usable login: empty, too long, padded with spaces,
 *   or sent more than once (which HTTP joins into `mallory, alice`); or the trusted groups header carried no
 *   usable list: an empty entry, an entry padded with spaces (a header sent twice), too long, or with control
 *   characters; or a provider's own groups (a token's claim) had such an entry.
 * - `refused`: a provider found its own credentials on the request and refused them, such as an expired or
 *   forged bearer token or session cookie.
 *
 * @category broker
 */
export type CallerIdentity =
  | {
      /** A signed-in user. */
      kind: 'user';
      /** The exact login, as the provider gave it. */
      login: string;
      /** The name of the provider that vouched for it. */
      provider: string;
      /** The caller's groups from the provider (its groups header or claim); empty when it has none or none was sent. */
      groups: string[];
    }
  | {
      /** A Corral peer with a service token. */
      kind: 'service';
    }
  | {
      /** Nobody the broker can name. */
      kind: 'anonymous';
    }
  | {
      /** A trusted header without a usable login. */
      kind: 'invalid';
      /** The name of the provider whose header it was. */
      provider: string;
      /** The header, when the provider names it. */
      header?: string;
      /** What the header should have carried: the `login` or the `groups`. */
      part: 'login' | 'groups';
    }
  | {
      /** Credentials a provider owns that failed its checks. */
      kind: 'refused';
      /** The name of the provider that refused them. */
      provider: string;
      /** Why, and what to do next. */
      message: string;
    };

/** Options of {@link tailscaleIdentity}. @category broker */
export interface TailscaleIdentityOptions {
  /**
   * Trust the `Tailscale-User-Login` header. Set it only when every path to the broker goes through
   * `tailscale serve` (for example, the broker listens on loopback only); otherwise anyone who reaches the
   * broker directly can send the header. When `false`, the header is ignored.
   */
  trustHeaders: boolean;
}

/** The header `tailscale serve` sets to the tailnet login of the caller. @category broker */
export const tailscaleLoginHeader = 'Tailscale-User-Login';

/**
 * The identity `tailscale serve` vouches for: the `Tailscale-User-Login` header, which Tailscale sets on every
 * request it proxies from a tailnet user (not from a tagged device).
 *
 * @example
 * ```ts
 * const broker = createBroker({ identity: [tailscaleIdentity({ trustHeaders: true })], admins: ['alice@example.com'] });
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` when `trustHeaders` is not a boolean.
 * @category broker
 */
export function tailscaleIdentity(options: TailscaleIdentityOptions): IdentityProvider {
  const { trustHeaders } = parseOptions(
    z.object({ trustHeaders: z.boolean() }),
    options,
    'tailscaleIdentity',
  );
  return {
    name: 'tailscale',
    header: tailscaleLoginHeader,
    identify: ({ headers }) => (trustHeaders ? (headers.get(tailscaleLoginHeader) ?? undefined) : undefined),
  };
}

/** Options of {@link authGatewayIdentity}. @category broker */
export interface AuthGatewayIdentityOptions {
  /**
   * The header the gateway sets to the signed-in user's login.
   * @defaultValue `'X-Auth-Request-Email'` (oauth2-proxy with `--set-xauthrequest`)
   */
  header?: string;
  /**
   * The gateway's addresses, as the broker sees the TCP peer. When given, the header counts only on requests
   * from one of them; when absent, it counts on every request, so every path to the broker must go through
   * the gateway.
   */
  trustedProxies?: string[];
  /**
   * The header the gateway sets to the signed-in user's groups, comma-separated.
   * @defaultValue `'X-Auth-Request-Groups'` (oauth2-proxy with `--set-xauthrequest`)
   */
  groupsHeader?: string;
}

const headerNamePattern = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

const gatewaySchema = z.object({
  header: z
    .string()
    .regex(headerNamePattern, 'must be an HTTP header name such as X-Auth-Request-Email')
    .optional(),
  trustedProxies: z.array(z.string().min(1)).optional(),
  groupsHeader: z
    .string()
    .regex(headerNamePattern, 'must be an HTTP header name such as X-Auth-Request-Groups')
    .optional(),
});

// Node reports IPv4 peers of a dual-stack socket as ::ffff:a.b.c.d.
function normalizeAddress(address: string): string {
  const lower = address.trim().toLowerCase();
  return lower.startsWith('::ffff:') && lower.includes('.') ? lower.slice('::ffff:'.length) : lower;
}

/**
 * The identity an authenticating reverse proxy (oauth2-proxy, the corral-auth gateway, an ingress with
 * external auth) vouches for in a header. With `trustedProxies`, a request that did not come from the gateway
 * is anonymous even if it carries the header.
 *
 * @example
 * ```ts
 * const gateway = authGatewayIdentity({
 *   header: 'X-Forwarded-Email',
 *   groupsHeader: 'X-Forwarded-Groups',
 *   trustedProxies: ['10.0.0.5'],
 * });
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` for a malformed header name or proxy list.
 * @category broker
 */
export function authGatewayIdentity(options: AuthGatewayIdentityOptions = {}): IdentityProvider {
  const parsed = parseOptions(gatewaySchema, options, 'authGatewayIdentity');
  const header = parsed.header ?? 'X-Auth-Request-Email';
  const proxies = parsed.trustedProxies && new Set(parsed.trustedProxies.map(normalizeAddress));
  return {
    name: 'auth-gateway',
    header,
    groupsHeader: parsed.groupsHeader ?? 'X-Auth-Request-Groups',
    identify: ({ headers, remoteAddress }) => {
      if (proxies && (remoteAddress === undefined || !proxies.has(normalizeAddress(remoteAddress))))
        return undefined;
      return headers.get(header) ?? undefined;
    },
  };
}

const digest = (text: string) => createHash('sha256').update(text).digest();

/**
 * Matches `Authorization: Bearer <token>` against the peer tokens, in constant time per token. Any other
 * Authorization header is not a service identity and is left to the identity providers.
 */
function isPeerRequest(headers: Headers, peerTokenDigests: readonly Buffer[]): boolean {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(headers.get('authorization') ?? '');
  if (!match?.[1] || peerTokenDigests.length === 0) return false;
  const presented = digest(match[1]);
  return peerTokenDigests.reduce((found, token) => timingSafeEqual(token, presented) || found, false);
}

// HTTP joins a header sent twice with a comma, so a comma means two logins, not one.
function isUsableLogin(login: string): boolean {
  return login !== '' && login.length <= maxIdentityLength && login.trim() === login && !login.includes(',');
}

const isUsableGroup = (group: string) =>
  group !== '' && group.length <= maxIdentityLength && group.trim() === group && !/\p{Cc}/u.test(group);

// oauth2-proxy joins groups with a bare comma and HTTP joins a repeated header with ", ", so a padded entry
// means the header was sent twice.
function groupsOf(value: string): string[] | undefined {
  const groups = value.split(',');
  return groups.every(isUsableGroup) ? groups : undefined;
}

// The groups a provider vouched for with the login: its own list, or its groups header's.
function groupsFrom(
  provider: IdentityProvider,
  identification: string | { groups: readonly string[] },
  headers: Headers,
): string[] | undefined {
  if (typeof identification !== 'string') {
    return identification.groups.every(isUsableGroup) ? [...identification.groups] : undefined;
  }
  const sent = provider.groupsHeader === undefined ? null : headers.get(provider.groupsHeader);
  return sent === null ? [] : groupsOf(sent);
}

/** Options of {@link createIdentityResolver}. */
export interface IdentityResolverOptions {
  providers: readonly IdentityProvider[];
  peerTokens: readonly string[];
}

/** Builds the function that decides who a request is from: a peer token first, then each provider in order. */
export function createIdentityResolver(
  options: IdentityResolverOptions,
): (request: IdentityRequest) => Promise<CallerIdentity> {
  const peerTokenDigests = options.peerTokens.map(digest);
  return async (request) => {
    if (isPeerRequest(request.headers, peerTokenDigests)) return { kind: 'service' };
    for (const provider of options.providers) {
      const identification = await provider.identify(request);
      if (identification === undefined) continue;
      if (typeof identification !== 'string' && 'refused' in identification) {
        return { kind: 'refused', provider: provider.name, message: identification.refused };
      }
      const login = typeof identification === 'string' ? identification : identification.login;
      if (!isUsableLogin(login)) {
        return {
          kind: 'invalid',
          provider: provider.name,
          part: 'login',
          ...(provider.header === undefined ? {} : { header: provider.header }),
        };
      }
      const groups = groupsFrom(provider, identification, request.headers);
      if (groups === undefined) {
        return {
          kind: 'invalid',
          provider: provider.name,
          part: 'groups',
          ...(typeof identification === 'string' && provider.groupsHeader !== undefined
            ? { header: provider.groupsHeader }
            : {}),
        };
      }
      return { kind: 'user', login, provider: provider.name, groups };
    }
    return { kind: 'anonymous' };
  };
}
