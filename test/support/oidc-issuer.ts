import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK, type JWTPayload, SignJWT } from 'jose';
import Provider from 'oidc-provider';

/** One user of the local issuer: its email is its login, and the dev login form takes it with any password. */
export interface IssuerAccount {
  email: string;
  groups: string[];
}

/** Options of {@link startLocalIssuer}. */
export interface LocalIssuerOptions {
  /** The redirect URIs the client may use, such as `http://127.0.0.1:<port>/auth/callback`. */
  redirectUris: string[];
  /** Who can sign in: by login, with their groups. */
  accounts: IssuerAccount[];
  /** Serve https on `https://127.0.0.1:<port>` with this certificate and key (PEM) instead of plain http. */
  tls?: { certPem: string; keyPem: string };
}

/** What a token of {@link LocalIssuer.mintToken} carries; what is not given takes the issuer's own values. */
export interface MintOptions {
  /** The login, as `email` (and `sub`). */
  email: string;
  groups?: unknown;
  /** `aud`. @defaultValue the client ID */
  audience?: string;
  /** Seconds from now to `exp`; negative for an expired token, `null` for none. @defaultValue 300 */
  expiresIn?: number | null;
  /** More claims, which override `email`, `email_verified` and `groups` (not `iss`, `sub`, `aud`, `iat`, `exp`). */
  claims?: JWTPayload;
}

/** A real OpenID provider (`oidc-provider`) on loopback, with its own keys, for the broker's sign-in tests. */
export interface LocalIssuer {
  /** The issuer URL, `http://127.0.0.1:<port>` (`https://127.0.0.1:<port>` with `tls`). */
  readonly url: string;
  readonly clientId: string;
  readonly clientSecret: string;
  /** How many times its JWKS has been fetched. */
  keyFetches(): number;
  /** How many requests it has been sent. */
  requests(): number;
  /** A token signed by its current key, as it would sign an ID token for the client. */
  mintToken(options: MintOptions): Promise<string>;
  /** Makes a new signing key and publishes it first, keeping the old one published beside it. */
  rotateKeys(): Promise<void>;
  close(): Promise<void>;
}

interface SigningKey {
  kid: string;
  /** What the provider takes: it publishes the public half at its jwks_uri. */
  privateJwk: JWK;
  privateKey: CryptoKey;
}

async function makeSigningKey(): Promise<SigningKey> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const kid = randomUUID();
  return { kid, privateJwk: { ...(await exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' }, privateKey };
}

/**
 * Starts an OpenID provider on loopback whose dev interactions sign in any of `accounts` (login form, then
 * consent), with PKCE required, for one confidential client. Its ID tokens carry `sub` only; the email and the
 * groups come from userinfo, as with issuers that keep scope claims out of ID tokens.
 */
export async function startLocalIssuer(options: LocalIssuerOptions): Promise<LocalIssuer> {
  const clientId = 'corral-vdi-test';
  const clientSecret = `secret-${randomUUID()}`;
  const accounts = new Map(options.accounts.map((account) => [account.email, account]));
  let keys = [await makeSigningKey()];
  let fetches = 0;
  let requests = 0;
  let handle: ReturnType<Provider['callback']> = () => {};
  const listener: Parameters<typeof createServer>[1] = (req, res) => {
    requests++;
    if (req.url?.startsWith('/jwks')) fetches++;
    handle(req, res);
  };
  const { tls } = options;
  const server: Server = tls
    ? createTlsServer({ cert: tls.certPem, key: tls.keyPem }, listener)
    : createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const url = `${tls ? 'https' : 'http'}://127.0.0.1:${port}`;

  // a provider takes its keys once, so a rotation makes a new one with the new list
  const startProvider = () => {
    const provider = new Provider(url, {
      clients: [
        {
          client_id: clientId,
          client_secret: clientSecret,
          redirect_uris: options.redirectUris,
          grant_types: ['authorization_code'],
          response_types: ['code'],
          token_endpoint_auth_method: 'client_secret_post',
        },
      ],
      jwks: { keys: keys.map((key) => key.privateJwk as Record<string, unknown>) },
      claims: { openid: ['sub'], email: ['email', 'email_verified'], groups: ['groups'] },
      scopes: ['openid', 'email', 'groups'],
      findAccount: (_context, id) => {
        const account = accounts.get(id);
        return (
          account && {
            accountId: id,
            claims: () => ({ sub: id, email: id, email_verified: true, groups: account.groups }),
          }
        );
      },
      cookies: { keys: [`cookie-key-${randomUUID()}`] },
      pkce: { required: () => true },
      // fixed lifetimes, so the provider does not note its defaults on every sign-in
      ttl: { Interaction: 600, Session: 3600, Grant: 3600, AccessToken: 600, IdToken: 600 },
    });
    handle = provider.callback();
  };
  startProvider();

  return {
    url,
    clientId,
    clientSecret,
    keyFetches: () => fetches,
    requests: () => requests,
    async mintToken({ email, groups = [], audience = clientId, expiresIn = 300, claims = {} }) {
      const [current] = keys;
      if (!current) throw new Error('the issuer has no key');
      const now = Math.floor(Date.now() / 1000);
      const token = new SignJWT({ email, email_verified: true, groups, ...claims })
        .setProtectedHeader({ alg: 'RS256', kid: current.kid })
        .setIssuer(url)
        .setSubject(email)
        .setAudience(audience)
        .setIssuedAt(now);
      if (expiresIn !== null) token.setExpirationTime(now + expiresIn);
      return await token.sign(current.privateKey);
    },
    async rotateKeys() {
      keys = [await makeSigningKey(), ...keys];
      startProvider();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
