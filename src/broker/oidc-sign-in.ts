import { X509Certificate } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { rootCertificates } from 'node:tls';
import { createRemoteJWKSet, customFetch } from 'jose';
import * as client from 'openid-client';
import { Agent, fetch as fetchWith } from 'undici';
import { z } from 'zod';
import type { Clock } from '../clock.js';
import { VdiError } from '../errors.js';
import type { SessionEnds } from '../session-ends/session-ends.js';
import { parseOptions } from '../validate.js';
import { systemClock } from '../vdi.js';
import { answerFailure } from './answers.js';
import { type BrokerResponse, headersOfNode, writeNodeResponse } from './http-io.js';
import type { IdentityProvider } from './identity.js';
import { identityOfClaims, type TokenExpectations, verifyBearerToken } from './oidc-tokens.js';
import {
  cookieHeader,
  readCookie,
  type Session,
  sealSession,
  sealSignIn,
  sessionIdleMs,
  sessionKeyFrom,
  signInWindowMs,
  unsealSession,
  unsealSignIn,
} from './session-cookie.js';

/** Options of {@link createOidcSignIn}. @category broker */
export interface OidcSignInOptions {
  /**
   * The issuer's URL, as its discovery document names it, such as `https://login.example.com/realms/corp`. Plain
   * `http` is allowed only for an issuer on loopback (`127.0.0.1`, `[::1]`, `localhost`).
   */
  issuer: string;
  /**
   * The CA certificates (PEM, one or more) that sign the issuer's TLS certificate, when a company CA does: the
   * broker trusts them for its requests to the issuer (discovery, keys, code redemption, userinfo), beside Node's
   * bundled roots.
   */
  issuerCa?: string;
  /** The broker's client ID at the issuer. */
  clientId: string;
  /** The client secret, for a confidential client; without it the broker signs in as a public client (PKCE only). */
  clientSecret?: string;
  /** The `aud` a bearer token must name. @defaultValue the client ID, as in the issuer's ID tokens */
  audience?: string;
  /** The claim the caller's groups come from, a list of names. @defaultValue `'groups'` */
  groupsClaim?: string;
  /** The claim the login comes from. @defaultValue `'email'` (refused when `email_verified` is `false`) */
  loginClaim?: string;
  /**
   * Where the issuer sends the browser back, `<the broker's URL as browsers reach it>/auth/callback`; register it at
   * the issuer. An https URL makes the cookies `Secure`.
   */
  redirectUrl: string;
  /**
   * The secret the session cookies are sealed with, at least 32 characters. Every replica must have the same one;
   * without it each process makes its own, and its sessions end when it stops.
   */
  sessionSecret?: string;
  /**
   * The least time between two fetches of the issuer's keys that a token signed by an unknown key causes, in ms.
   * @defaultValue 30000
   */
  keyRefetchCooldownMs?: number;
  /** Where the time comes from, for the expiry of tokens and sessions. */
  clock?: Clock;
  /**
   * Where sign-outs are recorded (see `createSessionEnds`): Sign out then ends the session in every browser that
   * has a copy of its cookie and on every replica, and an admin can end all of a user's sessions. Each request
   * with a session cookie reads it (from the watch cache: no request); each sign-out writes it. Without it, Sign
   * out only clears the cookie of the browser that signs out, and a copy of it stays valid until it expires.
   */
  sessionEnds?: SessionEnds;
}

/**
 * The broker's own sign-in with an OpenID Connect issuer: an identity provider for bearer tokens and session
 * cookies, and the sign-in routes. Pass `identity` to the broker's `identity` and the whole to `serveBroker`'s
 * `signIn`.
 *
 * @category broker
 */
export interface OidcSignIn {
  /** Vouches for a verified bearer token, else for a session cookie this broker sealed; refuses a bad one. */
  readonly identity: IdentityProvider;
  /** The issuer as its discovery document names it. */
  readonly issuer: string;
  /**
   * Answers the sign-in routes (`GET /auth/login`, `GET /auth/callback`, `POST /auth/logout`) and sends a visit to
   * the page at `/` without a session to the sign-in; on any other request it renews a session past half its life
   * (`Set-Cookie`) and returns `false`, so the request goes on to the broker.
   */
  handle(req: IncomingMessage, res: ServerResponse): Promise<boolean>;
}

const pemCertificate = /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g;

function isCaBundle(text: string): boolean {
  const certificates = text.match(pemCertificate) ?? [];
  try {
    return certificates.length > 0 && certificates.every((pem) => new X509Certificate(pem).ca);
  } catch {
    return false;
  }
}

const optionsSchema = z.object({
  issuer: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL such as https://login.example.com' }),
  issuerCa: z
    .string()
    .refine(
      isCaBundle,
      'must be PEM CA certificates (-----BEGIN CERTIFICATE-----), such as a CA bundle file holds',
    )
    .optional(),
  clientId: z.string().min(1),
  clientSecret: z.string().min(1).optional(),
  audience: z.string().min(1).optional(),
  groupsClaim: z.string().min(1).optional(),
  loginClaim: z.string().min(1).optional(),
  redirectUrl: z.url({
    protocol: /^https?$/,
    error: 'must be an http(s) URL such as https://desktops.example.com/auth/callback',
  }),
  sessionSecret: z.string().optional(),
  keyRefetchCooldownMs: z.int().min(0).optional(),
  clock: z.custom<Clock>((value) => typeof (value as Clock | undefined)?.now === 'function').optional(),
  sessionEnds: z
    .custom<SessionEnds>((value) => typeof (value as SessionEnds | undefined)?.endedAt === 'function')
    .optional(),
});

const loopbackHosts = new Set(['127.0.0.1', '[::1]', 'localhost']);

/** The paths of the sign-in routes. */
export const signInPaths = {
  login: '/auth/login',
  callback: '/auth/callback',
  logout: '/auth/logout',
} as const;

// A local path only: a sign-in must not end on another site.
function localPath(value: string | null): string {
  return value !== null && value.length <= 2048 && /^\/(?![/\\])/.test(value) ? value : '/';
}

const bearerOf = (headers: Headers) => /^Bearer\s+(\S+)\s*$/i.exec(headers.get('authorization') ?? '')?.[1];

// The scopes that bring the login and the groups, of those the issuer lists.
function scopesFor(metadata: client.ServerMetadata): string {
  const wanted = ['email', 'profile', 'groups'];
  const listed = metadata.scopes_supported;
  return [
    'openid',
    ...(listed ? wanted.filter((scope) => listed.includes(scope)) : ['email', 'profile']),
  ].join(' ');
}

// What openid-client and jose each pass is a subset of fetch's init.
type IssuerFetch = (url: string, init: object) => Promise<Response>;

// Node's fetch trusts only its bundled roots, so the issuer's requests alone go through an agent that adds the CA.
function fetchTrusting(caPem: string): IssuerFetch {
  const dispatcher = new Agent({ connect: { ca: [...rootCertificates, caPem] } });
  return async (url, init) =>
    (await fetchWith(url, { ...init, dispatcher } as Parameters<typeof fetchWith>[1])) as unknown as Response;
}

const untrustedChainCodes = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
]);

// fetch says only "fetch failed"; the reason, such as an untrusted certificate, is in its cause.
function discoveryFailure(issuer: URL, error: unknown): VdiError {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  const reason = [(error as Error).message, cause?.message].filter(Boolean).join(': ');
  const next = untrustedChainCodes.has(cause?.code ?? '')
    ? "the issuer's certificate is signed by a CA the broker does not trust: give that CA as issuerCa (broker serve --oidc-ca-file)"
    : 'check the issuer URL and that the broker reaches it';
  return new VdiError(
    'INTERNAL',
    `Cannot read the OpenID configuration of ${issuer.href} (${reason}); ${next}.`,
    {
      cause: error,
    },
  );
}

async function discover(
  issuer: URL,
  clientId: string,
  clientSecret: string | undefined,
  issuerFetch: IssuerFetch | undefined,
): Promise<client.Configuration> {
  // plain http only for an issuer on this machine, such as the test kit's
  const insecure = issuer.protocol === 'http:';
  if (insecure && !loopbackHosts.has(issuer.hostname)) {
    throw new VdiError(
      'INVALID_INPUT',
      `The issuer ${issuer.href} is not https; only an issuer on loopback may use http.`,
    );
  }
  try {
    return await client.discovery(
      issuer,
      clientId,
      clientSecret,
      clientSecret === undefined ? client.None() : undefined,
      {
        execute: insecure ? [client.allowInsecureRequests] : [],
        timeout: 10,
        ...(issuerFetch === undefined ? {} : { [client.customFetch]: issuerFetch }),
      },
    );
  } catch (error) {
    throw discoveryFailure(issuer, error);
  }
}

// The issuer, or the openid-client checks of its answer, refused the sign-in; anything else is not the user's.
function isSignInRefusal(error: unknown): boolean {
  return (
    error instanceof client.AuthorizationResponseError ||
    error instanceof client.ResponseBodyError ||
    (error instanceof client.ClientError && error.code !== undefined)
  );
}

/** An answer of the sign-in routes, with the cookies it sets (a header record holds one `Set-Cookie` only). */
interface SignInAnswer {
  response: BrokerResponse;
  cookies: string[];
}

function redirect(location: string, cookies: string[] = []): SignInAnswer {
  return { response: { status: 302, headers: { location, 'cache-control': 'no-store' }, body: '' }, cookies };
}

const refusal = (response: BrokerResponse): SignInAnswer => ({ response, cookies: [] });

const signedOutPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Signed out</title><link rel="icon" href="data:,"></head>
<body><p>You are signed out of the Desktops page. The issuer may still remember you; sign out there too on a
shared computer.</p><p><a href="/">Sign in again</a></p></body></html>
`;

/**
 * Sets up the broker's own sign-in with an OpenID Connect issuer: reads the issuer's discovery document and makes
 * the identity provider and the routes of {@link OidcSignIn}.
 *
 * The page signs a user in with the authorization code flow and PKCE (with `state` and `nonce`), and keeps the
 * login and groups of the ID token (or the issuer's userinfo) in an encrypted, HttpOnly, SameSite=Lax session
 * cookie that lasts 8 hours from the last renewal and 24 hours at most. An API caller may instead send
 * `Authorization: Bearer <ID or access token>`, verified against the issuer's keys.
 *
 * @example
 * ```ts
 * const signIn = await createOidcSignIn({
 *   issuer: 'https://login.example.com/realms/corp',
 *   clientId: 'corral-vdi',
 *   clientSecret: readFileSync('/etc/corral/client-secret', 'utf8').trim(),
 *   redirectUrl: 'https://desktops.example.com/auth/callback',
 *   sessionSecret: readFileSync('/etc/corral/session-key', 'utf8').trim(),
 * });
 * const server = await serveBroker({ ...brokerOptionsFromEnv(process.env), identity: [signIn.identity], signIn });
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` for bad options (an http issuer off loopback, an `issuerCa` without a PEM
 *   CA certificate, a session secret under 32 characters); `INTERNAL` when the issuer's discovery document cannot
 *   be read, naming `issuerCa` when the issuer's certificate is signed by a CA the broker does not trust.
 * @category broker
 */
export async function createOidcSignIn(options: OidcSignInOptions): Promise<OidcSignIn> {
  const parsed = parseOptions(optionsSchema, options, 'createOidcSignIn');
  const clock = parsed.clock ?? systemClock;
  const key = sessionKeyFrom(parsed.sessionSecret);
  const redirectUrl = new URL(parsed.redirectUrl);
  const secure = redirectUrl.protocol === 'https:';
  // the __Host- prefix makes a browser refuse the cookie unless it is Secure, for this host and Path=/
  const names = secure
    ? { session: '__Host-corral-vdi-session', signIn: '__Host-corral-vdi-sign-in' }
    : { session: 'corral-vdi-session', signIn: 'corral-vdi-sign-in' };
  const issuerFetch = parsed.issuerCa === undefined ? undefined : fetchTrusting(parsed.issuerCa);
  const config = await discover(new URL(parsed.issuer), parsed.clientId, parsed.clientSecret, issuerFetch);
  const metadata = config.serverMetadata();
  if (metadata.jwks_uri === undefined) {
    throw new VdiError(
      'INVALID_INPUT',
      `The issuer ${metadata.issuer} publishes no jwks_uri, so no token of it can be verified.`,
    );
  }
  // unknown kids refetch the keys, at most once per cooldown; keys the issuer dropped go after 10 minutes
  const keys = createRemoteJWKSet(new URL(metadata.jwks_uri), {
    cooldownDuration: parsed.keyRefetchCooldownMs ?? 30_000,
    cacheMaxAge: 10 * 60_000,
    timeoutDuration: 5_000,
    ...(issuerFetch === undefined ? {} : { [customFetch]: issuerFetch }),
  });
  const expected: TokenExpectations = {
    issuer: metadata.issuer,
    audience: parsed.audience ?? parsed.clientId,
    loginClaim: parsed.loginClaim ?? 'email',
    groupsClaim: parsed.groupsClaim ?? 'groups',
  };
  const sessionCookie = ({ sealed, expiresAt }: { sealed: string; expiresAt: Date }, now: Date) =>
    cookieHeader(names.session, sealed, {
      secure,
      maxAgeSeconds: (expiresAt.getTime() - now.getTime()) / 1000,
    });
  const clearCookie = (name: string) => cookieHeader(name, '', { secure, maxAgeSeconds: 0 });

  // 'ended': signed in at or before the user's last sign-out, in this browser or another, or an admin's end
  async function sessionOf(headers: Headers): Promise<Session | 'expired' | 'forged' | 'ended' | undefined> {
    const sealed = readCookie(headers, names.session);
    if (sealed === undefined) return undefined;
    const session = await unsealSession(key, sealed, clock.now());
    if (typeof session === 'string' || parsed.sessionEnds === undefined) return session;
    const endedAt = await parsed.sessionEnds.endedAt(session.login);
    return endedAt !== undefined && session.signedInAt <= endedAt ? 'ended' : session;
  }

  const identity: IdentityProvider = {
    name: 'oidc',
    async identify({ headers }) {
      const bearer = bearerOf(headers);
      if (bearer !== undefined) return await verifyBearerToken(bearer, keys, expected, clock.now());
      const session = await sessionOf(headers);
      if (session === 'expired')
        return { refused: 'Your sign-in expired; reload the page to sign in again.' };
      if (session === 'ended') {
        return { refused: 'This session was signed out; reload the page to sign in again.' };
      }
      if (session === 'forged') {
        return {
          refused: `The session cookie is not one this broker sealed (changed, or sealed with another key); sign in again at ${signInPaths.login}.`,
        };
      }
      return session && { login: session.login, groups: session.groups };
    },
  };

  async function startSignIn(url: URL): Promise<SignInAnswer> {
    const codeVerifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const now = clock.now();
    const sealed = await sealSignIn(
      key,
      { state, nonce, codeVerifier, returnTo: localPath(url.searchParams.get('return')) },
      now,
    );
    const authorization = client.buildAuthorizationUrl(config, {
      redirect_uri: redirectUrl.href,
      scope: scopesFor(metadata),
      code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    return redirect(authorization.href, [
      cookieHeader(names.signIn, sealed, { secure, maxAgeSeconds: signInWindowMs / 1000 }),
    ]);
  }

  async function finishSignIn(url: URL, headers: Headers): Promise<SignInAnswer> {
    const sealed = readCookie(headers, names.signIn);
    const started = sealed === undefined ? undefined : await unsealSignIn(key, sealed, clock.now());
    if (started === undefined || typeof started === 'string') {
      return refusal(
        answerFailure(
          'UNAUTHENTICATED',
          `This sign-in was not started in this browser, or took longer than ${signInWindowMs / 60_000} minutes; start again at ${signInPaths.login}.`,
        ),
      );
    }
    const current = new URL(redirectUrl);
    current.search = url.search;
    let claims: Record<string, unknown>;
    try {
      const tokens = await client.authorizationCodeGrant(config, current, {
        pkceCodeVerifier: started.codeVerifier,
        expectedState: started.state,
        expectedNonce: started.nonce,
        idTokenExpected: true,
      });
      // idTokenExpected: the grant fails without an ID token
      const idClaims = tokens.claims() as client.IDToken;
      // issuers that keep scope claims out of the ID token give them at userinfo
      const userinfo =
        metadata.userinfo_endpoint === undefined
          ? {}
          : await client.fetchUserInfo(config, tokens.access_token, idClaims.sub);
      claims = { ...userinfo, ...idClaims };
    } catch (error) {
      if (!isSignInRefusal(error)) throw error;
      const said = error as { error?: string; error_description?: string; message: string };
      return refusal(
        answerFailure(
          'UNAUTHENTICATED',
          `The sign-in at ${metadata.issuer} did not complete (${said.error_description ?? said.error ?? said.message}); start again at ${signInPaths.login}.`,
        ),
      );
    }
    const caller = identityOfClaims(claims, expected);
    if ('refused' in caller) return refusal(answerFailure('UNAUTHENTICATED', caller.refused));
    const now = clock.now();
    let session: Awaited<ReturnType<typeof sealSession>>;
    try {
      session = await sealSession(key, { ...caller, signedInAt: now }, now);
    } catch (error) {
      if (error instanceof VdiError) return refusal(answerFailure(error.code, error.message));
      throw error;
    }
    return redirect(started.returnTo, [sessionCookie(session, now), clearCookie(names.signIn)]);
  }

  // A session past half its life gets a fresh cookie, so an active user stays signed in up to the session's maximum.
  async function renew(headers: Headers, res: ServerResponse): Promise<void> {
    const session = await sessionOf(headers);
    const now = clock.now();
    if (session === undefined || typeof session === 'string') return;
    if (now.getTime() - session.issuedAt.getTime() < sessionIdleMs / 2) return;
    res.setHeader('set-cookie', sessionCookie(await sealSession(key, session, now), now));
  }

  // Records the sign-out, so every copy of the cookie is refused; a failed record is said, not taken for a sign-out.
  async function endSession(headers: Headers): Promise<SignInAnswer | undefined> {
    const session = await sessionOf(headers);
    if (parsed.sessionEnds === undefined || session === undefined || typeof session === 'string') return;
    // never before the session's own sign-in, which another replica's clock may have put a moment ahead
    const at = new Date(Math.max(clock.now().getTime(), session.signedInAt.getTime()));
    try {
      await parsed.sessionEnds.end(session.login, at);
    } catch (error) {
      if (!(error instanceof VdiError)) throw error;
      return refusal(
        answerFailure(error.code, `The sign-out could not be recorded (${error.message}); try again.`),
      );
    }
    return undefined;
  }

  async function answer(req: IncomingMessage, res: ServerResponse): Promise<SignInAnswer | undefined> {
    const url = new URL(req.url ?? '/', 'http://broker.invalid');
    const headers = headersOfNode(req);
    const method = req.method ?? 'GET';
    const isRead = method === 'GET' || method === 'HEAD';
    switch (url.pathname) {
      case signInPaths.login:
        return isRead ? await startSignIn(url) : methodNotAllowed('GET');
      case signInPaths.callback:
        return isRead ? await finishSignIn(url, headers) : methodNotAllowed('GET');
      case signInPaths.logout: {
        if (method !== 'POST') return methodNotAllowed('POST');
        const site = headers.get('sec-fetch-site');
        if (site === 'cross-site' || site === 'same-site') {
          return refusal(
            answerFailure('FORBIDDEN', 'Sign out from the Desktops page itself, not from another site.'),
          );
        }
        const ended = await endSession(headers);
        if (ended) return ended;
        const page = {
          'content-type': 'text/html; charset=utf-8',
          'cache-control': 'no-store',
          'content-security-policy': "default-src 'none'",
        };
        return {
          response: { status: 200, headers: page, body: signedOutPage },
          cookies: [clearCookie(names.session)],
        };
      }
      case '/': {
        if (!isRead || bearerOf(headers) !== undefined) break;
        const session = await sessionOf(headers);
        if (session !== undefined && typeof session !== 'string') break;
        const query = new URLSearchParams({ return: `${url.pathname}${url.search}` });
        return redirect(
          `${signInPaths.login}?${query}`,
          session === undefined ? [] : [clearCookie(names.session)],
        );
      }
    }
    await renew(headers, res);
    return undefined;
  }

  return {
    identity,
    issuer: metadata.issuer,
    async handle(req, res) {
      const answered = await answer(req, res);
      if (answered === undefined) return false;
      if (answered.cookies.length > 0) res.setHeader('set-cookie', answered.cookies);
      writeNodeResponse(res, answered.response);
      return true;
    },
  };
}

function methodNotAllowed(allow: string): SignInAnswer {
  return refusal(answerFailure('METHOD_NOT_ALLOWED', `Use ${allow} here.`, { allow }));
}
