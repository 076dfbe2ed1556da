import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import {
  createPoolMembers,
  createTestNamespace,
  useSharedCluster,
  waitForRunningVmi,
} from '../../support/cluster.js';
import { type RunningBroker, useBrokers } from './broker-support.js';

const cluster = useSharedCluster();
const alice = 'alice@example.com';
const bob = 'bob@example.com';
const carol = 'carol@example.com';
const minute = 60_000;

const brokers = useBrokers();
const sockets = brokers.sockets;

/** The samples of a Prometheus text exposition, as `name{label="value",…}` → value, labels in the order written. */
function parseExposition(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    samples.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return samples;
}

async function scrape(api: RunningBroker): Promise<Map<string, number>> {
  const response = await fetch(`${api.url}/metrics`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
  return parseExposition(await response.text());
}

function openConsole(api: RunningBroker, path: string, as: string): Promise<WebSocket> {
  const socket = new WebSocket(`${api.url.replace('http', 'ws')}${path}`, {
    headers: { 'Tailscale-User-Login': as },
  });
  sockets.push(socket);
  return new Promise((resolve, reject) => {
    socket.once('open', () => resolve(socket));
    socket.once('error', reject);
  });
}

async function taskStatus(api: RunningBroker, id: string, as: string): Promise<string> {
  return (await api.call('GET', `/api/tasks/${id}`, { as })).body.status;
}

describe("the broker's metrics", () => {
  it('read the expected numbers after claims, a refusal, a release, a console, Lease conflicts and a reclaim', async () => {
    const namespace = await createTestNamespace(cluster(), 'metrics');
    await createPoolMembers(cluster(), namespace, 'devpool', 2);
    const clock = createTestClock(new Date());
    const api = await brokers.start(cluster(), namespace, clock, {
      metrics: true,
      maxSessionMs: 30 * minute,
    });
    const pool = `kind="vm",namespace="${namespace}",pool="devpool"`;

    const before = await scrape(api);
    expect(before.get(`corral_vdi_pool_desired_members{${pool}}`)).toBe(2);
    expect(before.get(`corral_vdi_pool_free_members{${pool}}`)).toBe(2);
    expect(before.get(`corral_vdi_pool_claimed_members{${pool}}`)).toBe(0);
    expect(before.get('corral_vdi_leader')).toBe(0);

    const claimPath = `/api/vdi/pools/vm/${namespace}/devpool/claim`;
    const mine = await api.call('POST', claimPath, { as: alice });
    const bobs = await api.call('POST', claimPath, { as: bob });
    const refused = await api.call('POST', claimPath, { as: carol });
    expect([mine.status, bobs.status, refused.status, refused.body.error.code]).toEqual([
      200,
      200,
      409,
      'NO_FREE_MEMBER',
    ]);
    const member: string = mine.body.member;

    // a lost Lease create and a stale Lease replace, as two claimants racing would see them
    const leases = api.vdi.context.cluster;
    const held = await leases.getLease(namespace, `corral-vdi-${member}`);
    if (!held) throw new Error(`the claim of ${member} has no Lease`);
    await expect(
      leases.createLease(namespace, { metadata: { name: held.metadata.name }, spec: {} }),
    ).rejects.toMatchObject({ code: 'CONFLICT' });
    await expect(
      leases.replaceLease(namespace, { ...held, metadata: { ...held.metadata, resourceVersion: '1' } }),
    ).rejects.toMatchObject({ code: 'CONFLICT' });

    await waitForRunningVmi(api.vdi.context.cluster, namespace, member);
    const socket = await openConsole(
      api,
      `/api/vdi/desktops/vm/${namespace}/${member}/console/serial`,
      alice,
    );
    const claimed = await waitFor(() => scrape(api), {
      describe: 'both members running in the pool gauges',
      until: (samples) => samples.get(`corral_vdi_pool_running_members{${pool}}`) === 2,
    });
    expect(claimed.get(`corral_vdi_pool_claimed_members{${pool}}`)).toBe(2);
    expect(claimed.get(`corral_vdi_pool_free_members{${pool}}`)).toBe(0);
    expect(claimed.get(`corral_vdi_pool_failed_members{${pool}}`)).toBe(0);
    expect(claimed.get('corral_vdi_open_consoles{protocol="serial"}')).toBe(1);

    const release = await api.call('POST', `/api/vdi/desktops/vm/${namespace}/${bobs.body.member}/release`, {
      as: bob,
    });
    expect(release.status).toBe(202);
    await waitFor(() => taskStatus(api, release.body.task, bob), {
      describe: "bob's release task to finish",
      until: (status) => status !== 'running',
    });

    const closed = new Promise((resolve) => socket.once('close', resolve));
    clock.advance(30 * minute + 1);
    expect((await api.broker.sessions.runPass()).reclaimed).toBe(1);
    await closed;
    await waitFor(() => api.broker.consoles().length === 0, { describe: 'the console to be gone' });
    api.broker.metrics.setLeader(true);

    const after = await scrape(api);
    expect(after.get('corral_vdi_claims_total{outcome="ok"}')).toBe(2);
    expect(after.get('corral_vdi_claims_total{outcome="NO_FREE_MEMBER"}')).toBe(1);
    expect(after.get('corral_vdi_claim_duration_seconds_count{outcome="ok"}')).toBe(2);
    expect(after.get('corral_vdi_claim_duration_seconds_bucket{le="+Inf",outcome="NO_FREE_MEMBER"}')).toBe(1);
    expect(after.get('corral_vdi_releases_total{reason="holder",result="ok"}')).toBe(1);
    expect(after.get('corral_vdi_reclaims_total{reason="max-duration",result="ok"}')).toBe(1);
    expect(after.get('corral_vdi_reclaim_pass_duration_seconds_count')).toBe(1);
    expect(after.get('corral_vdi_lease_conflicts_total{verb="create"}')).toBe(1);
    expect(after.get('corral_vdi_lease_conflicts_total{verb="update"}')).toBe(1);
    expect(after.get('corral_vdi_apiserver_requests_total{verb="create",code="409"}')).toBe(1);
    expect(after.get('corral_vdi_apiserver_requests_total{verb="update",code="409"}')).toBe(1);
    expect(after.get('corral_vdi_apiserver_requests_total{verb="list",code="2xx"}')).toBeGreaterThan(0);
    expect(after.get('corral_vdi_open_consoles{protocol="serial"}')).toBeUndefined();
    expect(after.get(`corral_vdi_pool_claimed_members{${pool}}`)).toBe(0);
    expect(after.get(`corral_vdi_pool_free_members{${pool}}`)).toBe(2);
    expect(after.get('corral_vdi_leader')).toBe(1);
  });

  it('cost one list per kind of object and namespace per scrape, and no read of single objects', async () => {
    const namespace = await createTestNamespace(cluster(), 'metrics');
    await createPoolMembers(cluster(), namespace, 'devpool', 3);
    const api = await brokers.start(cluster(), namespace, createTestClock(new Date()), { metrics: true });
    const lists = (samples: Map<string, number>) =>
      samples.get('corral_vdi_apiserver_requests_total{verb="list",code="2xx"}') ?? 0;
    const first = lists(await scrape(api));
    const second = lists(await scrape(api));
    process.stderr.write(`metrics: one scrape made ${second - first} list requests\n`);
    // Leases; VMs and VMIs (VM members); pool specs (container members; their Pods only where a container pool is);
    // the pools' settings (roll-outs under way, read again only where one is)
    expect(second - first).toBe(5);
    expect(api.vdi.context.cluster.requestCounts.get('get') ?? 0).toBe(0);
  });

  it('are not served unless turned on, and every answer carries its request ID', async () => {
    const namespace = await createTestNamespace(cluster(), 'metrics');
    const api = await brokers.start(cluster(), namespace, createTestClock(new Date()));
    expect((await fetch(`${api.url}/metrics`)).status).toBe(404);
    expect((await api.call('GET', '/healthz')).body).toEqual({ status: 'alive' });

    const kept = await api.call('GET', '/api/vdi/pools', {
      as: alice,
      headers: { 'x-request-id': 'req-42.a:b' },
    });
    expect(kept.headers['x-request-id']).toBe('req-42.a:b');
    const forged = await api.call('GET', '/api/vdi/pools', {
      as: alice,
      headers: { 'x-request-id': 'two words' },
    });
    expect(forged.headers['x-request-id']).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-/);
    expect(api.logs).toContainEqual(
      expect.stringMatching(/GET \/api\/vdi\/pools 200 \d+ms \(request req-42\.a:b\)$/),
    );
  });
});
