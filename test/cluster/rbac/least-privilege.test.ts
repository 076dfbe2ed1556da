import { describe, expect, it } from 'vitest';
import { createBroker } from '../../../src/broker/broker.js';
import { tailscaleIdentity } from '../../../src/broker/identity.js';
import { claimantLeaseName } from '../../../src/claims/claimant-lock.js';
import { ctMemberLabel, kindLabel } from '../../../src/ct/ct-keys.js';
import { isVdiError } from '../../../src/errors.js';
import { assignedToKey, leasePoolLabel, removalHolder } from '../../../src/keys.js';
import { cloneKind, podKind, pvcKind, serviceKind } from '../../../src/kube/resource-kinds.js';
import type { PodObject } from '../../../src/kube-objects.js';
import { createPool, deletePool, listPools, resizePool } from '../../../src/pools/pool-service.js';
import { createTestClock, type TestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi, type Vdi } from '../../../src/vdi.js';
import { createTestNamespace, stoppedVm, useSharedCluster } from '../../support/cluster.js';
import {
  bindDocumentedRole,
  documentedPermissions,
  type Permission,
  permissionName,
} from './documented-role.js';

const cluster = useSharedCluster();
const minute = 60_000;
// a container pool with a home volume, so a release wipes one and a shrink deletes one
const ctSpec = { name: 'c', image: 'ghcr.io/acme/devbox:1.4', size: 2, home: { size: '1Gi' } };

/** What one operation of the sequence does, as the identity under test (`vdi`) with the same clock as `admin`. */
interface Step {
  name: string;
  run(vdi: Vdi, state: RunState): Promise<unknown>;
}

interface RunState {
  clock: TestClock;
  admin: Vdi;
  members: Record<string, string>;
}

/** How an operation failed: the code and message, and the codes of its causes. */
interface Failure {
  code: string | undefined;
  causes: string[];
  message: string;
}

// Every documented operation, in an order where each finds what the one before left: a step that fails is
// carried out again by the administrator so the next one starts from the same place.
const steps: Step[] = [
  { name: 'pool create', run: (vdi) => createPool(vdi.context, { name: 'p', from: 'golden', size: 2 }) },
  { name: 'pool grow', run: (vdi) => resizePool(vdi.context, { name: 'p', size: 3 }) },
  { name: 'pool shrink', run: (vdi) => resizePool(vdi.context, { name: 'p', size: 2 }) },
  { name: 'capacity', run: (vdi) => vdi.planCapacity({ from: 'gpu-golden', size: 1 }) },
  { name: 'list desktops', run: (vdi) => vdi.listDesktops({ all: true }) },
  { name: 'list pools', run: (vdi) => listPools(vdi.context, { namespaces: [vdi.namespace] }) },
  { name: 'list pool namespaces', run: (vdi) => vdi.listPoolNamespaces() },
  {
    name: 'claim',
    run: async (vdi, state) => {
      const claimed = await vdi.claim({ pool: 'p', identity: 'alice' });
      state.members.alice = claimed.member;
      if (claimed.startError !== undefined) throw new Error(claimed.startError);
    },
  },
  {
    name: 'assign',
    run: async (vdi, state) => {
      const assigned = await vdi.assign({ pool: 'p', identity: 'bob', actor: 'admin' });
      state.members.bob = assigned.member;
      if (assigned.startError !== undefined) throw new Error(assigned.startError);
    },
  },
  { name: 'start', run: (vdi, { members }) => vdi.start({ member: members.alice ?? '', identity: 'alice' }) },
  { name: 'renew', run: (vdi, { members }) => vdi.renew({ member: members.alice ?? '', identity: 'alice' }) },
  {
    name: 'connect',
    run: async (vdi, { admin, members }) => {
      const member = members.alice ?? '';
      await waitFor(() => admin.getDesktop({ member }), {
        describe: `${member} to run`,
        until: (desktop) => desktop.running,
      });
      return await vdi.connect({ member, identity: 'alice', probeTimeoutMs: 200 });
    },
  },
  {
    name: 'release',
    run: (vdi, { members }) => vdi.release({ member: members.alice ?? '', identity: 'alice' }),
  },
  {
    name: 'unassign',
    run: (vdi, { members }) => vdi.unassign({ member: members.bob ?? '', identity: 'admin', asAdmin: true }),
  },
  {
    name: 'claim with a limit',
    run: async (vdi, state) => {
      // a self-service claim under a per-user limit: the pool's limit read with its entitlement, the identity's
      // claims of every pool counted under its claimant Lease for the namespace
      const claimed = await vdi.claim({ pool: 'p', identity: 'erin', groups: [], maxDesktopsPerUser: 1 });
      state.members.erin = claimed.member;
      if (claimed.startError !== undefined) throw new Error(claimed.startError);
    },
  },
  {
    name: 'session pass (renew)',
    run: async (vdi, { admin, clock }) => {
      // carol's claim is the administrator's doing, and so is the time that passes
      if ((await admin.listDesktops({ identity: 'carol' })).length === 0) {
        await admin.claim({ pool: 'p', identity: 'carol' });
        clock.advance(25 * minute);
      }
      const result = await vdi.createSessionEngine({ namespaces: [vdi.namespace] }).runPass();
      if (result.errors[0]) throw result.errors[0];
      return result;
    },
  },
  {
    name: 'session pass (reclaim)',
    run: async (vdi) => {
      const policy = { maxSessionMs: 20 * minute };
      const failures: string[] = [];
      vdi.events.on('reclaim-failed', ({ error }) => failures.push(error));
      const result = await vdi.createSessionEngine({ namespaces: [vdi.namespace], policy }).runPass();
      if (result.errors[0]) throw result.errors[0];
      if (failures[0] !== undefined) throw new Error(failures[0]);
      return result;
    },
  },
  {
    name: 'pool delete',
    run: async (vdi, { admin }) => {
      // a released member shows its holder until it has stopped; the delete comes once every one has
      await waitFor(() => admin.context.cluster.listVms(vdi.namespace, 'corral.dev/vdi-pool=p'), {
        describe: 'the members of p to stop',
        until: (vms) => vms.every((vm) => vm.status?.printableStatus === 'Stopped'),
      });
      return await deletePool(vdi.context, { name: 'p' });
    },
  },
  { name: 'ct-pool apply', run: (vdi) => vdi.applyCtPool({ spec: ctSpec }) },
  { name: 'ct-pool get', run: (vdi) => vdi.getCtPool({ name: 'c' }) },
  { name: 'ct-pool list', run: (vdi) => vdi.listCtPools() },
  { name: 'ct-pool reconcile', run: (vdi) => vdi.reconcileCtPool({ name: 'c' }) },
  {
    name: 'ct claim',
    run: async (vdi, state) => {
      const claimed = await vdi.claim({ pool: 'c', identity: 'dave', kind: 'ct' });
      state.members.dave = claimed.member;
      if (claimed.startError !== undefined) throw new Error(claimed.startError);
    },
  },
  {
    name: 'ct terminal',
    run: async (vdi, { admin, members }) => {
      const member = members.dave ?? '';
      await waitFor(() => admin.getCtPool({ name: 'c' }), {
        describe: `${member} to be Ready`,
        until: (pool) => pool.members.find((view) => view.member === member)?.power === 'running',
      });
      const terminal = await vdi.openTerminal(`ct/${vdi.namespace}/${member}`, { identity: 'dave' });
      let output = '';
      terminal.on('data', (chunk: Buffer) => {
        output += chunk.toString('utf8');
      });
      terminal.write('echo "host=$HOSTNAME"\nexit 0\n');
      const exitCode = await terminal.exitCode;
      if (exitCode !== 0 || !output.includes(`host=${member}`)) {
        throw new Error(`the shell ended with ${exitCode} after ${JSON.stringify(output)}`);
      }
    },
  },
  {
    name: 'ct release',
    run: async (vdi, { admin, members }) => {
      const member = members.dave ?? '';
      const kube = admin.context.cluster;
      const homeOf = (pod: PodObject | undefined) =>
        pod?.spec?.volumes?.[0]?.persistentVolumeClaim?.claimName;
      const before = await kube.resource(podKind).in(vdi.namespace).get(member);
      await vdi.release({ member, identity: 'dave', kind: 'ct' });
      // the next holder gets a new Pod from the image with an empty home
      const after = await kube.resource(podKind).in(vdi.namespace).get(member);
      if (!after || after.metadata.uid === before?.metadata.uid || homeOf(after) === homeOf(before)) {
        throw new Error(`${member} was not made again with a fresh home`);
      }
    },
  },
  {
    name: 'ct shrink',
    run: async (vdi) => {
      await vdi.applyCtPool({ spec: { ...ctSpec, size: 1 } });
      return await vdi.reconcileCtPool({ name: 'c' });
    },
  },
  {
    name: 'ct capacity',
    run: async (vdi, { admin }) => {
      // the pool asks for a GPU no node has: the pass reads what every namespace holds, then refuses
      const limits = { [`example.com/${vdi.namespace}-a10`]: '1' };
      await admin.applyCtPool({ spec: { name: 'g', image: ctSpec.image, size: 1, resources: { limits } } });
      try {
        await vdi.reconcileCtPool({ name: 'g' });
      } catch (error) {
        if (isVdiError(error) && error.code === 'INSUFFICIENT_CAPACITY') return error.details;
        throw error;
      }
      throw new Error('a container pool asking for a GPU that no node has was admitted');
    },
  },
  { name: 'ct-pool delete', run: (vdi) => vdi.deleteCtPool({ name: 'c' }) },
  {
    name: 'watch caches',
    run: async (vdi) => {
      vdi.startCaches([vdi.namespace]);
      try {
        await vdi.waitForCacheSync();
      } finally {
        vdi.stopCaches();
      }
    },
  },
];

function failureOf(error: unknown): Failure {
  const causes: string[] = [];
  for (
    let cause = (error as { cause?: unknown }).cause;
    cause;
    cause = (cause as { cause?: unknown }).cause
  ) {
    if (isVdiError(cause)) causes.push(cause.code);
  }
  return {
    code: isVdiError(error) ? error.code : undefined,
    causes,
    message: error instanceof Error ? error.message : String(error),
  };
}

/** What the apiserver says when it refuses a permission: `cannot <verb> resource "<resource>"`. */
function refusalOf({ verb, resource }: Permission): string {
  const [plural, subresource] = resource.split('/');
  return subresource
    ? `cannot ${verb} resource "${plural}/${subresource}"`
    : `cannot ${verb} resource "${plural}"`;
}

/** Checks that the namespace holds only what the docs say a failed operation may leave. */
async function expectDocumentedState(admin: Vdi, namespace: string, failure: Failure): Promise<void> {
  const kube = admin.context.cluster;
  const [vms, leases, clones] = await Promise.all([
    kube.listVms(namespace),
    kube.listLeases(namespace, leasePoolLabel),
    kube.resource(cloneKind).in(namespace).list(),
  ]);
  // clones left behind are finished, so they make nothing more, and the error gives the command that removes
  // exactly them (docs/pools.md)
  for (const clone of clones) expect(['Succeeded', 'Failed']).toContain(clone.status?.phase);
  const removal = /"kubectl delete virtualmachineclones\.clone\.kubevirt\.io -n (\S+) ([^"]+)"/.exec(
    failure.message,
  );
  expect(removal?.[2]?.split(' ').sort() ?? []).toEqual(clones.map((clone) => clone.metadata.name).sort());
  if (removal) expect(removal[1]).toBe(namespace);
  const [pods, services, homeClaims] = await Promise.all([
    kube.resource(podKind).in(namespace).list(`${kindLabel}=ct`),
    kube.resource(serviceKind).in(namespace).list(`${kindLabel}=ct`),
    kube.resource(pvcKind).in(namespace).list(`${kindLabel}=ct`),
  ]);
  const ctMembers = [...pods, ...services, ...homeClaims].map(
    (object) => object.metadata.labels?.[ctMemberLabel],
  );
  for (const member of ctMembers) expect(member).toMatch(/^c-[12]$/);
  // a wipe makes a fresh home claim for the old one: never two live ones (docs/ct-pools.md)
  const liveHomes = homeClaims.filter((claim) => !claim.metadata.deletionTimestamp);
  const homeOwners = liveHomes.map((claim) => claim.metadata.labels?.[ctMemberLabel]);
  expect(homeOwners.length).toBe(new Set(homeOwners).size);
  const names = new Set([...vms.map((vm) => vm.metadata.name ?? ''), ...ctMembers.map(String)]);
  for (const vm of vms) expect(vm.metadata.name).toMatch(/^(golden|gpu-golden|p-[1-3])$/);
  // a claim's Lease names a live member, unless a removal holds it (docs/pools.md#removal-leases)
  for (const lease of leases) {
    const member = lease.metadata.name?.replace(/^corral-vdi-/, '') ?? '';
    if (lease.spec.holderIdentity !== removalHolder) expect(names).toContain(member);
  }
  // a presentation copy without its Lease is on a stopped member only, which counts as free (docs/claims.md)
  const leased = new Set(leases.map((lease) => lease.metadata.name));
  for (const vm of vms) {
    if (vm.metadata.annotations?.[assignedToKey] && !leased.has(`corral-vdi-${vm.metadata.name}`)) {
      expect(vm.spec.runStrategy).toBe('Halted');
    }
  }
  // a Pod shows a claim only while its Lease holds it: a release makes the Pod again without the copy
  for (const pod of pods) {
    if (pod.metadata.annotations?.[assignedToKey])
      expect(leased).toContain(`corral-vdi-${pod.metadata.name}`);
  }
}

/**
 * Runs a step the user failed as the admin, so the next steps find what it makes. A failed create's cleanup may
 * be a step behind the clone controller, which can still make a member a moment later (docs/pools.md): the pool
 * then exists, and is deleted as the docs say before the create is run again. A claimant Lease the user could not
 * delete would be taken over after 5 s unchanged (claim-races.test.ts proves it); the admin deletes it instead.
 */
async function runAsAdmin(step: Step, admin: Vdi, state: RunState): Promise<void> {
  const kube = admin.context.cluster;
  const leases = await kube.listLeases(admin.namespace);
  for (const { metadata } of leases.filter((lease) =>
    lease.metadata.name?.startsWith('corral-vdi-claimant-'),
  )) {
    await kube.deleteLease(admin.namespace, metadata.name ?? '', { uid: metadata.uid ?? '' });
  }
  try {
    await step.run(admin, state);
  } catch (error) {
    if (step.name !== 'pool create' || !isVdiError(error, 'ALREADY_EXISTS')) throw error;
    await deletePool(admin.context, { name: 'p' });
    await step.run(admin, state);
  }
}

/**
 * Runs a step, and once more when it answered a retryable conflict that no refusal caused, as its message asks:
 * KubeVirt's controller writes a VM's status while it stops, and a release's conditional write of the member can
 * meet five of those writes in a row on a loaded machine.
 */
async function runAsCallerWould(step: Step, vdi: Vdi, state: RunState): Promise<void> {
  try {
    await step.run(vdi, state);
  } catch (error) {
    const failure = failureOf(error);
    const refused = failure.code === 'FORBIDDEN' || failure.causes.includes('FORBIDDEN');
    if (refused || !isVdiError(error, 'CONFLICT') || !error.retryable) throw error;
    await step.run(vdi, state);
  }
}

/** The claimant Leases a case's broker logged and counted as left behind by claims that answered all the same. */
interface LeftClaimants {
  logged: string[];
  counted: number;
}

async function runCase(
  missing: Permission | undefined,
  index: number,
): Promise<{ failed: Record<string, Failure>; left: LeftClaimants; slower: string[] }> {
  const namespace = await createTestNamespace(cluster(), 'rbac');
  const clock = createTestClock();
  const admin = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock });
  const gpuGolden = stoppedVm('gpu-golden');
  gpuGolden.spec.template = {
    spec: {
      domain: {
        memory: { guest: '128Mi' },
        devices: { gpus: [{ name: 'gpu1', deviceName: `example.com/${namespace}-a10` }] },
      },
    },
  };
  const [{ kubeConfig, unbind }] = await Promise.all([
    bindDocumentedRole(cluster(), { namespace, user: `corral-sdk-${index}`, missing }),
    admin.context.cluster.createVm(namespace, stoppedVm('golden')),
    admin.context.cluster.createVm(namespace, gpuGolden),
  ]);
  // the SDK's own retries of transient apiserver errors, as a user gets them: a refusal is never retried
  const vdi = createVdi({ kubeConfig, namespace, clock });
  // the broker an operator runs on that SDK: what a claim cannot clean up goes to its log and metrics
  const logged: string[] = [];
  const broker = createBroker({
    vdi,
    identity: [tailscaleIdentity({ trustHeaders: true })],
    namespaces: [namespace],
    log: (line) => logged.push(line),
  });
  const state: RunState = { clock, admin, members: {} };
  const failed: Record<string, Failure> = {};
  // the steps that took a slower path for want of the permission, and said so
  const slower: string[] = [];
  let running = '';
  vdi.events.on('pool-snapshot', (event) => {
    if (event.step === 'skipped') slower.push(running);
  });
  try {
    for (const step of steps) {
      running = step.name;
      try {
        await runAsCallerWould(step, vdi, state);
      } catch (error) {
        const failure = failureOf(error);
        failed[step.name] = failure;
        await expectDocumentedState(admin, namespace, failure);
        await runAsAdmin(step, admin, state);
      }
    }
  } finally {
    await broker.stop();
    await unbind();
  }
  const counter = await broker.metrics.registry.getSingleMetric(leftClaimantsMetric)?.get();
  const left = {
    logged: logged.filter((line) => line.includes('claimant Lease')),
    counted: counter?.values[0]?.value ?? 0,
  };
  return { failed, left, slower };
}

const leftClaimantsMetric = 'corral_vdi_claimant_leases_left_total';
const deleteLeases = 'delete leases.coordination.k8s.io';
// the claimant Leases of the claims in the steps: alice's and bob's on p, erin's for the namespace and on p, dave's on c
const claimantsOfTheSteps = [
  { pool: 'p', identity: 'alice' },
  { pool: 'p', identity: 'bob' },
  { identity: 'erin' },
  { pool: 'p', identity: 'erin' },
  { pool: 'c', identity: 'dave' },
].map(claimantLeaseName);

const caseTimeoutMs = 5 * minute;
const rows = [undefined, ...documentedPermissions()].map((missing) => ({
  missing,
  name: missing ? permissionName(missing) : 'nothing',
}));

describe('an identity bound to exactly the documented Role, less one permission at a time', () => {
  it.concurrent.each(rows)(
    'without $name, fails exactly the operations that need it, FORBIDDEN and naming it, leaving what the docs describe',
    async ({ missing, name }) => {
      const { failed, left, slower } = await runCase(
        missing,
        rows.findIndex((row) => row.name === name),
      );
      console.log(`least privilege: without ${name}: ${JSON.stringify(Object.keys(failed))}`);
      // a documented permission that no operation needs would be one too many
      if (missing && !onlyForLeftovers.includes(name)) {
        const needs = (expected[name]?.length ?? 0) + (slowerWithout[name]?.length ?? 0);
        expect(needs, `what needs ${name}`).toBeGreaterThan(0);
      }
      expect(slower, `what takes the slower path without ${name}`).toEqual(slowerWithout[name] ?? []);
      for (const [step, failure] of Object.entries(failed)) {
        if (!missing) continue;
        expect(failure.message, `${step} without ${name}`).toContain(refusalOf(missing));
        const reported = failure.code === undefined ? 'a message' : failure.code;
        const forbidden = failure.code === 'FORBIDDEN' || failure.causes.includes('FORBIDDEN');
        expect(['FORBIDDEN', reportedAs[step]], `${step} without ${name}`).toContain(
          forbidden ? 'FORBIDDEN' : reported,
        );
      }
      // a limited claim reads the pool whole (and so lists its instances) only when its page of free-looking members
      // offered none it could take, and reads a member's instance before its Lease write only when it writes one,
      // which depends on how far the steps before it got; every other need is exact
      const mayNeed = [
        'list virtualmachineinstances.kubevirt.io',
        'get virtualmachineinstances.kubevirt.io',
      ].includes(name)
        ? ['claim with a limit']
        : [];
      const exact = (steps: string[]) => steps.filter((step) => !mayNeed.includes(step));
      expect(exact(Object.keys(failed))).toEqual(exact(expected[name] ?? []));
      // a claim that may not delete its claimant Lease answers its desktop; the broker logs and counts the Lease
      const leftBehind = name === deleteLeases ? claimantsOfTheSteps : [];
      expect(left.counted, `claimant Leases counted as left without ${name}`).toBe(leftBehind.length);
      expect(left.logged).toHaveLength(leftBehind.length);
      for (const lease of leftBehind) expect(left.logged.join('\n')).toContain(lease);
    },
    caseTimeoutMs,
  );
});

describe('the KubeVirt CR, which the documented roles leave out', () => {
  it('is read by an identity bound to no role at all, as KubeVirt grants every authenticated user', async () => {
    const namespace = await createTestNamespace(cluster(), 'rbac-kubevirt');
    const stranger = createVdi({ kubeConfig: cluster().userKubeConfig('no-role-at-all'), namespace });
    // another test may have permitted devices on the shared CR: what matters is that the read is allowed
    await expect(stranger.context.cluster.getPermittedHostDevices()).resolves.toBeTypeOf('object');
    // the same identity may read nothing of the project's own
    const refused = await stranger.context.cluster.listVms(namespace).catch((error: unknown) => error);
    expect(isVdiError(refused, 'FORBIDDEN')).toBe(true);
  });
});

/**
 * The operations that may report a refused permission otherwise than as FORBIDDEN (or an error caused by it),
 * naming the permission in the message all the same.
 */
const reportedAs: Record<string, string> = {
  // a claim that holds its desktop reports a failed start as `startError`, a message
  claim: 'a message',
  assign: 'a message',
  'ct claim': 'a message',
  'claim with a limit': 'a message',
  // a failed reclaim is an event with a message; the claim stays
  'session pass (reclaim)': 'a message',
};

/**
 * The permissions whose absence fails nothing but sends an operation down a slower path, which it reports
 * (`pool-snapshot` `skipped`): a create of several members snapshots the golden VM once only when it may.
 */
const slowerWithout: Record<string, string[]> = {
  'get virtualmachinesnapshots.snapshot.kubevirt.io': ['pool create'],
  'create virtualmachinesnapshots.snapshot.kubevirt.io': ['pool create'],
  'delete virtualmachinesnapshots.snapshot.kubevirt.io': ['pool create'],
};

/**
 * The permissions a pool delete uses only to find what a create killed part-way left (its snapshot of the golden
 * VM), which these steps never leave: test/cluster/pools/shared-snapshot.test.ts covers them.
 */
const onlyForLeftovers = ['list virtualmachinesnapshots.snapshot.kubevirt.io'];

/** Which operations need each permission: every documented one is needed by at least one. */
const expected: Record<string, string[]> = {
  nothing: [],
  // a claim reads a Lease by name only while another claim of its identity holds the claimant Lease
  'get leases.coordination.k8s.io': [
    'start',
    'renew',
    'connect',
    'release',
    'unassign',
    'session pass (reclaim)',
    'ct terminal',
    'ct release',
  ],
  'list leases.coordination.k8s.io': [
    'pool create',
    'pool grow',
    'pool shrink',
    'list desktops',
    'list pools',
    'claim',
    'assign',
    'claim with a limit',
    'session pass (renew)',
    'session pass (reclaim)',
    'pool delete',
    'ct-pool get',
    'ct-pool list',
    'ct-pool reconcile',
    'ct claim',
    'ct shrink',
    'ct capacity',
    'ct-pool delete',
    'watch caches',
  ],
  'create leases.coordination.k8s.io': [
    'pool shrink',
    'claim',
    'assign',
    'claim with a limit',
    'pool delete',
    'ct claim',
    'ct shrink',
    'ct-pool delete',
  ],
  'update leases.coordination.k8s.io': [
    'renew',
    'release',
    'unassign',
    'session pass (renew)',
    'session pass (reclaim)',
    'ct release',
  ],
  // a claim that may not delete its claimant Lease still answers its desktop, and the broker says what it left
  'delete leases.coordination.k8s.io': [
    'pool shrink',
    'release',
    'unassign',
    'session pass (reclaim)',
    'pool delete',
    'ct release',
    'ct shrink',
    'ct-pool delete',
  ],
  // a shrink and a pool delete read each deleted member until KubeVirt let it go
  'get virtualmachines.kubevirt.io': [
    'pool create',
    'pool grow',
    'pool shrink',
    'capacity',
    'claim',
    'assign',
    'start',
    'renew',
    'connect',
    'release',
    'unassign',
    'claim with a limit',
    'session pass (reclaim)',
    'pool delete',
  ],
  'list virtualmachines.kubevirt.io': [
    'pool create',
    'pool grow',
    'pool shrink',
    'list desktops',
    'list pools',
    'list pool namespaces',
    'claim',
    'assign',
    'claim with a limit',
    'session pass (renew)',
    'pool delete',
    'ct-pool apply',
    'ct shrink',
    'watch caches',
  ],
  'watch leases.coordination.k8s.io': ['watch caches'],
  'watch virtualmachines.kubevirt.io': ['watch caches'],
  'watch virtualmachineinstances.kubevirt.io': ['watch caches'],
  // a release records itself on the member after its stop, so that a racing claim cannot start it for nobody;
  // a pool create labels a golden VM that has no label, so that its clones can add the pool label
  'patch virtualmachines.kubevirt.io': [
    'pool create',
    'claim',
    'assign',
    'start',
    'release',
    'unassign',
    'claim with a limit',
    'session pass (reclaim)',
  ],
  'delete virtualmachines.kubevirt.io': ['pool shrink', 'pool delete'],
  // a claim reads the instance of the member it looks at before its Lease write, as KubeVirt may have made one its
  // VM does not show yet
  'get virtualmachineinstances.kubevirt.io': [
    'claim',
    'assign',
    'start',
    'renew',
    'connect',
    'release',
    'unassign',
    'claim with a limit',
    'session pass (reclaim)',
  ],
  // a claim reads the instances of the members it looks at by name, not the pool's
  'list virtualmachineinstances.kubevirt.io': [
    'capacity',
    'list desktops',
    'assign',
    'claim with a limit',
    'session pass (renew)',
    'ct capacity',
    'watch caches',
  ],
  'update virtualmachines/stop.subresources.kubevirt.io': ['release', 'unassign', 'session pass (reclaim)'],
  'get virtualmachineclones.clone.kubevirt.io': ['pool create', 'pool grow'],
  'list virtualmachineclones.clone.kubevirt.io': ['pool delete'],
  'create virtualmachineclones.clone.kubevirt.io': ['pool create', 'pool grow'],
  'delete virtualmachineclones.clone.kubevirt.io': ['pool create', 'pool grow'],
  'list nodes (cluster)': ['capacity', 'ct capacity'],
  'list virtualmachineinstances.kubevirt.io (cluster)': ['capacity', 'ct capacity'],
  'list virtualmachines.kubevirt.io (cluster)': ['list pool namespaces'],
  'get configmaps': [
    // a resize reads the pool's settings for a roll-out's golden VM
    'pool grow',
    'pool shrink',
    'claim with a limit',
    'pool delete',
    'ct-pool apply',
    'ct-pool get',
    'ct-pool reconcile',
    'ct terminal',
    'ct release',
    'ct shrink',
    'ct capacity',
    'ct-pool delete',
  ],
  // a pass judges a claim that records its holder's groups (erin's) against its pool's lists
  'list configmaps': [
    'list pools',
    'session pass (renew)',
    'session pass (reclaim)',
    'ct-pool list',
    'watch caches',
  ],
  'watch configmaps': ['watch caches'],
  'create configmaps': ['ct-pool apply'],
  'update configmaps': ['ct shrink'],
  'delete configmaps': ['ct-pool delete'],
  'get pods': ['ct claim', 'ct terminal', 'ct release', 'ct shrink', 'ct-pool delete'],
  'list pods': [
    'list desktops',
    'ct-pool get',
    'ct-pool list',
    'ct-pool reconcile',
    'ct claim',
    'ct shrink',
    'ct capacity',
    'ct-pool delete',
  ],
  // an apply (and the shrink's) sends a member's Pod, Service and home claim as dry runs, authorized as creates
  'create pods': ['ct-pool apply', 'ct-pool reconcile', 'ct release', 'ct shrink'],
  'patch pods': ['ct claim'],
  'delete pods': ['ct release', 'ct shrink', 'ct-pool delete'],
  'get services': ['ct shrink', 'ct-pool delete'],
  'list services': [
    'ct-pool get',
    'ct-pool list',
    'ct-pool reconcile',
    'ct shrink',
    'ct capacity',
    'ct-pool delete',
  ],
  'create services': ['ct-pool apply', 'ct-pool reconcile', 'ct release', 'ct shrink'],
  'delete services': ['ct shrink', 'ct-pool delete'],
  'list persistentvolumeclaims': [
    'ct-pool get',
    'ct-pool list',
    'ct-pool reconcile',
    'ct release',
    'ct shrink',
    'ct capacity',
    'ct-pool delete',
  ],
  'create persistentvolumeclaims': ['ct-pool apply', 'ct-pool reconcile', 'ct release', 'ct shrink'],
  'delete persistentvolumeclaims': ['ct release', 'ct shrink', 'ct-pool delete'],
  'get pods/exec': ['ct terminal'],
  // the terminal's websocket is a GET, which apiservers from 1.35 on authorize as create too
  'create pods/exec': ['ct terminal'],
  'list pods (cluster)': ['ct capacity'],
};
