import { AuthorizationV1Api } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryAuditSink } from '../../../src/audit.js';
import { createBroker } from '../../../src/broker/broker.js';
import { createOidcSignIn } from '../../../src/broker/oidc-sign-in.js';
import { sealSession, sessionKeyFrom } from '../../../src/broker/session-cookie.js';
import { createVdi } from '../../../src/vdi.js';
import { createPoolMembers, createTestNamespace, useSharedCluster } from '../../support/cluster.js';
import { type LocalIssuer, startLocalIssuer } from '../../support/oidc-issuer.js';
import { bindDocumentedRole } from './documented-role.js';

const cluster = useSharedCluster();
const sessionSecret = 'the-session-secret-of-the-least-privilege-test';
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe("the broker's own OIDC sign-in under exactly the documented Role", () => {
  it('claims for a bearer token and for a session cookie, and reads no Secret: the key and client secret are files', async () => {
    const namespace = await createTestNamespace(cluster(), 'rbac-oidc');
    await createPoolMembers(cluster(), namespace, 'devpool', 2);
    const user = `corral-oidc-${namespace}`;
    const { kubeConfig, unbind } = await bindDocumentedRole(cluster(), { namespace, user });
    cleanups.push(unbind);
    const issuer: LocalIssuer = await startLocalIssuer({ redirectUris: [], accounts: [] });
    cleanups.push(() => issuer.close());
    const signIn = await createOidcSignIn({
      issuer: issuer.url,
      clientId: issuer.clientId,
      clientSecret: issuer.clientSecret,
      redirectUrl: 'http://127.0.0.1:9/auth/callback',
      sessionSecret,
    });
    const vdi = createVdi({ kubeConfig, namespace, audit: new MemoryAuditSink(), retry: { retries: 0 } });
    const broker = createBroker({ vdi, identity: [signIn.identity], namespaces: [namespace], log: () => {} });
    const claim = (headers: Record<string, string>) =>
      broker.fetch(
        new Request(`http://broker.test/api/vdi/pools/vm/${namespace}/devpool/claim`, {
          method: 'POST',
          headers,
        }),
      );

    const byToken = await claim({
      authorization: `Bearer ${await issuer.mintToken({ email: 'alice@example.com', groups: ['devs'] })}`,
    });
    expect(byToken.status).toBe(200);
    const { sealed } = await sealSession(
      sessionKeyFrom(sessionSecret),
      { login: 'bob@example.com', groups: [], signedInAt: new Date() },
      new Date(),
    );
    const bySession = await claim({ cookie: `corral-vdi-session=${sealed}` });
    expect(bySession.status).toBe(200);

    const review = await cluster()
      .kubeConfig.makeApiClient(AuthorizationV1Api)
      .createSubjectAccessReview({
        body: { spec: { user, resourceAttributes: { namespace, resource: 'secrets', verb: 'get' } } },
      });
    expect(review.status?.allowed).toBe(false);
  });
});
