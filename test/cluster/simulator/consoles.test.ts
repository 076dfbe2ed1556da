import { describe, expect, it } from 'vitest';
import type { WebSocket } from 'ws';
import { KubeCluster } from '../../../src/kube/cluster.js';
import { simulatorAnnotations } from '../../../src/testing/kubevirt/fault-knobs.js';
import { nameLayout, renderScreen, screenColours } from '../../../src/testing/kubevirt/rfb-screen.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createTestNamespace, useSharedCluster } from '../../support/cluster.js';
import { connectRfb, createByteReader } from '../../support/rfb-client.js';
import { kubevirtObjects, putSubresource, sampleVm } from './simulator-support.js';

const cluster = useSharedCluster();
const maxPayload = 1 << 22;

async function runningVm(name: string) {
  const namespace = await createTestNamespace(cluster(), 'consoles');
  const objects = kubevirtObjects(cluster().kubeConfig, namespace);
  await objects.createVm(sampleVm(name));
  await putSubresource(cluster().kubeConfig, namespace, name, 'start');
  await waitFor(() => objects.getVmi(name), {
    describe: `the VMI ${name} runs`,
    until: (vmi) => vmi?.status?.phase === 'Running',
  });
  return { namespace, objects, kube: new KubeCluster(cluster().kubeConfig) };
}

function closed(socket: WebSocket): Promise<{ code: number; reason: string }> {
  return new Promise((resolve) =>
    socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
}

describe("the simulator's console subresources, through the real apiserver", () => {
  it('serves vnc as an RFB 3.8 server whose screen shows the VM name and the last key typed', async () => {
    const { namespace, objects, kube } = await runningVm('desk-vnc');
    const socket = await kube.openVmiConsole(namespace, 'desk-vnc', 'vnc', maxPayload);
    try {
      expect(socket.protocol).toBe('plain.kubevirt.io');
      const rfb = await connectRfb(socket);
      expect([rfb.width, rfb.height, rfb.name]).toEqual([320, 200, 'desk-vnc']);
      const frame = await rfb.requestFrame();
      // the first lit pixel of "d" sits at the name's top-left corner, in the name's colour
      const { x, y } = nameLayout('desk-vnc');
      expect([...frame.rgb.subarray((y * 320 + x) * 3, (y * 320 + x) * 3 + 3)]).toEqual([
        ...screenColours.name,
      ]);
      expect(Buffer.from(frame.rgb).equals(Buffer.from(renderScreen({ name: 'desk-vnc' }).rgb))).toBe(true);

      const change = rfb.requestChange();
      rfb.typeKey(0x71);
      const after = await change;
      expect(
        Buffer.from(after.rgb).equals(Buffer.from(renderScreen({ name: 'desk-vnc', lastKeysym: 0x71 }).rgb)),
      ).toBe(true);
      await waitFor(() => objects.getVmi('desk-vnc'), {
        describe: 'the key press is recorded on the VMI',
        until: (vmi) => vmi?.metadata.annotations?.[simulatorAnnotations.vncKeys] === 'q',
      });
    } finally {
      socket.terminate();
    }
  });

  it('serves console as a serial line that echoes, and closes it when the VM stops', async () => {
    const { namespace, kube } = await runningVm('desk-serial');
    const socket = await kube.openVmiConsole(namespace, 'desk-serial', 'console', maxPayload);
    const ended = closed(socket);
    const read = createByteReader(socket);
    const banner = '\r\ndesk-serial serial console (echo)\r\n';
    expect((await read(Buffer.byteLength(banner))).toString()).toBe(banner);
    socket.send(Buffer.from('uptime\r'));
    expect((await read(7)).toString()).toBe('uptime\r');

    await putSubresource(cluster().kubeConfig, namespace, 'desk-serial', 'stop');
    expect((await ended).code).toBe(1000);
  });

  it('refuses the console of a VM that does not run before any upgrade', async () => {
    const namespace = await createTestNamespace(cluster(), 'consoles');
    await kubevirtObjects(cluster().kubeConfig, namespace).createVm(sampleVm('desk-off'));
    await expect(
      new KubeCluster(cluster().kubeConfig).openVmiConsole(namespace, 'desk-off', 'vnc', maxPayload),
    ).rejects.toMatchObject({ code: 'NOT_FOUND', details: { status: 404 } });
  });
});
