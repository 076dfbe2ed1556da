import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  AdmissionregistrationV1Api,
  CustomObjectsApi,
  type KubeConfig,
  type V1ValidatingWebhook,
  type V1ValidatingWebhookConfiguration,
} from '@kubernetes/client-node';
import { VdiError } from '../../errors.js';
import { type AdmissionRefusal, admitVirtualMachine, admitVirtualMachineClone } from './admission-rules.js';
import { kubevirtResources, unlessNotFound, upsert } from './kube-calls.js';
import { pause } from './pause.js';

/** The paths and webhook names of KubeVirt's virt-api, so refusals read exactly as KubeVirt's. */
export const kubevirtWebhooks = {
  vm: { name: 'virtualmachine-validator.kubevirt.io', path: '/virtualmachines-validate' },
  clone: { name: 'vm-clone-validator.kubevirt.io', path: '/vm-clone-validate-create' },
} as const;

const configurationName = 'virt-api-validator.sim.kubevirt.corral.dev';

const rulesByPath: Record<string, (object: unknown) => AdmissionRefusal | undefined> = {
  [kubevirtWebhooks.vm.path]: admitVirtualMachine,
  [kubevirtWebhooks.clone.path]: admitVirtualMachineClone,
};

/** Whether a request to the simulator's server is the apiserver asking one of KubeVirt's webhooks. */
export function isKubevirtAdmission(request: IncomingMessage): boolean {
  const { pathname } = new URL(request.url ?? '/', 'https://localhost');
  return request.method === 'POST' && pathname in rulesByPath;
}

/** Answers an `admission.k8s.io/v1` AdmissionReview as virt-api does: allowed, or its refusal as the status. */
export async function answerKubevirtAdmission(
  request: IncomingMessage,
  response: ServerResponse,
  log: (line: string) => void,
): Promise<void> {
  const { pathname } = new URL(request.url ?? '/', 'https://localhost');
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const review = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
    request: { uid: string; object: { metadata?: { namespace?: string; name?: string } } };
  };
  const { uid, object } = review.request;
  const refusal = rulesByPath[pathname]?.(object);
  if (refusal)
    log(`${pathname} refuses ${object.metadata?.namespace}/${object.metadata?.name}: ${refusal.message}`);
  const status = refusal && {
    code: refusal.code,
    reason: refusal.reason,
    message: refusal.message,
    details: { causes: refusal.causes },
  };
  const text = JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    response: status ? { uid, allowed: false, status } : { uid, allowed: true },
  });
  response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  response.end(text);
}

function webhook(
  { name, path }: { name: string; path: string },
  url: string,
  caBundle: string,
  rule: { apiGroup: string; version: string; resource: string },
): V1ValidatingWebhook {
  return {
    name,
    clientConfig: { url: `${url}${path}`, caBundle },
    rules: [
      {
        apiGroups: [rule.apiGroup],
        apiVersions: [rule.version],
        operations: ['CREATE', 'UPDATE'],
        resources: [rule.resource],
      },
    ],
    // As KubeVirt's: a write its rules were not asked about fails rather than slipping through a test unchecked.
    failurePolicy: 'Fail',
    sideEffects: 'None',
    admissionReviewVersions: ['v1'],
    timeoutSeconds: 10,
  };
}

/**
 * Registers KubeVirt's VM and clone validating webhooks, served at `url` (`https://127.0.0.1:<port>`), whose
 * certificate `caPem` signed. Clones are watched in `v1beta1` as KubeVirt does; the apiserver converts `v1alpha1`
 * writes for it.
 */
export async function registerKubevirtWebhooks(
  kubeConfig: KubeConfig,
  url: string,
  caPem: string,
): Promise<void> {
  const admission = kubeConfig.makeApiClient(AdmissionregistrationV1Api);
  const caBundle = Buffer.from(caPem).toString('base64');
  const configuration: V1ValidatingWebhookConfiguration = {
    metadata: { name: configurationName },
    webhooks: [
      webhook(kubevirtWebhooks.vm, url, caBundle, {
        apiGroup: 'kubevirt.io',
        version: 'v1',
        resource: 'virtualmachines',
      }),
      webhook(kubevirtWebhooks.clone, url, caBundle, {
        apiGroup: 'clone.kubevirt.io',
        version: 'v1beta1',
        resource: 'virtualmachineclones',
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
}

const vmRef = { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: 'webhook-probe' };

// dry-run writes that each webhook refuses, so that a refusal shows the apiserver calls it
const probes = [
  {
    webhook: kubevirtWebhooks.vm.name,
    resource: kubevirtResources.vm,
    body: {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachine',
      metadata: { name: 'webhook-probe' },
      spec: { running: false, runStrategy: 'Halted', template: { spec: { domain: { devices: {} } } } },
    },
  },
  {
    webhook: kubevirtWebhooks.clone.name,
    resource: kubevirtResources.clone,
    body: {
      apiVersion: 'clone.kubevirt.io/v1beta1',
      kind: 'VirtualMachineClone',
      metadata: { name: 'webhook-probe' },
      spec: { source: vmRef, target: vmRef },
    },
  },
];

// Whether the apiserver asked the probe's webhook about a dry-run write of its object and was refused.
async function isProbeRefused(custom: CustomObjectsApi, probe: (typeof probes)[number]): Promise<boolean> {
  return await custom
    .createNamespacedCustomObject({
      ...probe.resource,
      namespace: 'default',
      body: probe.body,
      dryRun: 'All',
    })
    .then(
      () => false,
      (error: unknown) => {
        const text = String((error as { body?: unknown }).body ?? error);
        return text.includes(probe.webhook) && text.includes('denied the request');
      },
    );
}

/** Waits until the apiserver calls KubeVirt's webhooks, which it picks up a moment after they are written. */
export async function waitUntilKubevirtWebhooksAdmit(kubeConfig: KubeConfig): Promise<void> {
  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  const deadline = Date.now() + 30_000;
  for (const probe of probes) {
    while (!(await isProbeRefused(custom, probe))) {
      if (Date.now() > deadline) {
        throw new VdiError(
          'CONTROL_PLANE_FAILED',
          `The simulator's validating webhook ${probe.webhook} was not called within 30 s; check that kube-apiserver can reach 127.0.0.1.`,
        );
      }
      await pause(100);
    }
  }
}

/**
 * Removes KubeVirt's webhooks and waits, up to 10 s, until the apiserver stops calling them: until then it would
 * still send writes to a server about to close, and fail them.
 */
export async function unregisterKubevirtWebhooks(kubeConfig: KubeConfig): Promise<void> {
  await unlessNotFound(
    kubeConfig
      .makeApiClient(AdmissionregistrationV1Api)
      .deleteValidatingWebhookConfiguration({ name: configurationName }),
  );
  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  const deadline = Date.now() + 10_000;
  for (const probe of probes) {
    while (Date.now() < deadline && (await isProbeRefused(custom, probe))) await pause(100);
  }
}
