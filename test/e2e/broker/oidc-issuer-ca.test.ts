import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOidcSignIn, type OidcSignInOptions } from '../../../src/broker/oidc-sign-in.js';
import {
  createCertificateAuthority,
  type IssuedCertificate,
  issueCertificate,
} from '../../../src/testing/certificates.js';
import { type LocalIssuer, startLocalIssuer } from '../../support/oidc-issuer.js';

const alice = 'alice@example.com';
let issuer: LocalIssuer;
let companyCa: IssuedCertificate;
let otherCa: IssuedCertificate;

beforeAll(async () => {
  const folder = mkdtempSync(join(tmpdir(), 'corral-oidc-ca-'));
  companyCa = createCertificateAuthority(folder, 'company-ca');
  otherCa = createCertificateAuthority(folder, 'other-ca');
  const serving = issueCertificate(folder, 'issuer', companyCa, {
    kind: 'server',
    dnsNames: ['localhost'],
    ipAddresses: ['127.0.0.1'],
  });
  issuer = await startLocalIssuer({ redirectUris: [], accounts: [], tls: serving });
});
afterAll(async () => {
  await issuer?.close();
});

const optionsWith = (extra: Partial<OidcSignInOptions>): OidcSignInOptions => ({
  issuer: issuer.url,
  clientId: issuer.clientId,
  clientSecret: issuer.clientSecret,
  redirectUrl: 'https://desktops.example.com/auth/callback',
  ...extra,
});

describe('an OpenID issuer whose certificate a company CA signed', () => {
  it("is read with the CA given as issuerCa, and its tokens are verified against keys fetched over that CA's TLS", async () => {
    const signIn = await createOidcSignIn(optionsWith({ issuerCa: companyCa.certPem }));
    expect(signIn.issuer).toBe(issuer.url);
    const token = await issuer.mintToken({ email: alice, groups: ['devs'] });
    const caller = await signIn.identity.identify({
      headers: new Headers({ authorization: `Bearer ${token}` }),
      remoteAddress: '127.0.0.1',
    });
    expect(caller).toEqual({ login: alice, groups: ['devs'] });
    expect(issuer.keyFetches()).toBeGreaterThan(0);
  });

  it.each([
    ['without a CA', () => ({})],
    ['with a CA that did not sign it', () => ({ issuerCa: otherCa.certPem })],
  ])('is refused %s, with INTERNAL naming the certificate and the option for its CA', async (_, extra) => {
    const refusal = createOidcSignIn(optionsWith(extra()));
    await expect(refusal).rejects.toMatchObject({ name: 'VdiError', code: 'INTERNAL' });
    await expect(refusal).rejects.toThrow(/certificate.*issuerCa/s);
  });

  it('refuses a CA bundle that holds no PEM certificate with INVALID_INPUT, before asking the issuer', async () => {
    const before = issuer.requests();
    const refusal = createOidcSignIn(optionsWith({ issuerCa: 'not a certificate' }));
    await expect(refusal).rejects.toMatchObject({ name: 'VdiError', code: 'INVALID_INPUT' });
    await expect(refusal).rejects.toThrow(/issuerCa/);
    expect(issuer.requests()).toBe(before);
  });
});
