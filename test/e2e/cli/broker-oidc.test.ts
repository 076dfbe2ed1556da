import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sealSession, sessionKeyFrom } from '../../../src/broker/session-cookie.js';
import { createCertificateAuthority, issueCertificate } from '../../../src/testing/certificates.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { type LocalIssuer, startLocalIssuer } from '../../support/oidc-issuer.js';
import { cliEnv, collectOutput, createNamespace, runCli, startCli, useCliCluster } from './cli-support.js';

const cluster = useCliCluster();
const running: ChildProcess[] = [];
const issuers: LocalIssuer[] = [];

afterEach(async () => {
  for (const child of running.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  await Promise.all(issuers.splice(0).map((issuer) => issuer.close()));
});

const sessionSecret = 'the-session-key-file-of-the-cli-test-0123456789';

function issuerFolder(issuer: LocalIssuer): string {
  const folder = mkdtempSync(join(tmpdir(), 'corral-oidc-'));
  writeFileSync(join(folder, 'client-secret'), `${issuer.clientSecret}\n`);
  writeFileSync(join(folder, 'session-key'), `${sessionSecret}\n`);
  return folder;
}

function serveArgs(namespace: string, issuer: LocalIssuer, folder: string, extra: string[]): string[] {
  return [
    'broker',
    'serve',
    '--listen',
    '127.0.0.1:0',
    '--oidc-issuer',
    issuer.url,
    '--oidc-client-id',
    issuer.clientId,
    '--oidc-client-secret-file',
    join(folder, 'client-secret'),
    '--oidc-redirect-url',
    'http://127.0.0.1:9/auth/callback',
    ...extra,
    '-n',
    namespace,
    '--kubeconfig',
    cluster().kubeconfigPath,
  ];
}

const brokerEnv = (extra: Record<string, string> = {}) =>
  cliEnv({ CORRAL_VDI_BROKER: '1', CORRAL_ADMIN_GROUPS: 'vdi-admins', ...extra });

async function serveWithIssuer(
  namespace: string,
  extra: string[] = [],
  given?: { issuer: LocalIssuer; env: Record<string, string> },
) {
  const issuer = given?.issuer ?? (await startLocalIssuer({ redirectUris: [], accounts: [] }));
  if (given === undefined) issuers.push(issuer);
  const folder = issuerFolder(issuer);
  const child = startCli(serveArgs(namespace, issuer, folder, extra), brokerEnv(given?.env));
  running.push(child);
  const output = collectOutput(child);
  const listening = /broker listening on (http:\/\/\S+) \(.*sign-in at (\S+)\)/;
  const [, url = '', said = ''] = listening.exec(await output.waitFor(listening)) ?? [];
  return { issuer, url, said, output, keyFile: join(folder, 'session-key') };
}

async function statusOf(url: string, headers: Record<string, string>): Promise<number> {
  const answer = await fetch(`${url}/api/vdi/desktops?all=1`, { headers, redirect: 'manual' });
  await answer.body?.cancel();
  return answer.status;
}

describe('corral-vdi broker serve --oidc-issuer', () => {
  it("takes bearer tokens of the issuer with their groups claim, and session cookies sealed with --oidc-session-key-file's key", async () => {
    const namespace = await createNamespace(cluster(), 'cli-oidc');
    const probe = await serveWithIssuer(namespace);
    const { issuer, url, said } = probe;
    expect(said).toBe(issuer.url);
    const bearer = async (groups: string[], expiresIn = 300) => ({
      authorization: `Bearer ${await issuer.mintToken({ email: 'bob@example.com', groups, expiresIn })}`,
    });
    expect(await statusOf(url, await bearer(['devs', 'vdi-admins']))).toBe(200);
    expect(await statusOf(url, await bearer(['devs']))).toBe(403);
    expect(await statusOf(url, await bearer(['vdi-admins'], -120))).toBe(401);
    // without the key file, the process sealed with a key of its own and warned
    await probe.output.waitFor(/no --oidc-session-key-file/);
    const { sealed } = await sealSession(
      sessionKeyFrom(sessionSecret),
      { login: 'bob@example.com', groups: ['vdi-admins'], signedInAt: new Date() },
      new Date(),
    );
    expect(await statusOf(url, { cookie: `corral-vdi-session=${sealed}` })).toBe(401);

    const keyed = await serveWithIssuer(namespace, ['--oidc-session-key-file', probe.keyFile]);
    expect(await statusOf(keyed.url, { cookie: `corral-vdi-session=${sealed}` })).toBe(200);
    const page = await fetch(`${keyed.url}/`, { redirect: 'manual' });
    expect(page.status).toBe(302);
    expect(page.headers.get('location')).toBe('/auth/login?return=%2F');
  });

  it('reads an https issuer that a company CA signed with --oidc-ca-file or CORRAL_OIDC_CA_FILE, and without either exits 1 naming the flag', async () => {
    const namespace = await createNamespace(cluster(), 'cli-oidc-ca');
    const folder = mkdtempSync(join(tmpdir(), 'corral-oidc-ca-'));
    const ca = createCertificateAuthority(folder, 'company-ca');
    const serving = issueCertificate(folder, 'issuer', ca, {
      kind: 'server',
      dnsNames: ['localhost'],
      ipAddresses: ['127.0.0.1'],
    });
    const issuer = await startLocalIssuer({ redirectUris: [], accounts: [], tls: serving });
    issuers.push(issuer);
    const refused = await runCli(serveArgs(namespace, issuer, issuerFolder(issuer), []), brokerEnv());
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/certificate.*--oidc-ca-file/s);

    const token = await issuer.mintToken({ email: 'bob@example.com', groups: ['vdi-admins'] });
    for (const [extra, env] of [
      [['--oidc-ca-file', ca.certPath], {}],
      [[], { CORRAL_OIDC_CA_FILE: ca.certPath }],
    ] as const) {
      const served = await serveWithIssuer(namespace, [...extra], { issuer, env });
      expect(served.said).toBe(issuer.url);
      expect(await statusOf(served.url, { authorization: `Bearer ${token}` })).toBe(200);
    }
  });

  it("ends a user's sessions with broker end-sessions: the serving broker refuses their cookies, and no one else's", async () => {
    const namespace = await createNamespace(cluster(), 'cli-oidc-end');
    const probe = await serveWithIssuer(namespace);
    const served = await serveWithIssuer(namespace, ['--oidc-session-key-file', probe.keyFile]);
    const cookieOf = async (login: string) => {
      const now = new Date(Date.now() - 60_000);
      const { sealed } = await sealSession(
        sessionKeyFrom(sessionSecret),
        { login, groups: ['vdi-admins'], signedInAt: now },
        now,
      );
      return { cookie: `corral-vdi-session=${sealed}` };
    };
    const bob = await cookieOf('bob@example.com');
    const carol = await cookieOf('carol@example.com');
    const ended = await runCli(
      [
        'broker',
        'end-sessions',
        'bob@example.com',
        '-n',
        namespace,
        '--kubeconfig',
        cluster().kubeconfigPath,
      ],
      brokerEnv(),
    );
    expect(ended.code).toBe(0);
    expect(ended.stdout).toMatch(/^ended the sessions of bob@example.com signed in before /);
    await waitFor(async () => (await statusOf(served.url, bob)) === 401, {
      describe: "the broker to refuse bob's session",
      timeoutMs: 5_000,
    });
    expect(await statusOf(served.url, carol)).toBe(200);
  });
});
