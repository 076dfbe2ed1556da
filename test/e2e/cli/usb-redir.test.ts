import { existsSync, readFileSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { KubeCluster } from '../../../src/kube/cluster.js';
import { simulatorAnnotations } from '../../../src/testing/kubevirt/fault-knobs.js';
import { usbredirHeaderBytes, usbredirPacketLabel } from '../../../src/testing/kubevirt/usbredir-guest.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { usbSecurityNotice } from '../../../src/usb/security-notice.js';
import { kubevirtVirtctl, usbredirectStandIn } from '../../support/virtctl.js';
import { createFakeCommands, type FakeCommands } from '../../unit/connect-planner/fake-commands.js';
import {
  cliEnv,
  cliFor,
  collectOutput,
  createGoldenVm,
  createNamespace,
  startCli,
  useCliCluster,
  waitForVmiAddress,
} from './cli-support.js';

// KubeVirt's virtctl runs for real; usbredirect, which needs a USB device, is the stand-in of test/support.
const cluster = useCliCluster();
const { cli } = cliFor(cluster);

let virtctl: string;
beforeAll(() => {
  virtctl = kubevirtVirtctl();
}, 20 * 60_000);

let fakes: FakeCommands;
beforeEach(() => {
  fakes = createFakeCommands();
});
afterEach(() => fakes.remove());

describe("corral-vdi usb redir with KubeVirt's virtctl", () => {
  it("attaches the device through the apiserver to the desktop until Ctrl-C, then exits with virtctl's code", async () => {
    const namespace = await createNamespace(cluster(), 'usb-e2e');
    await createGoldenVm(cluster(), namespace, 'golden-desktop', { clientPassthrough: {} });
    const created = await cli([
      'pool',
      'create',
      'devpool',
      '--from',
      'golden-desktop',
      '--size',
      '1',
      '-n',
      namespace,
    ]);
    expect(created.code, created.stderr).toBe(0);
    expect((await cli(['assign', 'devpool', 'alice', '-n', namespace])).code).toBe(0);
    await waitForVmiAddress(cluster(), namespace, 'devpool-1');

    const report = join(fakes.dir, 'usbredirect.report.json');
    symlinkSync(virtctl, join(fakes.dir, 'virtctl'));
    fakes.install('usbredirect', [
      `USBREDIRECT_REPORT='${report}' exec '${process.execPath}' '${usbredirectStandIn}' "$@"`,
    ]);
    // virtctl finds the cluster through KUBECONFIG, as docs/usb.md says
    const env = cliEnv({
      PATH: `${fakes.dir}:${dirname(process.execPath)}`,
      KUBECONFIG: cluster().kubeconfigPath,
    });
    const kubeconfig = ['--kubeconfig', cluster().kubeconfigPath];
    const child = startCli(
      ['usb', 'redir', 'devpool-1', '--device', '1-5', '--user', 'alice', '-n', namespace, ...kubeconfig],
      env,
    );
    const output = collectOutput(child);
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));

    const done = await waitFor(
      () =>
        existsSync(report)
          ? (JSON.parse(readFileSync(report, 'utf8')) as { sent: string[]; echoed: string[] })
          : undefined,
      { describe: 'the usbredirect stand-in to have its packets echoed' },
    );
    expect(fakes.argvOf('usbredirect').slice(0, 3)).toEqual(['--device', '1-5', '--to']);
    expect(done.echoed).toEqual(done.sent.slice(1));
    const labels = done.sent.map((hex) => {
      const packet = Buffer.from(hex, 'hex');
      return usbredirPacketLabel({
        type: packet.readUInt32LE(0),
        id: packet.readUInt32LE(8),
        payload: packet.subarray(usbredirHeaderBytes),
      });
    });
    await waitFor(() => new KubeCluster(cluster().kubeConfig).getVmi(namespace, 'devpool-1'), {
      describe: 'the simulated guest to record the packets in order',
      until: (vmi) => vmi?.metadata.annotations?.[simulatorAnnotations.usbredirPackets] === labels.join(' '),
    });

    child.kill('SIGINT');
    expect(await exited).toBe(1);
    expect(output.text()).toContain(usbSecurityNotice().heading);
    expect(output.text()).toContain('context canceled');
  });
});
