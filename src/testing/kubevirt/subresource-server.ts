import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import type { VirtualMachine, VirtualMachineInstance } from '../../kubevirt-types.js';
import { createApiserverFacingServer } from '../apiserver-facing-server.js';
import { answerKubevirtAdmission, isKubevirtAdmission } from './admission-webhook.js';
import { type ConsoleSubresource, createConsoleServer, isFromFrontProxy } from './console-server.js';
import { readVmKnobs } from './fault-knobs.js';
import { httpStatusOf, kubevirtResources, mergePatch, unlessNotFound } from './kube-calls.js';
import { planSubresource, planVmAdmission, type VmAction } from './run-strategy.js';

/** The aggregated API group of KubeVirt's VM subresources. */
export const subresourceGroup = 'subresources.kubevirt.io';

const reasons: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  409: 'Conflict',
  422: 'Invalid',
  429: 'TooManyRequests',
  503: 'ServiceUnavailable',
};

/** A Kubernetes `Status` failure body, as virt-api answers. */
export function failureStatus(code: number, message: string, name?: string): Record<string, unknown> {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason: reasons[code] ?? (code >= 500 ? 'InternalError' : 'Unknown'),
    ...(name === undefined ? {} : { details: { name, group: 'kubevirt.io', kind: 'virtualmachine' } }),
    code,
  };
}

const discovery = {
  kind: 'APIResourceList',
  apiVersion: 'v1',
  groupVersion: `${subresourceGroup}/v1`,
  resources: [
    ...(['start', 'stop', 'restart'] as const).map((action) => ({
      name: `virtualmachines/${action}`,
      singularName: '',
      namespaced: true,
      kind: 'VirtualMachine',
      verbs: ['update'],
    })),
    ...(['vnc', 'console', 'usbredir'] as const).map((console) => ({
      name: `virtualmachineinstances/${console}`,
      singularName: '',
      namespaced: true,
      kind: 'VirtualMachineInstance',
      verbs: ['get'],
    })),
  ],
};

const groupVersion = { groupVersion: `${subresourceGroup}/v1`, version: 'v1' };
const group = {
  kind: 'APIGroup',
  apiVersion: 'v1',
  name: subresourceGroup,
  versions: [groupVersion],
  preferredVersion: groupVersion,
};

const actionPath = new RegExp(
  `^/apis/${subresourceGroup.replace(/\./g, '\\.')}/v1/namespaces/([^/]+)/virtualmachines/([^/]+)/(start|stop|restart)$`,
);

const consolePath = new RegExp(
  `^/apis/${subresourceGroup.replace(/\./g, '\\.')}/v1/namespaces/([^/]+)/virtualmachineinstances/([^/]+)/(vnc|console|usbredir)$`,
);

/** Where the apiserver sends the VM writes it asks the simulator's validating webhook about. */
export const vmAdmissionPath = '/validate-virtualmachines';

/** The parts of an `admission.k8s.io/v1` AdmissionReview of a VM write that the webhook reads. */
interface AdmissionReview {
  request: { uid: string; object: VirtualMachine; oldObject?: VirtualMachine };
}

/** Options of {@link startSubresourceServer}. */
export interface SubresourceServerOptions {
  /** The simulator's own (administrator) access, for reading and patching VMs. */
  kubeConfig: KubeConfig;
  servingCertPem: string;
  servingKeyPem: string;
  /** The CA of the apiserver's front-proxy client certificate. */
  frontProxyCaPem: string;
  log: (line: string) => void;
}

/** A running subresource server. */
export interface SubresourceServer {
  port: number;
  /** How many requests arrived through the apiserver's front proxy, for telling when the aggregator routes here. */
  proxiedRequests(): number;
  /** Tells the console server a VMI changed, so the consoles of one that stopped close. */
  vmiChanged(key: string, vmi: VirtualMachineInstance | undefined): void;
  close(): Promise<void>;
}

function send(response: ServerResponse, code: number, body?: unknown): void {
  const text = body === undefined ? '' : JSON.stringify(body);
  response.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  response.end(text);
}

// Conflicts read like virt-api's: the apimachinery wording around KubeVirt's reason.
function refusal(code: number, message: string, name: string): Record<string, unknown> {
  if (code === 409)
    return failureStatus(
      409,
      `Operation cannot be fulfilled on virtualmachine.kubevirt.io "${name}": ${message}`,
      name,
    );
  if (code === 500) return failureStatus(500, `Internal error occurred: ${message}`, name);
  return failureStatus(code, message, name);
}

/**
 * Serves `subresources.kubevirt.io/v1` over HTTPS on a free port of 127.0.0.1: discovery, `PUT` of a VM's
 * `start`, `stop` and `restart` with virt-api's semantics, and the websocket upgrades of a VMI's `vnc` and
 * `console` (see {@link createConsoleServer}). The apiserver's aggregator has already checked RBAC;
 * the server trusts the caller's identity only from a client certificate signed by the front-proxy CA.
 */
export async function startSubresourceServer(options: SubresourceServerOptions): Promise<SubresourceServer> {
  const { log } = options;
  const api = options.kubeConfig.makeApiClient(CustomObjectsApi);
  const consoles = createConsoleServer({ kubeConfig: options.kubeConfig, log });
  let proxied = 0;

  const act = async (namespace: string, name: string, action: VmAction): Promise<[number, unknown]> => {
    const vmRef = { ...kubevirtResources.vm, namespace, name };
    for (let attempt = 0; attempt < 5; attempt += 1) {
      const vm = (await unlessNotFound(api.getNamespacedCustomObject(vmRef))) as VirtualMachine | undefined;
      if (!vm) return [404, failureStatus(404, `virtualmachine.kubevirt.io "${name}" not found`, name)];
      const vmi = (await unlessNotFound(
        api.getNamespacedCustomObject({ ...kubevirtResources.vmi, namespace, name }),
      )) as VirtualMachineInstance | undefined;
      const plan = planSubresource(action, vm, vmi, readVmKnobs(vm.metadata.annotations).knobs);
      if (plan.kind === 'refuse') return [plan.status, refusal(plan.status, plan.message, name)];
      const precondition = { resourceVersion: vm.metadata.resourceVersion };
      try {
        if (plan.kind === 'patch-spec') {
          await api.patchNamespacedCustomObject(
            { ...vmRef, body: { metadata: precondition, spec: plan.spec } },
            mergePatch,
          );
        } else {
          const body = { metadata: precondition, status: { stateChangeRequests: plan.stateChangeRequests } };
          await api.patchNamespacedCustomObjectStatus({ ...vmRef, body }, mergePatch);
        }
        return [202, {}];
      } catch (error) {
        // The VM changed between read and write (the controller updates its status often): decide again.
        if (httpStatusOf(error) !== 409) throw error;
      }
    }
    return [409, refusal(409, 'the VM kept changing; try again', name)];
  };

  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? '/', 'https://localhost');
    const socket = request.socket as TLSSocket;
    const fromFrontProxy = socket.authorized === true && typeof request.headers['x-remote-user'] === 'string';
    if (fromFrontProxy) proxied += 1;
    if (request.method === 'GET') {
      if (url.pathname === '/apis')
        return send(response, 200, { kind: 'APIGroupList', apiVersion: 'v1', groups: [group] });
      if (url.pathname === `/apis/${subresourceGroup}`) return send(response, 200, group);
      if (url.pathname === `/apis/${subresourceGroup}/v1`) return send(response, 200, discovery);
      if (url.pathname === '/healthz' || url.pathname === '/readyz') return send(response, 200, 'ok');
    }
    const match = actionPath.exec(url.pathname);
    // No /openapi/v2 on purpose: each spec the aggregator downloads makes it rebuild its whole OpenAPI document,
    // seconds of CPU on a small machine, while a 404 only makes it retry with backoff.
    if (!match) return send(response, 404, failureStatus(404, `the server could not find ${url.pathname}`));
    if (request.method !== 'PUT')
      return send(response, 405, failureStatus(405, `${request.method} is not supported; use PUT`));
    if (!fromFrontProxy) {
      return send(
        response,
        401,
        failureStatus(401, 'requests must come through the apiserver (front-proxy client certificate)'),
      );
    }
    const [, namespace = '', name = '', action = 'start'] = match.map((part) => decodeURIComponent(part));
    const [code, body] = await act(namespace, name, action as VmAction);
    log(`${request.headers['x-remote-user']} ${action} ${namespace}/${name}: ${code}`);
    send(response, code, body);
  };

  // The apiserver calls this webhook itself, without the front-proxy certificate: it only answers a decision.
  const admit = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const review = JSON.parse(Buffer.concat(chunks).toString('utf8')) as AdmissionReview;
    const { uid, object, oldObject } = review.request;
    const decision = planVmAdmission(oldObject, object, readVmKnobs(object.metadata.annotations).knobs);
    if (!decision.allowed)
      log(`admission refuses the start of ${object.metadata.namespace}/${object.metadata.name}`);
    send(response, 200, {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: decision.allowed
        ? { uid, allowed: true }
        : { uid, allowed: false, status: { code: decision.status, message: decision.message } },
    });
  };

  const server: Server = createApiserverFacingServer(
    { certPem: options.servingCertPem, keyPem: options.servingKeyPem, clientCaPem: options.frontProxyCaPem },
    (request, response) => {
      const admission =
        request.method === 'POST' &&
        new URL(request.url ?? '/', 'https://localhost').pathname === vmAdmissionPath;
      const kubevirtAdmission = isKubevirtAdmission(request);
      // The body of a subresource call (StartOptions, StopOptions) carries nothing the simulator uses; drain it.
      if (!admission && !kubevirtAdmission) request.resume();
      const answering = admission
        ? admit(request, response)
        : kubevirtAdmission
          ? answerKubevirtAdmission(request, response, log)
          : handle(request, response);
      answering.catch((error: unknown) => {
        log(`subresource ${request.method} ${request.url} failed: ${(error as Error).message}`);
        if (!response.headersSent)
          send(response, 500, failureStatus(500, `Internal error occurred: ${(error as Error).message}`));
      });
    },
  );
  server.on('upgrade', (request: IncomingMessage, socket, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    const url = new URL(request.url ?? '/', 'https://localhost');
    const match = consolePath.exec(url.pathname);
    const refuse = (code: number, message: string) => {
      const body = JSON.stringify(failureStatus(code, message));
      socket.end(
        `HTTP/1.1 ${code} ${reasons[code]}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
      );
    };
    if (!match || request.method !== 'GET') return refuse(404, `the server could not find ${url.pathname}`);
    if (!isFromFrontProxy(request))
      return refuse(401, 'requests must come through the apiserver (front-proxy client certificate)');
    proxied += 1;
    const [, namespace = '', name = '', subresource = 'vnc'] = match.map((part) => decodeURIComponent(part));
    log(`${request.headers['x-remote-user']} ${subresource} ${namespace}/${name}`);
    consoles
      .upgrade(request, socket, head, { namespace, name, subresource: subresource as ConsoleSubresource })
      .catch((error: unknown) => {
        log(`${subresource} ${namespace}/${name} failed: ${(error as Error).message}`);
        if (socket.writable) refuse(503, `Internal error occurred: ${(error as Error).message}`);
      });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    port,
    proxiedRequests: () => proxied,
    vmiChanged: consoles.vmiChanged,
    close: () =>
      new Promise<void>((resolve) => {
        consoles.close();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
