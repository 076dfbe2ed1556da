import { describe, expect, it } from 'vitest';
import { describeDesktop, describeResetting } from '../../../src/claims/desktop-view.js';
import { leaseOf, member } from './member-fixtures.js';

const ref = { kind: 'vm', namespace: 'corral-vms', member: 'devpool-1' } as const;

describe('describeResetting', () => {
  it('shows a claimed member that is gone or being deleted as its holder’s desktop, Resetting', () => {
    const lease = leaseOf('devpool-1', { holder: 'alice@example.com' });
    for (const facts of [undefined, member('devpool-1', { deleting: true, ephemeral: true })]) {
      const marks = describeResetting({ ...ref, facts, lease });
      expect(marks).toMatchObject({ pool: 'devpool', phase: 'Resetting', deleting: false, ephemeral: true });
      expect(describeDesktop(marks!, lease)).toMatchObject({
        id: 'vm/corral-vms/devpool-1',
        owner: 'alice@example.com',
        phase: 'Resetting',
        running: false,
      });
    }
  });

  it('leaves a standing member, an unclaimed one and one a pool removal holds to their own facts', () => {
    const claimed = leaseOf('devpool-1', { holder: 'alice@example.com' });
    expect(describeResetting({ ...ref, facts: member('devpool-1'), lease: claimed })).toBeUndefined();
    expect(describeResetting({ ...ref, facts: undefined, lease: undefined })).toBeUndefined();
    expect(describeResetting({ ...ref, facts: undefined, lease: leaseOf('devpool-1') })).toBeUndefined();
    const removal = leaseOf('devpool-1', { holder: 'corral-vdi/resize' });
    expect(describeResetting({ ...ref, facts: undefined, lease: removal })).toBeUndefined();
  });
});
