import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { isVdiError } from '../../../src/errors.js';
import type { VirtualMachine, VirtualMachineInstance, VmDevices } from '../../../src/kubevirt-types.js';
import { gatherVmConnectFacts } from '../../../src/vm/vm-connect-facts.js';
import { toVmMemberFacts } from '../../../src/vm/vm-member-facts.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function vmWith(devices: VmDevices): VirtualMachine {
  return {
    metadata: { name: 'devpool-1', namespace: 'corral-vms' },
    spec: { template: { spec: { domain: { devices } } } },
    status: { printableStatus: 'Running' },
  };
}

function vmiAt(ipAddress: string | undefined, devices?: VmDevices): VirtualMachineInstance {
  return {
    metadata: { name: 'devpool-1', namespace: 'corral-vms' },
    ...(devices ? { spec: { domain: { devices } } } : {}),
    status: { phase: 'Running', interfaces: ipAddress ? [{ name: 'default', ipAddress }] : [] },
  };
}

async function listenOn3389(host: string): Promise<void> {
  const server = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(3389, host, resolve));
  cleanups.push(() => server.close());
}

describe('gatherVmConnectFacts', () => {
  it('refuses a member that does not run with DESKTOP_STOPPED, before any probe', async () => {
    const stopped = { ...vmWith({}), status: { printableStatus: 'Stopped' } };
    const failure = await gatherVmConnectFacts(toVmMemberFacts(stopped, undefined)).catch(
      (error: unknown) => error,
    );
    expect(isVdiError(failure, 'DESKTOP_STOPPED')).toBe(true);
  });

  it('probes TCP 3389 at the address of the first interface and finds it answering', async () => {
    await listenOn3389('127.77.2.1');
    const facts = await gatherVmConnectFacts(toVmMemberFacts(vmWith({}), vmiAt('127.77.2.1')));
    expect(facts).toEqual({
      kind: 'vm',
      namespace: 'corral-vms',
      vm: 'devpool-1',
      rdpProbe: { host: '127.77.2.1', port: 3389, outcome: 'answered', timeoutMs: 1500 },
      graphicsDevice: true,
      serialConsole: true,
    });
  });

  it('passes the probe timeout on and reports a refused port', async () => {
    const facts = await gatherVmConnectFacts(toVmMemberFacts(vmWith({}), vmiAt('127.77.2.2')), {
      probeTimeoutMs: 700,
    });
    expect(facts.rdpProbe).toEqual({ host: '127.77.2.2', port: 3389, outcome: 'refused', timeoutMs: 700 });
  });

  it('probes nothing while the VMI has no address', async () => {
    const facts = await gatherVmConnectFacts(toVmMemberFacts(vmWith({}), vmiAt(undefined)));
    expect(facts.rdpProbe).toBeUndefined();
  });

  it.each<[string, VmDevices, VmDevices | undefined, boolean, boolean]>([
    [
      'the template turns both off and the VMI shows no devices',
      { autoattachGraphicsDevice: false, autoattachSerialConsole: false },
      undefined,
      false,
      false,
    ],
    ['the template turns graphics off', { autoattachGraphicsDevice: false }, undefined, false, true],
    [
      'the template says true explicitly',
      { autoattachGraphicsDevice: true, autoattachSerialConsole: true },
      undefined,
      true,
      true,
    ],
    [
      'the running VMI still has graphics from before a template change',
      { autoattachGraphicsDevice: false },
      {},
      true,
      true,
    ],
    ['the running VMI has no serial console', {}, { autoattachSerialConsole: false }, true, false],
  ])('reads the console devices when %s', async (_case, template, running, graphics, serial) => {
    const facts = await gatherVmConnectFacts(toVmMemberFacts(vmWith(template), vmiAt(undefined, running)));
    expect([facts.graphicsDevice, facts.serialConsole]).toEqual([graphics, serial]);
  });
});
