import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AdmissionregistrationV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { VirtualMachine } from '../../kubevirt-types.js';
import { type ApiserverFacingTls, createApiserverFacingServer } from '../apiserver-facing-server.js';
import { type InjectedFailure, readVmKnobs } from '../kubevirt/fault-knobs.js';
import { unlessNotFound, upsert } from '../kubevirt/kube-calls.js';
import { kubevirtNamespace, serviceAccounts } from './install.js';

const configurationName = 'faults.sim.kubevirt.corral.dev';
const virtApiUser = `system:serviceaccount:${kubevirtNamespace}:${serviceAccounts.api}`;
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

/** The refusal a VM's `fail-start` or `fail-stop` knob asks of virt-api's write, if any. */
export function injectedRefusal(
  user: string | undefined,
  old: VmChange | undefined,
  updated: VmChange,
): InjectedFailure | undefined {
  if (user !== virtApiUser) return undefined;
  const knobs = readVmKnobs(updated.metadata?.annotations).knobs;
  const change = powerChangeOf(old, updated);
  if (change === 'start') return knobs.failStart;
  if (change === 'stop') return knobs.failStop;
  return undefined;
}

/** A running webhook that refuses the writes a test's knobs name. */
export interface FaultWebhook {
  stop(): Promise<void>;
}

async function answer(request: IncomingMessage, response: ServerResponse, log: (line: string) => void) {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const review = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
    request: { uid: string; userInfo?: { username?: string }; object: VmChange; oldObject?: VmChange };
  };
  const { uid, userInfo, object, oldObject } = review.request;
  const refusal = injectedRefusal(userInfo?.username, oldObject, object);
  if (refusal)
    log(
      `the fault webhook refuses virt-api's write of ${object.metadata?.namespace}/${object.metadata?.name}`,
    );
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
 * webhook on VM writes that refuses virt-api's write of a start or stop for a VM whose knob asks it to, so the
 * subresource fails as it would when the apiserver refuses it (virt-api answers 500 with the refusal's message).
 * It ignores every other write, and the apiserver ignores it when it is down.
 */
export async function startFaultWebhook(
  kubeConfig: KubeConfig,
  tls: ApiserverFacingTls & { caPem: string },
  log: (line: string) => void,
): Promise<FaultWebhook> {
  const server = createApiserverFacingServer(tls, (request, response) => {
    answer(request, response, log).catch((error: Error) => {
      log(`the fault webhook could not answer: ${error.message}`);
      response.writeHead(500).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const admission = kubeConfig.makeApiClient(AdmissionregistrationV1Api);
  const configuration = {
    metadata: { name: configurationName },
    webhooks: [
      {
        name: `vm-power.${configurationName}`,
        clientConfig: {
          url: `https://127.0.0.1:${port}/vm-power`,
          caBundle: Buffer.from(tls.caPem).toString('base64'),
        },
        rules: [
          {
            apiGroups: ['kubevirt.io'],
            apiVersions: ['v1'],
            operations: ['UPDATE'],
            resources: ['virtualmachines', 'virtualmachines/status'],
          },
        ],
        failurePolicy: 'Ignore',
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
        timeoutSeconds: 5,
      },
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
      await unlessNotFound(admission.deleteValidatingWebhookConfiguration({ name: configurationName }));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
