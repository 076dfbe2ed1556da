import { hkdfSync, randomBytes } from 'node:crypto';
import { EncryptJWT, type JWTPayload, jwtDecrypt } from 'jose';
import { VdiError } from '../errors.js';

/** How long a session lasts without a request that renews it. */
export const sessionIdleMs = 8 * 60 * 60_000;
/** How long a session lasts from sign-in, however often it is renewed: the issuer is asked again after that. */
export const sessionMaxMs = 24 * 60 * 60_000;
/** How long a sign-in may take, from the redirect to the issuer to its callback. */
export const signInWindowMs = 10 * 60_000;
// browsers keep cookies of at most 4096 bytes, name and attributes included
const maxCookieBytes = 3800;

/** A signed-in browser, as its session cookie carries it. */
export interface Session {
  login: string;
  groups: string[];
  /** When the user signed in at the issuer; the session ends {@link sessionMaxMs} after. */
  signedInAt: Date;
  /** When the cookie was sealed, and when it expires unless renewed. */
  issuedAt: Date;
  expiresAt: Date;
}

/** What the broker keeps between the redirect to the issuer and its callback. */
export interface SignInState {
  state: string;
  nonce: string;
  codeVerifier: string;
  /** The local path to return to after sign-in. */
  returnTo: string;
}

/** Why a cookie cannot be opened: it expired, or it is not one this broker sealed (tampered, another key). */
export type UnsealFailure = 'expired' | 'forged';

// The audience tells a session cookie from a sign-in cookie: both are sealed with the same key.
const sessionAudience = 'corral-vdi/session';
const signInAudience = 'corral-vdi/sign-in';

/**
 * The key that seals the cookies: derived from a shared secret (every replica must have the same one), or random
 * for this process when there is none.
 *
 * @throws {@link VdiError} `INVALID_INPUT` for a secret shorter than 32 characters.
 */
export function sessionKeyFrom(secret: string | undefined): Uint8Array {
  if (secret === undefined) return new Uint8Array(randomBytes(32));
  if (secret.length < 32) {
    throw new VdiError(
      'INVALID_INPUT',
      'The session key must have at least 32 characters; make one with: openssl rand -base64 48',
    );
  }
  return new Uint8Array(hkdfSync('sha256', secret, 'corral-vdi', 'session cookie A256GCM', 32));
}

async function seal(key: Uint8Array, audience: string, claims: JWTPayload, now: Date, expiresAt: Date) {
  return await new EncryptJWT(claims)
    .setProtectedHeader({ alg: 'dir', enc: 'A256GCM' })
    .setAudience(audience)
    .setIssuedAt(now)
    .setExpirationTime(expiresAt)
    .encrypt(key);
}

async function unseal(
  key: Uint8Array,
  audience: string,
  sealed: string,
  now: Date,
): Promise<JWTPayload | UnsealFailure> {
  try {
    const { payload } = await jwtDecrypt(sealed, key, {
      audience,
      currentDate: now,
      keyManagementAlgorithms: ['dir'],
      contentEncryptionAlgorithms: ['A256GCM'],
      requiredClaims: ['iat', 'exp'],
    });
    return payload;
  } catch (error) {
    return (error as { code?: string }).code === 'ERR_JWT_EXPIRED' ? 'expired' : 'forged';
  }
}

/**
 * Seals a session for its cookie, expiring {@link sessionIdleMs} from `now` but never after
 * {@link sessionMaxMs} from sign-in.
 *
 * @throws {@link VdiError} `UNAUTHENTICATED` when the login and groups make a cookie too large for a browser.
 */
export async function sealSession(
  key: Uint8Array,
  session: Pick<Session, 'login' | 'groups' | 'signedInAt'>,
  now: Date,
): Promise<{ sealed: string; expiresAt: Date }> {
  const expiresAt = new Date(
    Math.min(now.getTime() + sessionIdleMs, session.signedInAt.getTime() + sessionMaxMs),
  );
  const sealed = await seal(
    key,
    sessionAudience,
    // in seconds with the milliseconds, so a sign-out a moment after a sign-in tells the two apart
    { sub: session.login, groups: session.groups, sia: session.signedInAt.getTime() / 1000 },
    now,
    expiresAt,
  );
  if (sealed.length > maxCookieBytes) {
    throw new VdiError(
      'UNAUTHENTICATED',
      `Your ${session.groups.length} groups do not fit in a session cookie; have the issuer send only the groups ` +
        'that matter here (a groups filter), or call the API with a bearer token.',
    );
  }
  return { sealed, expiresAt };
}

/** Opens a session cookie: the session, or why it is not one. */
export async function unsealSession(
  key: Uint8Array,
  sealed: string,
  now: Date,
): Promise<Session | UnsealFailure> {
  const payload = await unseal(key, sessionAudience, sealed, now);
  if (typeof payload === 'string') return payload;
  const { sub, groups, sia, iat, exp } = payload;
  const isGroupList = Array.isArray(groups) && groups.every((group) => typeof group === 'string');
  if (typeof sub !== 'string' || !isGroupList || typeof sia !== 'number') return 'forged';
  return {
    login: sub,
    groups,
    signedInAt: new Date(sia * 1000),
    issuedAt: new Date((iat ?? 0) * 1000),
    expiresAt: new Date((exp ?? 0) * 1000),
  };
}

/** Seals what the callback of a sign-in needs, for {@link signInWindowMs}. */
export async function sealSignIn(key: Uint8Array, state: SignInState, now: Date): Promise<string> {
  return await seal(key, signInAudience, { ...state }, now, new Date(now.getTime() + signInWindowMs));
}

/** Opens a sign-in cookie: the state, or why it is not one. */
export async function unsealSignIn(
  key: Uint8Array,
  sealed: string,
  now: Date,
): Promise<SignInState | UnsealFailure> {
  const payload = await unseal(key, signInAudience, sealed, now);
  if (typeof payload === 'string') return payload;
  const { state, nonce, codeVerifier, returnTo } = payload;
  return [state, nonce, codeVerifier, returnTo].every((value) => typeof value === 'string')
    ? ({ state, nonce, codeVerifier, returnTo } as SignInState)
    : 'forged';
}

/** The value of one cookie of a request's `Cookie` header (the first of that name). */
export function readCookie(headers: Headers, name: string): string | undefined {
  for (const pair of (headers.get('cookie') ?? '').split(';')) {
    const at = pair.indexOf('=');
    if (at !== -1 && pair.slice(0, at).trim() === name) return pair.slice(at + 1).trim();
  }
  return undefined;
}

/**
 * A `Set-Cookie` value the page's scripts cannot read, sent back only to this site (and on top-level
 * navigations from others, which the issuer's redirect is), over https when the broker is reached by https.
 */
export function cookieHeader(
  name: string,
  value: string,
  options: { secure: boolean; maxAgeSeconds: number },
): string {
  return [
    `${name}=${value}`,
    'Path=/',
    'HttpOnly',
    'SameSite=Lax',
    ...(options.secure ? ['Secure'] : []),
    `Max-Age=${Math.max(0, Math.floor(options.maxAgeSeconds))}`,
  ].join('; ');
}
