import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  AdmissionregistrationV1Api,
  type KubeConfig,
  type V1MatchCondition,
  type V1RuleWithOperations,
  type V1ValidatingWebhook,
} from '@kubernetes/client-node';
import type { VirtualMachine } from '../../kubevirt-types.js';
import { type ApiserverFacingTls, createApiserverFacingServer } from '../apiserver-facing-server.js';
import { type InjectedFailure, readVmKnobs, simulatorAnnotations } from '../kubevirt/fault-knobs.js';
import { unlessNotFound, upsert } from '../kubevirt/kube-calls.js';
import { type CloneFaults, type RestoreObject, startCloneFaults } from './clone-faults.js';
import { kubevirtNamespace, serviceAccounts } from './install.js';

const configurationName = 'faults.sim.kubevirt.corral.dev';
const virtApiUser = `system:serviceaccount:${kubevirtNamespace}:${serviceAccounts.api}`;
const restorePath = '/clone-restore';
const runningStrategies = new Set(['Always', 'RerunOnFailure', 'Once']);

type VmChange = Pick<VirtualMachine, 'metadata' | 'spec' | 'status'>;

function wantsToRun(vm: VmChange | undefined): boolean {
  const spec = vm?.spec as { running?: boolean; runStrategy?: string } | undefined;
  return spec?.running === true || runningStrategies.has(spec?.runStrategy ?? '');
}

function requestedActions(vm: VmChange | undefined): string[] {
  const requests = (vm?.status as { stateChangeRequests?: { action?: string }[] } | undefined)
    ?.stateChangeRequests;
  return (requests ?? []).map((request) => request.action ?? '');
}

/**
 * Which power change virt-api's write of a VM asks for: its `start` and `stop` subresources either turn the run
 * strategy (`Halted` ↔ `Always`) or, for `Manual` and `RerunOnFailure`, add a state change request to the status.
 */
export function powerChangeOf(old: VmChange | undefined, updated: VmChange): 'start' | 'stop' | undefined {
  const added = requestedActions(updated).filter((action) => !requestedActions(old).includes(action));
  if (added.includes('Start')) return 'start';
  if (added.includes('Stop')) return 'stop';
  if (!wantsToRun(old) && wantsToRun(updated)) return 'start';
  if (wantsToRun(old) && !wantsToRun(updated)) return 'stop';
  return undefined;
}

/**
 * The refusal a VM's knob asks of a write, as the simulator's: `fail-start` refuses every write that starts the VM
 * (virt-api's `start`, or a client turning the run strategy itself), `fail-stop` virt-api's write of a `stop`.
 */
export function injectedRefusal(
  user: string | undefined,
  old: VmChange | undefined,
  updated: VmChange,
): InjectedFailure | undefined {
  const knobs = readVmKnobs(updated.metadata?.annotations).knobs;
  const change = powerChangeOf(old, updated);
  if (change === 'start') return knobs.failStart;
  if (change === 'stop' && user === virtApiUser) return knobs.failStop;
  return undefined;
}

// Only a VM that carries a power knob can be refused: the apiserver sends no other VM write (most are
// virt-controller's status writes), which spares each of them a round trip here.
const powerKnobCondition: V1MatchCondition = {
  name: 'carries-a-power-knob',
  expression: `has(object.metadata.annotations) && ${[
    simulatorAnnotations.failStart,
    simulatorAnnotations.failStop,
  ]
    .map((knob) => `'${knob}' in object.metadata.annotations`)
    .join(' || ')}`,
};

/** A running webhook that refuses the writes a test's knobs name. */
export interface FaultWebhook {
  stop(): Promise<void>;
}

function restoreRefusalOf(cloneFaults: CloneFaults, restore: RestoreObject): InjectedFailure | undefined {
  const message = cloneFaults.refusesRestore(restore);
  return message === undefined ? undefined : { status: 500, message };
}

interface AdmissionReview {
  request: {
    uid: string;
    userInfo?: { username?: string };
    object: VmChange & RestoreObject;
    oldObject?: VmChange;
  };
}

async function answer(
  request: IncomingMessage,
  response: ServerResponse,
  cloneFaults: CloneFaults,
  log: (line: string) => void,
) {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const { uid, userInfo, object, oldObject } = (
    JSON.parse(Buffer.concat(chunks).toString('utf8')) as AdmissionReview
  ).request;
  // the apiserver adds `?timeout=…` to the path
  const isRestore = new URL(request.url ?? '/', 'https://webhook').pathname === restorePath;
  const refusal = isRestore
    ? restoreRefusalOf(cloneFaults, object)
    : injectedRefusal(userInfo?.username, oldObject, object);
  if (refusal) log(`the fault webhook refuses a write of ${object.metadata?.namespace}: ${refusal.message}`);
  const text = JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    response: refusal
      ? { uid, allowed: false, status: { code: refusal.status, message: refusal.message } }
      : { uid, allowed: true },
  });
  response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  response.end(text);
}

/**
 * Expresses the simulator's `fail-start` and `fail-stop` knobs through KubeVirt's own virt-api: a validating
 * webhook on VM writes that refuses a start or stop for a VM whose knob asks it to ({@link injectedRefusal}). A
 * refused write of virt-api's fails its subresource as when the apiserver refuses it (virt-api answers 500 with
 * the refusal's message); a client's own write gets the knob's status. A second webhook refuses the restore of a
 * clone whose `fail` knob {@link CloneFaults} carries out. It ignores every other write, and the apiserver ignores
 * it when it is down.
 */
export async function startFaultWebhook(
  kubeConfig: KubeConfig,
  tls: ApiserverFacingTls & { caPem: string },
  log: (line: string) => void,
): Promise<FaultWebhook> {
  const cloneFaults = await startCloneFaults(kubeConfig, log);
  const server = createApiserverFacingServer(tls, (request, response) => {
    answer(request, response, cloneFaults, log).catch((error: Error) => {
      log(`the fault webhook could not answer: ${error.message}`);
      response.writeHead(500).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const admission = kubeConfig.makeApiClient(AdmissionregistrationV1Api);
  const caBundle = Buffer.from(tls.caPem).toString('base64');
  // ignored when this process is gone, so a plane left running never refuses writes for a server that is not there
  const webhookOn = (
    name: string,
    path: string,
    rule: V1RuleWithOperations,
    matchConditions: V1MatchCondition[] = [],
  ): V1ValidatingWebhook => ({
    name: `${name}.${configurationName}`,
    clientConfig: { url: `https://127.0.0.1:${port}${path}`, caBundle },
    rules: [rule],
    matchConditions,
    failurePolicy: 'Ignore',
    sideEffects: 'None',
    admissionReviewVersions: ['v1'],
    timeoutSeconds: 5,
  });
  const configuration = {
    metadata: { name: configurationName },
    webhooks: [
      webhookOn(
        'vm-power',
        '/vm-power',
        {
          apiGroups: ['kubevirt.io'],
          apiVersions: ['v1'],
          operations: ['UPDATE'],
          resources: ['virtualmachines', 'virtualmachines/status'],
        },
        [powerKnobCondition],
      ),
      webhookOn('clone-restore', restorePath, {
        apiGroups: ['snapshot.kubevirt.io'],
        apiVersions: ['v1beta1'],
        operations: ['CREATE'],
        resources: ['virtualmachinerestores'],
      }),
    ],
  };
  await upsert(
    () => admission.readValidatingWebhookConfiguration({ name: configurationName }),
    () => admission.createValidatingWebhookConfiguration({ body: configuration }),
    (_, resourceVersion) =>
      admission.replaceValidatingWebhookConfiguration({
        name: configurationName,
        body: { ...configuration, metadata: { ...configuration.metadata, resourceVersion } },
      }),
  );
  return {
    stop: async () => {
      cloneFaults.stop();
      await unlessNotFound(admission.deleteValidatingWebhookConfiguration({ name: configurationName }));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
