import { AuthorizationV1Api, type KubeConfig, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { WebSocket } from 'ws';
import { openKubeWebSocket } from '../../../src/kube/websocket.js';
import { usbredirSlots } from '../../../src/testing/kubevirt/console-server.js';
import { simulatorAnnotations } from '../../../src/testing/kubevirt/fault-knobs.js';
import {
  encodeUsbredirPacket,
  helloVersion,
  simulatedGuestVersion,
  usbredirHeaderBytes,
  usbredirHello,
  usbredirPacketLabel,
} from '../../../src/testing/kubevirt/usbredir-guest.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createTestNamespace, useSharedCluster } from '../../support/cluster.js';
import { createByteReader } from '../../support/rfb-client.js';
import { kubevirtObjects, putSubresource, sampleVm } from './simulator-support.js';

const cluster = useSharedCluster();
const withPassthrough = { clientPassthrough: {}, interfaces: [{ name: 'default', masquerade: {} }] };
const bulkPacket = 101;

async function vmWith(
  name: string,
  devices: Record<string, unknown>,
  annotations: Record<string, string> = {},
) {
  const namespace = await createTestNamespace(cluster(), 'usbredir');
  const objects = kubevirtObjects(cluster().kubeConfig, namespace);
  const vm = sampleVm(name, {}, annotations);
  const template = vm.spec.template as { spec: { domain: { devices: unknown } } };
  template.spec.domain.devices = devices;
  await objects.createVm(vm);
  await putSubresource(cluster().kubeConfig, namespace, name, 'start');
  return { namespace, objects };
}

async function runningVm(name: string, devices: Record<string, unknown> = withPassthrough) {
  const made = await vmWith(name, devices);
  await waitFor(() => made.objects.getVmi(name), {
    describe: `the VMI ${name} runs`,
    until: (vmi) => vmi?.status?.phase === 'Running',
  });
  return made;
}

function openUsbredir(namespace: string, name: string, kubeConfig: KubeConfig = cluster().kubeConfig) {
  const path = `/apis/subresources.kubevirt.io/v1/namespaces/${namespace}/virtualmachineinstances/${name}/usbredir`;
  return openKubeWebSocket(kubeConfig, path, {
    protocol: 'plain.kubevirt.io',
    maxPayload: 1 << 22,
    doing: `open usbredir of ${namespace}/${name}`,
  });
}

function closed(socket: WebSocket): Promise<{ code: number; reason: string }> {
  return new Promise((resolve) =>
    socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
}

/** Reads one usbredir packet (header and payload) from the stream. */
async function readPacket(read: (length: number) => Promise<Buffer>): Promise<Buffer> {
  const header = await read(usbredirHeaderBytes);
  return Buffer.concat([header, await read(header.readUInt32LE(4))]);
}

describe("the simulator's usbredir subresource, through the real apiserver", () => {
  it("greets with the guest's hello, echoes each data packet after the client's hello, and records them in order", async () => {
    const { namespace, objects } = await runningVm('desk-usb');
    const socket = await openUsbredir(namespace, 'desk-usb');
    try {
      expect(socket.protocol).toBe('plain.kubevirt.io');
      const read = createByteReader(socket);
      const greeting = await readPacket(read);
      expect(greeting.readUInt32LE(0)).toBe(0);
      expect(helloVersion(greeting.subarray(usbredirHeaderBytes))).toBe(simulatedGuestVersion);

      const hello = usbredirHello('usbredir 0.14.0');
      const data = [1, 2, 3].map((id) =>
        encodeUsbredirPacket({ type: bulkPacket, id, payload: Buffer.alloc(id * 700, id) }),
      );
      // packets split across websocket messages at odd places, as a TCP relay may cut them
      const stream = Buffer.concat([hello, ...data]);
      for (let at = 0; at < stream.length; at += 333) socket.send(stream.subarray(at, at + 333));

      for (const packet of data) expect((await readPacket(read)).equals(packet)).toBe(true);
      const labels = [hello, ...data].map((packet) =>
        usbredirPacketLabel({
          type: packet.readUInt32LE(0),
          id: packet.readUInt32LE(8),
          payload: packet.subarray(usbredirHeaderBytes),
        }),
      );
      await waitFor(() => objects.getVmi('desk-usb'), {
        describe: 'the packets are recorded on the VMI',
        until: (vmi) =>
          vmi?.metadata.annotations?.[simulatorAnnotations.usbredirPackets] === labels.join(' '),
      });
    } finally {
      socket.terminate();
    }
  });

  it('closes a connection whose first packet is no hello with 1002, and one whose VM stops with 1000', async () => {
    const { namespace } = await runningVm('desk-usb-close');
    const rude = await openUsbredir(namespace, 'desk-usb-close');
    const rudeEnd = closed(rude);
    rude.resume();
    rude.send(encodeUsbredirPacket({ type: bulkPacket, id: 1, payload: Buffer.from('early') }));
    expect(await rudeEnd).toEqual({
      code: 1002,
      reason: 'usbredir must start with hello, not a packet of type 101',
    });

    const attached = await openUsbredir(namespace, 'desk-usb-close');
    const attachedEnd = closed(attached);
    attached.resume();
    await putSubresource(cluster().kubeConfig, namespace, 'desk-usb-close', 'stop');
    expect(await attachedEnd).toEqual({ code: 1000, reason: 'the VirtualMachineInstance stopped' });
  });

  it(`takes ${usbredirSlots} connections to one VMI at once and refuses the next as virt-api does, until one closes`, async () => {
    const { namespace } = await runningVm('desk-usb-slots');
    const open = await Promise.all(
      Array.from({ length: usbredirSlots }, () => openUsbredir(namespace, 'desk-usb-slots')),
    );
    try {
      await expect(openUsbredir(namespace, 'desk-usb-slots')).rejects.toMatchObject({
        code: 'CLUSTER_UNAVAILABLE',
        details: { status: 500, reason: 'InternalError' },
        message: expect.stringContaining(
          "Internal error occurred: Can't connect to websocket (503): websocket: bad handshake",
        ),
      });
      open.shift()?.terminate();
      // the slot frees once the simulator sees the connection end through the apiserver's proxy
      const again = await waitFor(() => openUsbredir(namespace, 'desk-usb-slots'), {
        describe: 'a fifth connection once one of four has ended',
      });
      open.push(again);
      expect(again.protocol).toBe('plain.kubevirt.io');
    } finally {
      for (const socket of open) socket.terminate();
    }
  });

  it('refuses a VMI without clientPassthrough with 409 and one that does not run with 400, before any upgrade', async () => {
    const plain = await runningVm('desk-plain', { interfaces: [{ name: 'default', masquerade: {} }] });
    await expect(openUsbredir(plain.namespace, 'desk-plain')).rejects.toMatchObject({
      code: 'CONFLICT',
      details: { status: 409, reason: 'Conflict' },
      message: expect.stringContaining(
        'Operation cannot be fulfilled on virtualmachineinstance.kubevirt.io "desk-plain": Not configured with USB Redirection',
      ),
    });

    const waiting = await vmWith('desk-waiting', withPassthrough, {
      [simulatorAnnotations.neverReady]: 'true',
    });
    await waitFor(() => waiting.objects.getVmi('desk-waiting'), {
      describe: 'the VMI of desk-waiting to exist without running',
      until: (vmi) => vmi?.status?.phase === 'Scheduling',
    });
    await expect(openUsbredir(waiting.namespace, 'desk-waiting')).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      details: { status: 400, reason: 'BadRequest' },
      message: expect.stringContaining('VMI is not running'),
    });
    await expect(openUsbredir(waiting.namespace, 'desk-none')).rejects.toMatchObject({
      code: 'NOT_FOUND',
      message: expect.stringContaining('virtualmachineinstance.kubevirt.io "desk-none" not found'),
    });
  });

  it('needs get on virtualmachineinstances/usbredir in subresources.kubevirt.io, which the apiserver checks', async () => {
    const { namespace } = await runningVm('desk-usb-rbac');
    const rbac = cluster().kubeConfig.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace,
      body: {
        metadata: { name: 'usb-user' },
        rules: [
          {
            apiGroups: ['subresources.kubevirt.io'],
            resources: ['virtualmachineinstances/usbredir'],
            verbs: ['get'],
          },
        ],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: 'usb-user' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'usb-user' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'usb-user' }],
      },
    });
    const reviews = cluster().kubeConfig.makeApiClient(AuthorizationV1Api);
    await waitFor(
      async () =>
        (
          await reviews.createSubjectAccessReview({
            body: {
              spec: {
                user: 'usb-user',
                resourceAttributes: {
                  namespace,
                  group: 'subresources.kubevirt.io',
                  resource: 'virtualmachineinstances',
                  subresource: 'usbredir',
                  verb: 'get',
                },
              },
            },
          })
        ).status?.allowed === true,
      { describe: 'usb-user to be granted get on virtualmachineinstances/usbredir' },
    );

    await expect(
      openUsbredir(namespace, 'desk-usb-rbac', cluster().userKubeConfig('no-usb-user')),
    ).rejects.toMatchObject({
      code: 'FORBIDDEN',
      message: expect.stringContaining(
        'cannot get resource "virtualmachineinstances/usbredir" in API group "subresources.kubevirt.io"',
      ),
    });
    const granted = await openUsbredir(namespace, 'desk-usb-rbac', cluster().userKubeConfig('usb-user'));
    granted.terminate();
  });
});
