// The scale segment (`npm run bench -- --scale`): one pool of 10,000 members and, in 20 namespaces, 20,000 desktops
// (200 pools, half the desktops claimed), made through the apiserver on a local control plane of its own (KubeVirt's
// CRDs, no simulator), and each figure beside a floor measured in the same run. Prints one table and writes bench/results/scale.json (not
// committed). Sizes: BENCH_SCALE_MEMBERS (10000), BENCH_SCALE_SMALL_MEMBERS (200), BENCH_SCALE_DESKTOPS (20000),
// BENCH_SCALE_NAMESPACES (20), BENCH_SCALE_POOLS (200), BENCH_SCALE_CLAIMS (200), BENCH_CONCURRENCY (50),
// BENCH_CLAIMANTS (500), BENCH_CONTENDED_MEMBERS (100).
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBroker } from '../src/broker/broker.js';
import { tailscaleIdentity, tailscaleLoginHeader } from '../src/broker/identity.js';
import { isVdiError } from '../src/errors.js';
import { poolLabel } from '../src/keys.js';
import { KubeCluster } from '../src/kube/cluster.js';
import { readPoolStatus } from '../src/pool-status/read-pool-status.js';
import { listPools } from '../src/pools/list-pools.js';
import { createSessionEngine } from '../src/sessions/session-engine.js';
import { installKubevirtCrds } from '../src/testing/kubevirt/crds.js';
import { type LocalCluster, startLocalCluster } from '../src/testing/local-cluster.js';
import { createTestClock } from '../src/testing/test-clock.js';
import { waitFor } from '../src/testing/wait-for.js';
import { createVdi, type Vdi } from '../src/vdi.js';
import { launchChromium, startSignInProxy } from '../test/e2e/browser/browser-support.js';
import { type ProxiedRequest, startCountingProxy } from '../test/support/counting-proxy.js';
import { cpuMsOf, findApiserverPid, inParallel, sizeFromEnv } from './support/measure.js';
import { type BareList, listBare, seedClaims, seedDesktopVms } from './support/scale-seed.js';
import { createNamespace } from './support/seed.js';

const members = sizeFromEnv('BENCH_SCALE_MEMBERS', 10_000);
const smallMembers = sizeFromEnv('BENCH_SCALE_SMALL_MEMBERS', 200);
const desktops = sizeFromEnv('BENCH_SCALE_DESKTOPS', 20_000);
const desktopNamespaceCount = sizeFromEnv('BENCH_SCALE_NAMESPACES', 20);
const pageProbePools = sizeFromEnv('BENCH_SCALE_POOLS', 200);
const claims = sizeFromEnv('BENCH_SCALE_CLAIMS', 200);
const concurrency = sizeFromEnv('BENCH_CONCURRENCY', 50);
const claimants = sizeFromEnv('BENCH_CLAIMANTS', 500);
const contendedMembers = sizeFromEnv('BENCH_CONTENDED_MEMBERS', 100);

const bigPool = 'bigpool';
const smallPool = 'smallpool';
// the floor of the claims with the defaults: the cached claims take every member of the small pool
const defaultSmallPool = 'smallpool-defaults';
const contendedPool = 'contended';
const poolsPerNamespace = Math.max(1, Math.round(pageProbePools / desktopNamespaceCount));
const bigNamespace = 'scale-big';
const smallNamespace = 'scale-small';
const desktopNamespaces = Array.from(
  { length: desktopNamespaceCount },
  (_, index) => `scale-desks-${index + 1}`,
);
const idleNamespaces = Array.from({ length: desktopNamespaceCount }, (_, index) => `scale-idle-${index + 1}`);
const vmTarget = (namespace: string) => ({
  group: 'kubevirt.io',
  version: 'v1',
  plural: 'virtualmachines',
  namespace,
});
const vmiTarget = (namespace: string) => ({ ...vmTarget(namespace), plural: 'virtualmachineinstances' });
const leaseTarget = (namespace: string) => ({
  group: 'coordination.k8s.io',
  version: 'v1',
  plural: 'leases',
  namespace,
});
const cliPath = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
const defaultClaimsPath = fileURLToPath(new URL('./support/default-claims.mjs', import.meta.url));
// the built SDK the claims with the defaults run; another build (an earlier commit's) compares with it
const sdkEntry = process.env.BENCH_SDK_ENTRY ?? fileURLToPath(new URL('../dist/index.js', import.meta.url));
const heapProbePath = fileURLToPath(new URL('./support/heap-probe.cjs', import.meta.url));

setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

/** One line of the table: a figure beside its floor from the same run. */
interface Row {
  name: string;
  figure: string;
  floor: string;
  ratio: number | null;
  goal: string;
  met: boolean | null;
  note: string;
}

const rows: Row[] = [];
// the desktops listed bare, page by page: the floor of the caches' sync and of the broker's /readyz
let bare: BareList = { items: 0, pages: 0, bytes: 0, ms: 0 };
// what the seeding made of the desktops' claims: the reclaim pass renews the due ones
const seededClaims = { claimed: 0, due: 0 };
let cluster: LocalCluster | undefined;
let apiserverPid: number | undefined;
const startedAt = performance.now();

function kubeConfig() {
  if (!cluster) throw new Error('the local cluster is not started');
  return cluster.kubeConfig;
}

function addRow(row: Row): void {
  rows.push(row);
  console.info(
    `${row.name}: ${row.figure} (floor ${row.floor}, ratio ${row.ratio ?? '–'}, goal ${row.goal}) ${row.note}`,
  );
}

function round(value: number, digits = 2): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}

const ms = (value: number) => `${Math.round(value).toLocaleString('en')} ms`;
const kib = (bytes: number) => `${round(bytes / 1024, 1).toLocaleString('en')} KiB`;

function percentile(values: readonly number[], fraction: number): number {
  const sorted = [...values].sort((left, right) => left - right);
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)] ?? 0;
}

function memberNames(pool: string, size: number): string[] {
  return Array.from({ length: size }, (_, index) => `${pool}-${index + 1}`);
}

/** The SDK on `namespaces` with its watch caches synced, as `broker serve` runs it. */
async function cachedVdi(namespaces: string[], clock = createTestClock(new Date())): Promise<Vdi> {
  const vdi = createVdi({ kubeConfig: kubeConfig(), namespace: namespaces[0] ?? '', clock });
  vdi.startCaches(namespaces);
  await vdi.waitForCacheSync();
  return vdi;
}

/** Claims `count` members of `pool` for as many users, `limit` at a time; each claim's wait in ms. */
async function timeClaims(vdi: Vdi, namespace: string, pool: string, count: number, limit: number) {
  const waited: number[] = [];
  let refused = 0;
  await inParallel(count, limit, async (index) => {
    const askedAt = performance.now();
    try {
      await vdi.claim({ pool, namespace, identity: `claimant-${index + 1}@example.com` });
      waited.push(performance.now() - askedAt);
    } catch (error) {
      if (!isVdiError(error, 'NO_FREE_MEMBER')) throw error;
      refused += 1;
    }
  });
  return { waited, refused };
}

/** All desktops of the desktop namespaces: the bare lists a cache-less client would read, one after another. */
async function listDesktopsBare(): Promise<BareList> {
  const total: BareList = { items: 0, pages: 0, bytes: 0, ms: 0 };
  for (const namespace of desktopNamespaces) {
    for (const [target, selector] of [
      [vmTarget(namespace), poolLabel],
      [vmiTarget(namespace), undefined],
      [leaseTarget(namespace), undefined],
    ] as const) {
      const list = await listBare(kubeConfig(), target, selector);
      total.items += list.items;
      total.pages += list.pages;
      total.bytes += list.bytes;
      total.ms += list.ms;
    }
  }
  return total;
}

/** Resident memory of a process in bytes, from /proc. */
function rssOf(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('VmRSS:'));
  return Number(line?.split(/\s+/)[1] ?? 0) * 1024;
}

let brokersStarted = 0;

interface ServedBroker {
  child: ChildProcess;
  url: string;
  /** From the spawn to the first `/readyz` that answered 200. */
  readyMs: number;
  /** The process's heap after a full garbage collection, in bytes. */
  heapAfterGc(): Promise<number>;
  stop(): Promise<void>;
}

/**
 * Starts the built `corral-vdi broker serve --ui` on `namespaces` (through `kubeconfigPath`, the administrator's by
 * default, with `args` added) and times it until `/readyz` answers 200.
 */
async function serveBrokerProcess(
  namespaces: string[],
  options: { kubeconfigPath?: string; args?: string[] } = {},
): Promise<ServedBroker> {
  if (!cluster) throw new Error('the local cluster is not started');
  brokersStarted += 1;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    CORRAL_VDI_BROKER: '1',
    CORRAL_VDI_NAMESPACES: namespaces.join(','),
    NODE_OPTIONS: `--expose-gc --require ${heapProbePath}`,
    HEAP_PROBE_FILE: `${tmpdir()}/scale-heap-${process.pid}-${brokersStarted}.json`,
  };
  for (const name of ['KUBECONFIG', 'CORRAL_NAMESPACE', 'CORRAL_VDI_BROKER_URL', 'CORRAL_VDI_LEADER_ELECT'])
    delete env[name];
  const spawnedAt = performance.now();
  const child = spawn(
    process.execPath,
    [
      cliPath,
      'broker',
      'serve',
      '--listen',
      '127.0.0.1:0',
      '--trust-header',
      tailscaleLoginHeader,
      '--ui',
      '--kubeconfig',
      options.kubeconfigPath ?? cluster.kubeconfigPath,
      ...(options.args ?? []),
    ],
    { env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let printed = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    printed += chunk.toString('utf8');
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    printed += chunk.toString('utf8');
  });
  const url = await waitFor(
    () => {
      if (child.exitCode !== null) throw new Error(`broker serve exited with ${child.exitCode}:\n${printed}`);
      return /broker listening on (http:\/\/\S+)/.exec(printed)?.[1];
    },
    { describe: 'broker serve to print its address', timeoutMs: 300_000 },
  );
  await waitFor(
    async () =>
      (await fetch(`${url}/readyz`).then(
        (answer) => answer.status,
        () => 0,
      )) === 200 || undefined,
    { describe: 'broker serve to answer /readyz with 200', timeoutMs: 600_000 },
  );
  const readyMs = performance.now() - spawnedAt;
  return {
    child,
    url,
    readyMs,
    async heapAfterGc() {
      const file = env.HEAP_PROBE_FILE ?? '';
      rmSync(file, { force: true });
      child.kill('SIGUSR2');
      const written = await waitFor(() => existsSync(file) && readFileSync(file, 'utf8'), {
        describe: 'broker serve to write its heap after a garbage collection',
      });
      return (JSON.parse(written) as { heapUsed: number }).heapUsed;
    },
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Runs the built CLI with `args` against the local cluster: its wall time and the bytes it printed. */
function runCli(args: string[]): Promise<{ ms: number; bytes: number }> {
  if (!cluster) throw new Error('the local cluster is not started');
  const kubeconfig = cluster.kubeconfigPath;
  return timeProcess(process.execPath, [cliPath, ...args, '--kubeconfig', kubeconfig]);
}

function timeProcess(file: string, args: string[]): Promise<{ ms: number; bytes: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    execFile(file, args, { maxBuffer: 1 << 30, env: { ...process.env, KUBECONFIG: '' } }, (error, stdout) => {
      if (error) reject(error);
      else resolve({ ms: performance.now() - started, bytes: Buffer.byteLength(stdout) });
    });
  });
}

beforeAll(async () => {
  // KubeVirt's CRDs without the simulator: it reads a VM's namespace afresh on each of its events, which at 30,000
  // VMs took longer than the whole segment may; no VM of this segment boots, so nothing else of it is missed
  cluster = await startLocalCluster({ kubevirt: 'none', nodeAgent: false });
  await installKubevirtCrds(cluster.kubeConfig);
  apiserverPid = findApiserverPid(cluster.connection.dataDir);
  const seeder = new KubeCluster(kubeConfig());
  const seedStarted = performance.now();
  const progress = (what: string) => console.info(`${ms(performance.now() - seedStarted)}: ${what}`);
  for (const namespace of [bigNamespace, smallNamespace, ...desktopNamespaces, ...idleNamespaces])
    await createNamespace(kubeConfig(), namespace);
  const poolOf = (namespace: string, pool: string, size: number) =>
    memberNames(pool, size).map((name) => ({ namespace, pool, name }));
  await seedDesktopVms(seeder, [
    ...poolOf(bigNamespace, bigPool, members),
    ...poolOf(smallNamespace, smallPool, smallMembers),
    ...poolOf(smallNamespace, defaultSmallPool, smallMembers),
  ]);
  progress(`the ${members} members of ${bigPool} and the ${smallMembers} of ${smallPool}`);
  const perPool = Math.round(desktops / desktopNamespaceCount / poolsPerNamespace);
  const desks = desktopNamespaces.flatMap((namespace) =>
    Array.from({ length: poolsPerNamespace }, (_, pool) => poolOf(namespace, `desks${pool + 1}`, perPool)),
  );
  await seedDesktopVms(seeder, desks.flat());
  progress(`${desks.flat().length} desktops in ${desktopNamespaceCount} namespaces`);
  // half of each pool claimed; a tenth of those last renewed 25 minutes ago, due at the next pass
  const claimed = desks.flatMap((pool) =>
    pool
      .filter((_, index) => index % 2 === 0)
      .map((desk, index) => ({
        ...desk,
        holder: `${desk.name}-user@${desk.namespace}.example.com`,
        due: index % 10 === 0,
      })),
  );
  seededClaims.claimed = claimed.length;
  seededClaims.due = claimed.filter((claim) => claim.due).length;
  const now = Date.now();
  await seedClaims(
    seeder,
    claimed.map(({ due, ...claim }) => ({
      ...claim,
      renewedAt: new Date(now - (due ? 25 * 60_000 : 0)).toISOString(),
    })),
  );
  progress(`${claimed.length} claims`);
  const seeded = members + smallMembers + desktops;
  console.info(
    `seeded ${seeded.toLocaleString('en')} VMs and ${seededClaims.claimed.toLocaleString('en')} claim Leases in ${ms(performance.now() - seedStarted)}`,
  );
}, 3_600_000);

afterAll(async () => {
  await cluster?.stop();
  if (rows.length === 0) return;
  console.table(
    rows.map((row) => ({
      row: row.name,
      figure: row.figure,
      floor: row.floor,
      ratio: row.ratio ?? '',
      goal: row.goal,
      met: row.met === null ? '' : row.met ? 'yes' : 'NO',
      note: row.note,
    })),
  );
  console.info(`the scale segment took ${ms(performance.now() - startedAt)}, its control plane included`);
  const out = new URL('./results/', import.meta.url);
  mkdirSync(out, { recursive: true });
  writeFileSync(
    new URL('scale.json', out),
    `${JSON.stringify({ at: new Date().toISOString(), wallMs: performance.now() - startedAt, sizes: sizes(), rows }, null, 2)}\n`,
  );
});

function sizes() {
  return {
    members,
    smallMembers,
    desktops,
    desktopNamespaceCount,
    pageProbePools,
    claims,
    concurrency,
    claimants,
    contendedMembers,
  };
}

describe('ten thousand desktops', () => {
  it(`a reclaim pass over ${desktops} desktops, and what the caches keep per object`, async () => {
    bare = await listDesktopsBare();
    addRow({
      name: `bare paginated lists of the desktops' VMs, VMIs and Leases (${desktopNamespaceCount} namespaces)`,
      figure: ms(bare.ms),
      floor: '',
      ratio: null,
      goal: '',
      met: null,
      note: `${bare.items} objects in ${bare.pages} pages of ≤ 500, one after another, ${kib(bare.bytes)}`,
    });
    collectGarbage();
    const heapBefore = process.memoryUsage().heapUsed;
    const clock = createTestClock(new Date());
    const syncStarted = performance.now();
    const vdi = await cachedVdi(desktopNamespaces, clock);
    const syncMs = performance.now() - syncStarted;
    const initialLists = vdi.context.cluster.requestCounts.get('list') ?? 0;
    // every page of every first list made it into the caches
    const cachedVms = desktopNamespaces.flatMap(
      (namespace) => vdi.context.cluster.cachesOf(namespace)?.vms.list(poolLabel) ?? [],
    );
    expect(cachedVms.length).toBe(desktops);
    addRow({
      name: `this process's caches over ${desktops.toLocaleString('en')} desktops, start to synced`,
      figure: ms(syncMs),
      floor: `${ms(bare.ms)} bare lists`,
      ratio: round(syncMs / bare.ms),
      goal: '',
      met: null,
      note: `their first lists took ${initialLists} requests for ${3 * desktopNamespaceCount} caches`,
    });
    collectGarbage();
    const heapPerDesktop = (process.memoryUsage().heapUsed - heapBefore) / desktops;
    // the bytes of a VM and a Lease as the apiserver lists them, and as the caches keep them
    const caches = vdi.context.cluster.cachesOf(desktopNamespaces[0] ?? '');
    const listed = await vdi.context.cluster.listVms(desktopNamespaces[0], poolLabel);
    const listedLeases = await vdi.context.cluster.listLeases(desktopNamespaces[0] ?? '');
    const meanBytes = (objects: readonly unknown[]) =>
      objects.reduce<number>((sum, object) => sum + Buffer.byteLength(JSON.stringify(object)), 0) /
      Math.max(1, objects.length);
    addRow({
      name: 'bytes per cached VM, as kept ÷ as listed',
      figure: `${Math.round(meanBytes(caches?.vms.list(poolLabel) ?? []))} B`,
      floor: `${Math.round(meanBytes(listed))} B listed`,
      ratio: round(meanBytes(caches?.vms.list(poolLabel) ?? []) / meanBytes(listed)),
      goal: 'only what the SDK reads',
      met: null,
      note: `Lease: ${Math.round(meanBytes(caches?.leases.list() ?? []))} B kept, ${Math.round(meanBytes(listedLeases))} B listed; JSON bytes`,
    });
    // the floor: the same objects held as the apiserver lists them, which is what the caches kept before #31
    collectGarbage();
    const heapBeforeListed = process.memoryUsage().heapUsed;
    const held = await Promise.all(
      desktopNamespaces.map((namespace) =>
        Promise.all([
          vdi.context.cluster.listVms(namespace, poolLabel),
          vdi.context.cluster.listVmis(namespace),
          vdi.context.cluster.listLeases(namespace),
        ]),
      ),
    );
    collectGarbage();
    const listedPerDesktop = (process.memoryUsage().heapUsed - heapBeforeListed) / desktops;
    addRow({
      name: `heap of the caches per desktop (${desktops} desktops, half claimed)`,
      figure: kib(heapPerDesktop),
      floor: `${kib(listedPerDesktop)} holding the objects as listed`,
      ratio: round(heapPerDesktop / listedPerDesktop),
      goal: '',
      met: null,
      note: `after a full GC; ${held.flat(2).length} objects`,
    });

    const engine = createSessionEngine(vdi.context, { namespaces: desktopNamespaces });
    clock.advance(60_000);
    const kube = vdi.context.cluster;
    const pass = async () => {
      const requestsBefore = kube.requestTotal;
      const cpuBefore = process.cpuUsage();
      const started = performance.now();
      const result = await engine.runPass();
      const cpu = process.cpuUsage(cpuBefore);
      return {
        result,
        requests: kube.requestTotal - requestsBefore,
        cpuMs: (cpu.user + cpu.system) / 1000,
        ms: performance.now() - started,
      };
    };
    const due = await pass();
    const idle = await pass();
    vdi.stopCaches();
    expect(due.result).toMatchObject({ renewed: seededClaims.due, reclaimed: 0, errors: [] });
    expect(idle.result).toMatchObject({ renewed: 0, reclaimed: 0, errors: [] });
    const thousands = desktops / 1000;
    addRow({
      name: `reclaim pass over ${desktops.toLocaleString('en')} desktops, nothing due`,
      figure: `${idle.requests} requests, ${round(idle.cpuMs / thousands, 1)} ms CPU per 1,000`,
      floor: '0 requests',
      ratio: null,
      goal: '0 requests, ≤ 50 ms CPU per 1,000',
      met: idle.requests === 0 && idle.cpuMs / thousands <= 50,
      note: `${ms(idle.ms)} wall`,
    });
    addRow({
      name: `reclaim pass over ${desktops.toLocaleString('en')} desktops, a tenth of the claims due`,
      figure: `${due.requests} requests, ${round(due.cpuMs / thousands, 1)} ms CPU per 1,000`,
      floor: `${seededClaims.due} requests (one write per due claim)`,
      ratio: round(due.requests / seededClaims.due),
      goal: '',
      met: null,
      note: `${ms(due.ms)} wall`,
    });
  });

  it(`broker serve over ${desktops} desktops: memory, /readyz and the Desktops page with ${pageProbePools} pools`, async () => {
    // run alone (-t), the row has no bare lists yet
    if (bare.items === 0) bare = await listDesktopsBare();
    const idle = await serveBrokerProcess(idleNamespaces);
    const full = await serveBrokerProcess(desktopNamespaces);
    // both settle after their first lists before their memory is read
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    const idleRss = rssOf(idle.child.pid ?? 0);
    const fullRss = rssOf(full.child.pid ?? 0);
    const perDesktop = (fullRss - idleRss) / desktops;
    addRow({
      name: `broker serve RSS per desktop above an idle broker (${desktops.toLocaleString('en')} desktops)`,
      figure: kib(perDesktop),
      floor: `idle ${kib(idleRss)}`,
      ratio: null,
      goal: '≤ 8 KiB',
      met: perDesktop <= 8 * 1024,
      note: `RSS ${kib(fullRss)} over ${desktopNamespaceCount} namespaces`,
    });
    // read after the RSS, whose figure is the process as it ran, before a forced collection
    const idleHeap = await idle.heapAfterGc();
    const fullHeap = await full.heapAfterGc();
    addRow({
      name: `broker serve heap after a full GC per desktop above an idle broker`,
      figure: kib((fullHeap - idleHeap) / desktops),
      floor: `idle ${kib(idleHeap)}`,
      ratio: null,
      goal: '',
      met: null,
      note: `heap ${kib(fullHeap)}: the rest of the RSS is what V8 and the allocator keep of the start's peak`,
    });
    addRow({
      name: `broker serve start to /readyz over ${desktops.toLocaleString('en')} desktops`,
      figure: ms(full.readyMs),
      floor: `${ms(bare.ms)} bare lists`,
      ratio: round(full.readyMs / bare.ms),
      goal: '≤ 2',
      met: full.readyMs <= 2 * bare.ms,
      note: `an idle broker's start took ${ms(idle.readyMs)}`,
    });

    let browser: Browser | undefined;
    try {
      browser = await launchChromium();
      const timePage = async (url: string, pools: number) => {
        const proxy = await startSignInProxy(url, 'viewer@example.com');
        const context = await browser?.newContext({ viewport: { width: 1100, height: 800 } });
        const page = await context?.newPage();
        if (!page) throw new Error('no page');
        await page.goto(`${proxy.url}/`);
        // loaded once both of the page's reads have answered and its list holds every pool
        await page.waitForFunction(
          (expected) =>
            document.querySelectorAll('li[data-pool]').length >= expected &&
            ['/api/vdi/pools', '/api/vdi/desktops'].every((path) =>
              performance.getEntriesByType('resource').some((entry) => entry.name.endsWith(path)),
            ),
          pools,
          { timeout: 300_000, polling: 'raf' },
        );
        const timing = await page.evaluate(() => {
          const paint = performance.getEntriesByName('first-contentful-paint')[0];
          const navigation = performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming;
          return {
            firstPaintMs: paint?.startTime ?? 0,
            domInteractiveMs: navigation.domInteractive,
            poolsShownMs: performance.now(),
          };
        });
        await context?.close();
        await proxy.close();
        return timing;
      };
      const empty = await timePage(idle.url, 0);
      const shown = await timePage(full.url, pageProbePools);
      addRow({
        name: `Desktops page with ${pageProbePools} pools: first contentful paint`,
        figure: ms(shown.firstPaintMs),
        floor: `${ms(empty.firstPaintMs)} with no pools`,
        // a page with nothing to show may paint no content at all
        ratio: empty.firstPaintMs > 0 ? round(shown.firstPaintMs / empty.firstPaintMs) : null,
        goal: '',
        met: null,
        note: `DOM interactive at ${ms(shown.domInteractiveMs)} (${ms(empty.domInteractiveMs)} with none)`,
      });
      addRow({
        name: `Desktops page with ${pageProbePools} pools: every pool shown`,
        figure: ms(shown.poolsShownMs),
        floor: `${ms(empty.poolsShownMs)} with no pools`,
        ratio: round(shown.poolsShownMs / empty.poolsShownMs),
        goal: '',
        met: null,
        note: 'performance.now() in the page once its reads answered and its list holds every pool',
      });
    } finally {
      await browser?.close();
      await idle.stop();
      await full.stop();
    }
  });

  it(`an idle minute of broker serve over ${desktops} desktops`, async () => {
    if (!cluster) throw new Error('the local cluster is not started');
    const proxy = await startCountingProxy(cluster, `${tmpdir()}/scale-counted-${process.pid}.kubeconfig`);
    // as deploy/ runs it: elected, so its leader Lease's renewals are among what it asks
    const broker = await serveBrokerProcess(desktopNamespaces, {
      kubeconfigPath: proxy.kubeconfigPath,
      args: ['--leader-elect'],
    });
    const pid = broker.child.pid ?? 0;
    const leaderLease = 'corral-broker-leader';
    const isWrite = (request: ProxiedRequest) => !['get', 'list', 'watch'].includes(request.verb);
    try {
      // the first passes renew the claims that fell due since the seeding: the minute starts once the broker has
      // written nothing but its leader Lease for 10 s
      const settleStarted = performance.now();
      for (;;) {
        const lastWrite = proxy
          .requests()
          .filter((request) => isWrite(request) && request.name !== leaderLease)
          .at(-1)?.at;
        if (performance.now() - Math.max(lastWrite ?? 0, settleStarted) >= 10_000) break;
        if (performance.now() - settleStarted > 180_000)
          throw new Error('broker serve did not settle in 3 minutes');
        await sleep(500);
      }
      const minuteStarted = performance.now();
      const [rssBefore, cpuBefore, apiserverCpuBefore] = [rssOf(pid), cpuMsOf(pid), cpuMsOf(apiserverPid)];
      await sleep(60_000);
      const [rssAfter, cpu, apiserverCpu] = [
        rssOf(pid),
        cpuMsOf(pid) - cpuBefore,
        cpuMsOf(apiserverPid) - apiserverCpuBefore,
      ];
      const minute = proxy.requests().filter((request) => request.at >= minuteStarted);
      const watches = minute.filter((request) => request.verb === 'watch');
      // the leader Lease's reads and writes, and any claim's renewal that fell due in the minute
      const renewals = minute.filter(
        (request) =>
          request.resource === 'leases' && (request.name === leaderLease || request.verb === 'update'),
      );
      const other = minute.filter((request) => !watches.includes(request) && !renewals.includes(request));
      const byKind = new Map<string, number>();
      for (const request of other) {
        const kind = `${request.verb} ${request.resource}`;
        byKind.set(kind, (byKind.get(kind) ?? 0) + 1);
      }
      addRow({
        name: `broker serve, an idle minute over ${desktops.toLocaleString('en')} desktops: requests beyond watches and Lease renewals`,
        figure: String(other.length),
        floor: '0',
        ratio: null,
        goal: '≤ 5',
        met: other.length <= 5,
        note:
          `${watches.length} watch restarts, ${renewals.length} Lease renewals and reads` +
          (byKind.size > 0 ? `; ${[...byKind].map(([kind, count]) => `${count} ${kind}`).join(', ')}` : ''),
      });
      addRow({
        name: 'broker serve, the idle minute: CPU and resident memory',
        figure: `${ms(cpu)} broker CPU`,
        floor: `${ms(apiserverCpu)} apiserver CPU`,
        ratio: null,
        goal: '',
        met: null,
        note: `RSS ${kib(rssBefore)} at its start, ${kib(rssAfter)} at its end; ${minute.length} requests in all`,
      });
    } finally {
      await broker.stop();
      await proxy.close();
    }
  });

  it(`claims at ${members} members against claims at ${smallMembers}, ${concurrency} at a time`, async () => {
    const small = await cachedVdi([smallNamespace]);
    const smallRun = await timeClaims(
      small,
      smallNamespace,
      smallPool,
      Math.min(claims, smallMembers),
      concurrency,
    );
    small.stopCaches();
    const big = await cachedVdi([bigNamespace]);
    const requestsBefore = big.context.cluster.requestTotal;
    const cpuBefore = cpuMsOf(apiserverPid);
    const bigRun = await timeClaims(big, bigNamespace, bigPool, claims, concurrency);
    const requests = big.context.cluster.requestTotal - requestsBefore;
    const apiserverCpuMs = cpuMsOf(apiserverPid) - cpuBefore;
    big.stopCaches();
    expect(smallRun.refused + bigRun.refused).toBe(0);
    for (const [label, fraction] of [
      ['p50', 0.5],
      ['p99', 0.99],
    ] as const) {
      const figure = percentile(bigRun.waited, fraction);
      const floor = percentile(smallRun.waited, fraction);
      addRow({
        name: `claim ${label} at ${members.toLocaleString('en')} members (${claims} claims)`,
        figure: ms(figure),
        floor: `${ms(floor)} at ${smallMembers}`,
        ratio: round(figure / floor),
        goal: label === 'p99' ? '≤ 1.2' : '',
        met: label === 'p99' ? figure / floor <= 1.2 : null,
        note: '',
      });
    }
    const perClaim = requests / claims;
    addRow({
      name: `apiserver requests per claim at ${members.toLocaleString('en')} members`,
      figure: String(round(perClaim)),
      floor: '3 (Lease create, present, start)',
      ratio: round(perClaim / 3),
      goal: '≤ 3.5 requests',
      met: perClaim <= 3.5,
      note: `apiserver CPU ${round(apiserverCpuMs / claims, 1)} ms/claim`,
    });
  });

  it(`claims with the defaults (no watch caches) at ${members} members against ${smallMembers}, each run a fresh process`, async () => {
    const runClaims = async (namespace: string, pool: string, count: number) => {
      const asked = {
        kubeconfigPath: cluster?.kubeconfigPath ?? '',
        namespace,
        pool,
        count,
        concurrency,
        sdk: sdkEntry,
      };
      const printed = await new Promise<string>((resolve, reject) => {
        execFile(
          process.execPath,
          [defaultClaimsPath, JSON.stringify(asked)],
          { maxBuffer: 1 << 26, env: { ...process.env, KUBECONFIG: '' } },
          (error, stdout) => (error ? reject(error) : resolve(stdout)),
        );
      });
      return JSON.parse(printed) as { waited: number[]; refused: number; requests: number; bytes: number };
    };
    const smallCpuBefore = cpuMsOf(apiserverPid);
    const smallRun = await runClaims(smallNamespace, defaultSmallPool, Math.min(claims, smallMembers));
    const smallApiserverCpuMs = cpuMsOf(apiserverPid) - smallCpuBefore;
    const cpuBefore = cpuMsOf(apiserverPid);
    const bigRun = await runClaims(bigNamespace, bigPool, claims);
    const apiserverCpuMs = cpuMsOf(apiserverPid) - cpuBefore;
    expect(smallRun.refused + bigRun.refused).toBe(0);
    for (const [label, fraction] of [
      ['p50', 0.5],
      ['p99', 0.99],
    ] as const) {
      const figure = percentile(bigRun.waited, fraction);
      const floor = percentile(smallRun.waited, fraction);
      addRow({
        name: `claim ${label} with the defaults at ${members.toLocaleString('en')} members (${claims} claims, a process)`,
        figure: ms(figure),
        floor: `${ms(floor)} at ${smallMembers}`,
        ratio: round(figure / floor),
        goal: label === 'p99' ? '≤ 1.5' : '',
        met: label === 'p99' ? figure / floor <= 1.5 : null,
        note: '',
      });
    }
    const perClaim = (run: { waited: number[]; requests: number; bytes: number }) => ({
      requests: run.requests / run.waited.length,
      bytes: run.bytes / run.waited.length,
    });
    const [big, small] = [perClaim(bigRun), perClaim(smallRun)];
    addRow({
      name: `bytes read per claim with the defaults at ${members.toLocaleString('en')} members`,
      figure: kib(big.bytes),
      floor: `${kib(small.bytes)} at ${smallMembers}`,
      ratio: round(big.bytes / small.bytes),
      goal: '≤ 50 KiB',
      met: big.bytes <= 50 * 1024,
      note: `apiserver CPU ${round(apiserverCpuMs / bigRun.waited.length, 1)} ms/claim (${round(smallApiserverCpuMs / smallRun.waited.length, 1)} at ${smallMembers})`,
    });
    addRow({
      name: `apiserver requests per claim with the defaults at ${members.toLocaleString('en')} members`,
      figure: String(round(big.requests)),
      floor: `${round(small.requests)} at ${smallMembers}`,
      ratio: round(big.requests / small.requests),
      goal: '',
      met: null,
      note: '',
    });
  });

  for (const caches of [true, false]) {
    it(`P2 ${claimants} claimants on ${contendedMembers} members at once, ${caches ? 'with' : 'without'} watch caches`, async () => {
      const namespace = `scale-contended-${caches ? 'cached' : 'listing'}`;
      const seeder = new KubeCluster(kubeConfig());
      await createNamespace(kubeConfig(), namespace);
      await seedDesktopVms(
        seeder,
        memberNames(contendedPool, contendedMembers).map((name) => ({
          namespace,
          pool: contendedPool,
          name,
        })),
      );
      const vdi = caches ? await cachedVdi([namespace]) : createVdi({ kubeConfig: kubeConfig(), namespace });
      let conflicts = 0;
      vdi.events.on('claim-conflict', () => {
        conflicts += 1;
      });
      const run = await timeClaims(vdi, namespace, contendedPool, claimants, claimants);
      vdi.stopCaches();
      expect(run.waited.length).toBe(contendedMembers);
      const perClaim = conflicts / run.waited.length;
      addRow({
        name: `P2 Lease-create conflicts per claim, ${claimants} on ${contendedMembers}, ${caches ? 'caches on' : 'caches off'}`,
        figure: String(round(perClaim)),
        floor: '0',
        ratio: null,
        goal: '≤ 0.5',
        met: perClaim <= 0.5,
        note: `${conflicts} conflicts, ${run.waited.length} claims`,
      });
    });
  }

  it(`pool list, pool status and GET /api/vdi/pools at ${members} members`, async () => {
    const floor = await listBare(kubeConfig(), vmTarget(bigNamespace), `${poolLabel}=${bigPool}`);
    const vdi = createVdi({ kubeConfig: kubeConfig(), namespace: bigNamespace });
    const timed = async (run: () => Promise<unknown>) => {
      const bytesBefore = vdi.context.cluster.responseBytes;
      const started = performance.now();
      const answer = await run();
      return {
        ms: performance.now() - started,
        read: vdi.context.cluster.responseBytes - bytesBefore,
        answered: Buffer.byteLength(JSON.stringify(answer)),
      };
    };
    const status = await timed(() => readPoolStatus(vdi.context, { name: bigPool, namespace: bigNamespace }));
    const list = await timed(() => listPools(vdi.context, { namespaces: [bigNamespace] }));
    const floorNote = `${floor.items} VMs in ${floor.pages} pages, ${kib(floor.bytes)}`;
    addRow({
      name: `pool status at ${members.toLocaleString('en')} members (SDK call)`,
      figure: ms(status.ms),
      floor: `${ms(floor.ms)} bare paginated list of the pool's VMs`,
      ratio: round(status.ms / floor.ms),
      goal: '≤ 2',
      met: status.ms <= 2 * floor.ms,
      note: `read ${kib(status.read)}, answer ${kib(status.answered)}; floor ${floorNote}`,
    });
    addRow({
      name: `pool list at ${members.toLocaleString('en')} members (SDK call)`,
      figure: ms(list.ms),
      floor: ms(floor.ms),
      ratio: round(list.ms / floor.ms),
      goal: '',
      met: null,
      note: `read ${kib(list.read)}, answer ${kib(list.answered)}`,
    });

    const kubectl = await timeProcess('kubectl', [
      '--kubeconfig',
      cluster?.kubeconfigPath ?? '',
      'get',
      'virtualmachines.kubevirt.io',
      '-n',
      bigNamespace,
      '-l',
      `${poolLabel}=${bigPool}`,
      '-o',
      'name',
    ]);
    // the whole pool, then the first page a person would read of it
    for (const [command, args] of [
      ['pool status', ['pool', 'status', bigPool, '-n', bigNamespace]],
      ['pool list', ['pool', 'list', '-n', bigNamespace]],
      ['pool status --limit 50', ['pool', 'status', bigPool, '-n', bigNamespace, '--limit', '50']],
      ['pool list --limit 50', ['pool', 'list', '-n', bigNamespace, '--limit', '50']],
    ] as const) {
      const run = await runCli([...args]);
      addRow({
        name: `corral-vdi ${command} at ${members.toLocaleString('en')} members (process)`,
        figure: ms(run.ms),
        floor: `${ms(kubectl.ms)} kubectl get vm -l (pages of 500)`,
        ratio: round(run.ms / kubectl.ms),
        goal: '',
        met: null,
        note: `printed ${kib(run.bytes)}`,
      });
    }

    const cached = await cachedVdi([bigNamespace]);
    const broker = createBroker({
      vdi: cached,
      identity: [tailscaleIdentity({ trustHeaders: true })],
      namespaces: [bigNamespace],
      log: () => {},
    });
    const server: Server = createServer(broker.handleNode);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/vdi/pools`;
    const headers = { [tailscaleLoginHeader]: 'viewer@example.com' };
    await fetch(url, { headers }).then((answer) => answer.arrayBuffer());
    const started = performance.now();
    const body = await fetch(url, { headers }).then((answer) => answer.arrayBuffer());
    const routeMs = performance.now() - started;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
    await broker.stop();
    cached.stopCaches();
    addRow({
      name: `GET /api/vdi/pools at ${members.toLocaleString('en')} members (broker, caches synced)`,
      figure: ms(routeMs),
      floor: ms(floor.ms),
      ratio: round(routeMs / floor.ms),
      goal: '',
      met: null,
      note: `answer ${kib(body.byteLength)}`,
    });
  });
});
