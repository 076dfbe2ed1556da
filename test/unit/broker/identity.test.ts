import { describe, expect, it } from 'vitest';
import {
  authGatewayIdentity,
  createIdentityResolver,
  type Identification,
  type IdentityProvider,
  tailscaleIdentity,
} from '../../../src/broker/identity.js';
import { isVdiError } from '../../../src/errors.js';
import { thrownBy } from '../claims/thrown-by.js';

const request = (headers: Record<string, string>, remoteAddress: string | undefined = '127.0.0.1') => ({
  headers: new Headers(headers),
  remoteAddress,
});

const peerToken = 'peer-token-0123456789abcdef';

describe('tailscaleIdentity', () => {
  it('reads the Tailscale login header when trusted', () => {
    const provider = tailscaleIdentity({ trustHeaders: true });
    expect(provider.identify(request({ 'Tailscale-User-Login': 'alice@example.com' }))).toBe(
      'alice@example.com',
    );
  });

  it('ignores the header when not trusted', () => {
    const provider = tailscaleIdentity({ trustHeaders: false });
    expect(provider.identify(request({ 'Tailscale-User-Login': 'alice@example.com' }))).toBeUndefined();
  });

  it('refuses options without trustHeaders', () => {
    expect(
      isVdiError(
        thrownBy(() => tailscaleIdentity({} as never)),
        'INVALID_INPUT',
      ),
    ).toBe(true);
  });
});

describe('authGatewayIdentity', () => {
  it('reads X-Auth-Request-Email by default', () => {
    expect(authGatewayIdentity().identify(request({ 'X-Auth-Request-Email': 'bob@example.com' }))).toBe(
      'bob@example.com',
    );
  });

  it('reads a configured header', () => {
    const provider = authGatewayIdentity({ header: 'X-Forwarded-User' });
    expect(provider.identify(request({ 'X-Forwarded-User': 'bob', 'X-Auth-Request-Email': 'eve' }))).toBe(
      'bob',
    );
  });

  it.each([
    ['10.0.0.5', 'bob'],
    ['::ffff:10.0.0.5', 'bob'],
    ['10.0.0.6', undefined],
    [undefined, undefined],
  ])('with trusted proxies, from peer %s reads %s', (remoteAddress, expected) => {
    const provider = authGatewayIdentity({ trustedProxies: ['10.0.0.5'] });
    expect(provider.identify(request({ 'X-Auth-Request-Email': 'bob' }, remoteAddress))).toBe(expected);
  });

  it('refuses a header name that is not one', () => {
    expect(
      isVdiError(
        thrownBy(() => authGatewayIdentity({ header: 'X Bad' })),
        'INVALID_INPUT',
      ),
    ).toBe(true);
  });
});

describe('createIdentityResolver', () => {
  const resolve = createIdentityResolver({
    providers: [tailscaleIdentity({ trustHeaders: true }), authGatewayIdentity()],
    peerTokens: [peerToken],
  });

  it('takes the first provider that knows the caller', async () => {
    await expect(
      resolve(request({ 'Tailscale-User-Login': 'alice', 'X-Auth-Request-Email': 'bob' })),
    ).resolves.toEqual({
      kind: 'user',
      login: 'alice',
      provider: 'tailscale',
      groups: [],
    });
    await expect(resolve(request({ 'X-Auth-Request-Email': 'bob' }))).resolves.toMatchObject({
      login: 'bob',
    });
  });

  it('makes a peer token a service identity, before any header', async () => {
    const headers = { Authorization: `Bearer ${peerToken}`, 'Tailscale-User-Login': 'alice' };
    await expect(resolve(request(headers))).resolves.toEqual({ kind: 'service' });
  });

  it('leaves another bearer token to the providers', async () => {
    await expect(resolve(request({ Authorization: 'Bearer someone-elses-token' }))).resolves.toEqual({
      kind: 'anonymous',
    });
    await expect(
      resolve(request({ Authorization: `Bearer ${peerToken}x`, 'X-Auth-Request-Email': 'bob' })),
    ).resolves.toMatchObject({ kind: 'user', login: 'bob' });
  });

  it.each(['', ' alice', 'a'.repeat(1025)])('calls a trusted header carrying %j invalid', async (login) => {
    const only: IdentityProvider = { name: 'fixed', identify: () => login };
    const resolveFixed = createIdentityResolver({ providers: [only], peerTokens: [] });
    await expect(resolveFixed(request({}))).resolves.toEqual({
      kind: 'invalid',
      provider: 'fixed',
      part: 'login',
    });
  });

  it('calls a trusted header sent twice invalid and names it, as the fetch Headers join repeats', async () => {
    const headers = new Headers();
    headers.append('Tailscale-User-Login', 'mallory@example.com');
    headers.append('Tailscale-User-Login', 'alice@example.com');
    await expect(resolve({ headers, remoteAddress: '127.0.0.1' })).resolves.toEqual({
      kind: 'invalid',
      provider: 'tailscale',
      part: 'login',
      header: 'Tailscale-User-Login',
    });
    const gateway = createIdentityResolver({
      providers: [authGatewayIdentity({ header: 'From' })],
      peerTokens: [],
    });
    await expect(gateway(request({ From: 'mallory, alice' }))).resolves.toEqual({
      kind: 'invalid',
      provider: 'auth-gateway',
      part: 'login',
      header: 'From',
    });
  });

  it("reads the caller's groups from oauth2-proxy's groups header, as the login's provider vouches for them", async () => {
    await expect(
      resolve(request({ 'X-Auth-Request-Email': 'bob', 'X-Auth-Request-Groups': 'devs,ops@example.com' })),
    ).resolves.toEqual({
      kind: 'user',
      login: 'bob',
      provider: 'auth-gateway',
      groups: ['devs', 'ops@example.com'],
    });
    await expect(resolve(request({ 'X-Auth-Request-Email': 'bob' }))).resolves.toMatchObject({ groups: [] });
  });

  it('reads groups from a configured header only, and not from a request the gateway did not send', async () => {
    const gateway = createIdentityResolver({
      providers: [authGatewayIdentity({ groupsHeader: 'X-Forwarded-Groups', trustedProxies: ['10.0.0.5'] })],
      peerTokens: [],
    });
    const headers = {
      'X-Auth-Request-Email': 'bob',
      'X-Forwarded-Groups': 'devs',
      'X-Auth-Request-Groups': 'ops',
    };
    await expect(gateway(request(headers, '10.0.0.5'))).resolves.toMatchObject({ groups: ['devs'] });
    await expect(gateway(request(headers, '10.0.0.6'))).resolves.toEqual({ kind: 'anonymous' });
  });

  it('ignores a groups header the login provider does not trust', async () => {
    await expect(
      resolve(request({ 'Tailscale-User-Login': 'alice', 'X-Auth-Request-Groups': 'admins' })),
    ).resolves.toMatchObject({ login: 'alice', groups: [] });
  });

  it.each(['', 'devs,', ',devs', 'devs,,ops', 'devs, ops', 'de\tvs', 'g'.repeat(1025)])(
    'calls a trusted groups header carrying %j invalid and names it',
    async (groups) => {
      await expect(
        resolve(request({ 'X-Auth-Request-Email': 'bob', 'X-Auth-Request-Groups': groups })),
      ).resolves.toEqual({
        kind: 'invalid',
        provider: 'auth-gateway',
        part: 'groups',
        header: 'X-Auth-Request-Groups',
      });
    },
  );

  it('calls a groups header sent twice invalid, as the fetch Headers join repeats', async () => {
    const headers = new Headers({ 'X-Auth-Request-Email': 'bob' });
    headers.append('X-Auth-Request-Groups', 'devs');
    headers.append('X-Auth-Request-Groups', 'admins');
    await expect(resolve({ headers, remoteAddress: '127.0.0.1' })).resolves.toMatchObject({
      kind: 'invalid',
      part: 'groups',
    });
  });

  it('refuses a groups header name that is not one', () => {
    expect(
      isVdiError(
        thrownBy(() => authGatewayIdentity({ groupsHeader: 'X Groups' })),
        'INVALID_INPUT',
      ),
    ).toBe(true);
  });

  it('calls a request without headers anonymous', async () => {
    await expect(resolve(request({}))).resolves.toEqual({ kind: 'anonymous' });
  });
});

describe('a provider that vouches for groups itself, or refuses', () => {
  const vouching = (identification: Identification): IdentityProvider => ({
    name: 'token',
    // a groups header is no concern of a provider that returns its own groups
    groupsHeader: 'X-Auth-Request-Groups',
    identify: () => identification,
  });
  const resolveWith = (identification: Identification) =>
    createIdentityResolver({ providers: [vouching(identification), authGatewayIdentity()], peerTokens: [] })(
      request({ 'X-Auth-Request-Email': 'bob', 'X-Auth-Request-Groups': 'vdi-admins' }),
    );

  it('takes its login and groups, and not the groups header', async () => {
    await expect(resolveWith({ login: 'alice', groups: ['devs', 'ml research'] })).resolves.toEqual({
      kind: 'user',
      login: 'alice',
      provider: 'token',
      groups: ['devs', 'ml research'],
    });
  });

  it.each([[['']], [['devs', ' ops']], [['de\u0000vs']], [['g'.repeat(1025)]]])(
    'calls its groups %j invalid, naming no header',
    async (groups) => {
      await expect(resolveWith({ login: 'alice', groups })).resolves.toEqual({
        kind: 'invalid',
        provider: 'token',
        part: 'groups',
      });
    },
  );

  it('calls its unusable login invalid', async () => {
    await expect(resolveWith({ login: ' alice', groups: [] })).resolves.toMatchObject({
      kind: 'invalid',
      part: 'login',
    });
  });

  it('refuses with its own message and asks no later provider', async () => {
    await expect(resolveWith({ refused: 'The bearer token expired.' })).resolves.toEqual({
      kind: 'refused',
      provider: 'token',
      message: 'The bearer token expired.',
    });
  });
});
