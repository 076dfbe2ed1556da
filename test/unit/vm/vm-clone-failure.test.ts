import { describe, expect, it } from 'vitest';
import type { VirtualMachineClone } from '../../../src/kubevirt-types.js';
import { failureReason } from '../../../src/vm/vm-clone-runner.js';

function failedClone(conditions: { type: string; status: string; reason?: string; message?: string }[]) {
  return {
    metadata: { namespace: 'corral-vms', name: 'devpool-2-clone' },
    spec: {},
    status: { phase: 'Failed', conditions },
  } as unknown as VirtualMachineClone;
}

describe('the reason of a failed clone', () => {
  it('gives the condition that says why', () => {
    const clone = failedClone([
      { type: 'Progressing', status: 'False', reason: 'Failed' },
      {
        type: 'Ready',
        status: 'False',
        reason: 'SnapshotDeleted',
        message: 'snapshot tmp-1 does not exist anymore',
      },
    ]);
    expect(failureReason(clone)).toBe('SnapshotDeleted: snapshot tmp-1 does not exist anymore');
  });

  it('gives the Ready condition\'s reason when KubeVirt writes the failure, not the Progressing "Failed"', () => {
    // KubeVirt v1.9.0's clone controller in the write that fails the clone: its reason in the Ready condition
    const clone = failedClone([
      { type: 'Progressing', status: 'False', reason: 'Failed' },
      { type: 'Ready', status: 'False', reason: 'snapshot tmp-1 does not exist anymore' },
    ]);
    expect(failureReason(clone)).toBe('snapshot tmp-1 does not exist anymore');
  });

  it('names where to read the reason when KubeVirt left its conditions saying "Still processing"', () => {
    // KubeVirt v1.9.0's clone controller, once the clone's snapshot went away: the reason only as an event
    const clone = failedClone([
      { type: 'Progressing', status: 'True', reason: 'Still processing' },
      { type: 'Ready', status: 'False', reason: 'Still processing' },
    ]);
    const reason = failureReason(clone);
    expect(reason).not.toContain('Still processing');
    expect(reason).toContain('kubectl describe virtualmachineclone -n corral-vms devpool-2-clone');
  });
});
