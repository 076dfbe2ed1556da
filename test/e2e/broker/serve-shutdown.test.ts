import type { ChildProcess } from 'node:child_process';
import { Agent, request } from 'node:http';
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createPoolMembers, createTestNamespace } from '../../support/cluster.js';
import { startTrustedHeaderBroker, useCliCluster } from '../cli/cli-support.js';

const cluster = useCliCluster();
const running: ChildProcess[] = [];
const agents: Agent[] = [];
afterEach(() => {
  for (const agent of agents.splice(0)) agent.destroy();
  for (const child of running.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

describe('corral-vdi broker serve on SIGTERM', () => {
  it('exits right after answering the request in flight, though its client keeps the connection alive', async () => {
    const namespace = await createTestNamespace(cluster(), 'serve-shutdown');
    await createPoolMembers(cluster(), namespace, 'devpool', 1);
    const { child, url: listening } = await startTrustedHeaderBroker(cluster().kubeconfigPath, namespace);
    running.push(child);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const url = new URL(listening);
    await waitFor(async () => (await fetch(new URL('/readyz', url))).status, {
      describe: 'the broker to report ready',
      until: (status) => status === 200,
    });

    // an idle kept-alive connection: the broker closes it as its shutdown begins, which tells the test it began
    const idle = connect(Number(url.port), url.hostname);
    const idleClosed = new Promise<void>((resolve) => idle.once('close', () => resolve()));
    idle.on('error', () => {});
    const answered = new Promise<void>((resolve) => idle.once('data', () => resolve()));
    idle.write(`GET /healthz HTTP/1.1\r\nhost: ${url.host}\r\n\r\n`);
    await answered;

    // a claim whose body comes in two parts, over a kept-alive agent as the oauth2-proxy sidecar keeps its own
    const agent = new Agent({ keepAlive: true });
    agents.push(agent);
    const claim = request(new URL(`/api/vdi/pools/vm/${namespace}/devpool/claim`, url), {
      agent,
      method: 'POST',
      headers: { 'x-forwarded-user': 'alice', 'content-type': 'application/json', 'content-length': '2' },
    });
    const reply = new Promise<{ status: number; headers: Record<string, unknown>; body: string }>(
      (resolve, reject) => {
        claim.once('response', (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.once('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              body: Buffer.concat(chunks).toString('utf8'),
            }),
          );
        });
        claim.once('error', reject);
      },
    );
    claim.write('{');
    await waitFor(() => claim.socket !== null && claim.socket.bytesWritten > 0, {
      describe: 'the claim to be on its way to the broker',
    });

    child.kill('SIGTERM');
    await idleClosed;
    expect(child.exitCode).toBeNull();
    claim.end('}');
    const { status, headers, body } = await reply;
    expect(status, body).toBe(200);
    // the client is told not to send another request on this connection
    expect(headers.connection).toBe('close');
    expect(JSON.parse(body)).toMatchObject({ owner: 'alice', poolId: `vm/${namespace}/devpool` });

    // the agent keeps its socket; the broker must not wait for it (its shutdown limit is 20 s)
    await waitFor(() => child.exitCode !== null, {
      describe: 'the broker to exit after its last answer',
      timeoutMs: 5_000,
    });
    expect(await exited).toBe(0);
  });
});
