import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOidcSignIn } from '../../../src/broker/oidc-sign-in.js';
import { type BrokerServer, serveBroker } from '../../../src/broker/serve.js';
import { sealSession, sessionKeyFrom } from '../../../src/broker/session-cookie.js';
import { createSessionEnds, sessionEndsLeaseName } from '../../../src/session-ends/session-ends.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi, type Vdi } from '../../../src/vdi.js';
import { caught, createTestNamespace, useSharedCluster } from '../../support/cluster.js';
import { type LocalIssuer, startLocalIssuer } from '../../support/oidc-issuer.js';

const cluster = useSharedCluster();
const sessionSecret = 'a-session-secret-of-the-sign-out-tests-0123456789';
const minute = 60_000;

let issuer: LocalIssuer;
let namespace: string;
const replicas: Array<{ server: BrokerServer; vdi: Vdi }> = [];

/** A broker replica as a pod of the Deployment runs one: its own process state, the shared session key. */
async function startReplica(): Promise<{ server: BrokerServer; vdi: Vdi }> {
  const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace });
  const signIn = await createOidcSignIn({
    issuer: issuer.url,
    clientId: issuer.clientId,
    clientSecret: issuer.clientSecret,
    redirectUrl: 'http://127.0.0.1:9/auth/callback',
    sessionSecret,
    sessionEnds: createSessionEnds(vdi.context, namespace),
  });
  const server = await serveBroker({
    vdi,
    identity: [signIn.identity],
    signIn,
    namespaces: [namespace],
    listen: '127.0.0.1:0',
    handleSignals: false,
    log: () => {},
  });
  await vdi.waitForCacheSync();
  return { server, vdi };
}

beforeAll(async () => {
  namespace = await createTestNamespace(cluster(), 'sign-out');
  issuer = await startLocalIssuer({ redirectUris: ['http://127.0.0.1:9/auth/callback'], accounts: [] });
  replicas.push(await startReplica(), await startReplica());
});
afterAll(async () => {
  await Promise.all(replicas.map(({ server }) => server.close()));
  await issuer?.close();
});

const replica = (index: number) => {
  const found = replicas[index];
  if (!found) throw new Error(`no replica ${index}`);
  return found;
};

/** A session cookie as the callback of a sign-in at `signedInAt` sets it. */
async function cookieOf(login: string, signedInAt: Date): Promise<string> {
  const { sealed } = await sealSession(
    sessionKeyFrom(sessionSecret),
    { login, groups: [], signedInAt },
    signedInAt,
  );
  return `corral-vdi-session=${sealed}`;
}

async function statusOn(index: number, cookie: string): Promise<number> {
  const answer = await fetch(`${replica(index).server.url}/api/vdi/desktops`, { headers: { cookie } });
  await answer.body?.cancel();
  return answer.status;
}

describe('signing out with the session cookie', () => {
  it('refuses a copy of the cookie taken before Sign out, on the other replica too, within seconds; a new sign-in works', async () => {
    const login = 'alice@example.com';
    const copied = await cookieOf(login, new Date(Date.now() - minute));
    expect([await statusOn(0, copied), await statusOn(1, copied)]).toEqual([200, 200]);

    const signOut = await fetch(`${replica(0).server.url}/auth/logout`, {
      method: 'POST',
      headers: { cookie: copied },
    });
    await signOut.body?.cancel();
    expect(signOut.status).toBe(200);
    const signedOutAt = performance.now();
    expect(await statusOn(0, copied)).toBe(401);
    await waitFor(async () => (await statusOn(1, copied)) === 401, {
      describe: 'the other replica to refuse the copied cookie',
      timeoutMs: 5_000,
    });
    process.stdout.write(
      `sign-out reached the other replica in ${Math.round(performance.now() - signedOutAt)} ms\n`,
    );

    const again = await cookieOf(login, new Date());
    expect([await statusOn(0, again), await statusOn(1, again)]).toEqual([200, 200]);
    // one record per login, read by name
    const record = await replica(0).vdi.context.cluster.getLease(namespace, sessionEndsLeaseName(login));
    expect(record?.metadata.annotations?.['corral.dev/vdi-login']).toBe(login);
  });

  it("ends all of a user's sessions when an admin ends them, and no other user's", async () => {
    const bob = 'bob@example.com';
    const carol = 'carol@example.com';
    const laptop = await cookieOf(bob, new Date(Date.now() - 30 * minute));
    const phone = await cookieOf(bob, new Date(Date.now() - minute));
    const others = await cookieOf(carol, new Date(Date.now() - minute));
    await createSessionEnds(replica(0).vdi.context, namespace).end(bob, new Date());
    await waitFor(
      async () => (await Promise.all([statusOn(0, laptop), statusOn(1, phone)])).every((s) => s === 401),
      { describe: "both replicas to refuse bob's sessions", timeoutMs: 5_000 },
    );
    expect([await statusOn(0, others), await statusOn(1, others)]).toEqual([200, 200]);
  });

  it('refuses to end the sessions of an empty login with INVALID_INPUT, writing nothing', async () => {
    const ends = createSessionEnds(replica(0).vdi.context, namespace);
    const before = (await replica(0).vdi.context.cluster.listLeases(namespace)).length;
    expect((await caught(ends.end('', new Date()))).code).toBe('INVALID_INPUT');
    expect((await replica(0).vdi.context.cluster.listLeases(namespace)).length).toBe(before);
  });
});
