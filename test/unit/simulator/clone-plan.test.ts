import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { VirtualMachine, VirtualMachineClone } from '../../../src/kubevirt-types.js';
import { filterClonedKeys } from '../../../src/testing/kubevirt/clone-filters.js';
import {
  buildCloneTarget,
  type CloneFacts,
  planClone,
  validateClone,
} from '../../../src/testing/kubevirt/clone-plan.js';
import { readCloneKnobs, simulatorAnnotations } from '../../../src/testing/kubevirt/fault-knobs.js';

const labels = {
  'corral.dev/vdi-pool': 'golden',
  'corral.dev/vdi-ephemeral': 'true',
  team: 'blue',
  'app.kubernetes.io/name': 'desk',
};

describe('filterClonedKeys', () => {
  it.each<[string, string[] | undefined, string[]]>([
    ['keeps everything without filters', undefined, Object.keys(labels)],
    ['keeps nothing with an empty list', [], []],
    ['keeps everything with *', ['*'], Object.keys(labels)],
    ['drops a prefix with a negation after *', ['*', '!corral.dev/*'], ['team', 'app.kubernetes.io/name']],
    ['keeps only what an inclusion matches', ['corral.dev/vdi-pool'], ['corral.dev/vdi-pool']],
    [
      'lets a negation win over an inclusion',
      ['corral.dev/*', '!corral.dev/vdi-ephemeral'],
      ['corral.dev/vdi-pool'],
    ],
    ['keeps nothing with negations alone', ['!team'], []],
    ['lets an invalid expression match nothing', ['*', '!('], Object.keys(labels)],
  ])('%s', (_, filters, kept) => {
    expect(Object.keys(filterClonedKeys(labels, filters)).sort()).toEqual([...kept].sort());
  });

  it('keeps a subset of the entries, values unchanged', () => {
    const key = fc.stringMatching(/^[a-z./-]{1,12}$/);
    fc.assert(
      fc.property(
        fc.dictionary(key, fc.string()),
        fc.array(
          fc.oneof(
            key,
            key.map((k) => `!${k}`),
            fc.constant('*'),
          ),
        ),
        (entries, filters) => {
          const kept = filterClonedKeys(entries, filters);
          for (const [k, v] of Object.entries(kept)) expect(entries[k]).toBe(v);
          if (filters.includes('*') && !filters.some((f) => f.startsWith('!'))) expect(kept).toEqual(entries);
        },
      ),
    );
  });
});

const source: VirtualMachine = {
  metadata: {
    name: 'golden',
    namespace: 'ns',
    labels: { 'corral.dev/vdi-pool': 'golden', team: 'blue' },
    annotations: { keep: 'yes', [simulatorAnnotations.ip]: '127.5.5.5' },
  },
  spec: {
    runStrategy: 'Always',
    template: {
      metadata: { labels: { 'corral.dev/vdi-pool': 'golden', app: 'desk' } },
      spec: {
        domain: {
          devices: { interfaces: [{ name: 'default', macAddress: '02:aa:aa:aa:aa:aa' }, { name: 'second' }] },
          firmware: { uuid: 'old-uuid', serial: 'old-serial' },
        },
      },
    },
  },
};

function clone(spec: Partial<VirtualMachineClone['spec']> = {}): VirtualMachineClone {
  return {
    metadata: { name: 'c1', namespace: 'ns', uid: 'ABCDE-1234' },
    spec: { source: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: 'golden' }, ...spec },
  };
}

describe('buildCloneTarget', () => {
  it('copies the source under a generated name, drops simulator knobs and firmware identity, keeps the run strategy', () => {
    const built = buildCloneTarget(clone(), source);
    expect(built.kind).toBe('vm');
    const vm = (built as { vm: VirtualMachine }).vm;
    expect(vm.metadata.name).toBe('golden-clone-abcde');
    expect(vm.metadata.labels).toEqual(source.metadata.labels);
    expect(vm.metadata.annotations).toEqual({
      keep: 'yes',
      'restore.kubevirt.io/lastRestoreUID': 'tmp-restore-ABCDE-1234-ABCDE-1234',
    });
    expect(vm.spec.runStrategy).toBe('Always');
    expect(vm.spec.template?.spec?.domain?.devices?.interfaces).toEqual([
      { name: 'default' },
      { name: 'second' },
    ]);
    expect(vm.spec.template?.spec?.domain?.firmware).toEqual({});
    expect(source.spec.template?.spec?.domain?.firmware).toEqual({ uuid: 'old-uuid', serial: 'old-serial' });
  });

  it('applies filters to the VM and its template, new MAC addresses and serial, then the patches', () => {
    const spec: VirtualMachineClone['spec'] = {
      ...clone().spec,
      target: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: 'desk-1' },
      labelFilters: ['*', '!corral.dev/*'],
      template: { labelFilters: ['app'] },
      patches: ['{"op":"add","path":"/metadata/labels/corral.dev~1vdi-pool","value":"devpool"}'],
      newMacAddresses: { second: '02:bb:bb:bb:bb:bb' },
      newSMBiosSerial: 'serial-1',
    };
    const built = buildCloneTarget({ ...clone(), spec }, source);
    const vm = (built as { vm: VirtualMachine }).vm;
    expect(vm.metadata.name).toBe('desk-1');
    expect(vm.metadata.labels).toEqual({ team: 'blue', 'corral.dev/vdi-pool': 'devpool' });
    expect(vm.spec.template?.metadata?.labels).toEqual({ app: 'desk' });
    expect(vm.spec.template?.spec?.domain?.devices?.interfaces).toEqual([
      { name: 'default' },
      { name: 'second', macAddress: '02:bb:bb:bb:bb:bb' },
    ]);
    expect(vm.spec.template?.spec?.domain?.firmware).toEqual({ serial: 'serial-1' });
  });

  it('reports a patch that does not apply', () => {
    expect(
      buildCloneTarget(clone({ patches: ['{"op":"remove","path":"/spec/none"}'] }), source),
    ).toMatchObject({ kind: 'invalid' });
    expect(buildCloneTarget(clone({ patches: ['nope'] }), source)).toMatchObject({ kind: 'invalid' });
  });

  it('holds back, as KubeVirt’s restore webhook does, a patch outside /spec/ or a value with a colon', () => {
    const wholeMap = '{"op":"add","path":"/metadata/labels","value":{"corral.dev/vdi-pool":"devpool"}}';
    expect(buildCloneTarget(clone({ patches: [wholeMap] }), source)).toMatchObject({
      kind: 'refused',
      message: expect.stringContaining('only for elements under /spec/'),
    });
    expect(
      buildCloneTarget(clone({ patches: ['{"op":"add","path":"/spec/x","value":"a:b"}'] }), source),
    ).toMatchObject({ kind: 'refused', message: expect.stringContaining('one ":" expected') });
    expect(
      buildCloneTarget(clone({ patches: ['{"op":"add","path":"/metadata/labels/a","value":"b"}'] }), source),
    ).toMatchObject({ kind: 'vm' });
  });

  it('keeps the label map of a source whose labels the filters all remove', () => {
    const built = buildCloneTarget(clone({ labelFilters: ['!.*'] }), source);
    expect((built as { vm: VirtualMachine }).vm.metadata.labels).toEqual({});
  });
});

describe('validateClone', () => {
  it.each<[string, Partial<VirtualMachineClone['spec']>, VirtualMachine | undefined, string | undefined]>([
    ['accepts a clone of an existing VM', {}, source, undefined],
    ['refuses a missing source', {}, undefined, 'does not exist'],
    [
      'refuses a target named like the source',
      { target: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: 'golden' } },
      source,
      'equal to source',
    ],
    [
      'refuses a snapshot source',
      { source: { apiGroup: 'snapshot.kubevirt.io', kind: 'VirtualMachineSnapshot', name: 's' } },
      source,
      'not supported',
    ],
  ])('%s', (_, spec, found, message) => {
    const verdict = validateClone(clone(spec), found);
    if (message === undefined) expect(verdict).toBeUndefined();
    else expect(verdict).toContain(message);
  });
});

describe('planClone', () => {
  const knobs = readCloneKnobs(undefined).knobs;
  const facts = (over: Partial<CloneFacts>): CloneFacts => ({
    phase: '',
    knobs,
    enteredAt: 1000,
    now: 1000,
    target: 'missing',
    targetRestoring: false,
    ...over,
  });

  it.each<[string, Partial<CloneFacts>, ReturnType<typeof planClone>]>([
    ['starts with the snapshot', {}, { kind: 'enter', phase: 'SnapshotInProgress' }],
    [
      'moves on to the restore',
      { phase: 'SnapshotInProgress' },
      { kind: 'enter', phase: 'RestoreInProgress' },
    ],
    ['creates the target during the restore', { phase: 'RestoreInProgress' }, { kind: 'create-target' }],
    [
      'ends the restore on the target',
      { phase: 'RestoreInProgress', target: 'ours', targetRestoring: true },
      { kind: 'finish-restore' },
    ],
    [
      'moves to CreatingTargetVM once released',
      { phase: 'RestoreInProgress', target: 'ours' },
      { kind: 'enter', phase: 'CreatingTargetVM' },
    ],
    [
      'succeeds with its target',
      { phase: 'CreatingTargetVM', target: 'ours' },
      { kind: 'enter', phase: 'Succeeded' },
    ],
    [
      'fails when the target vanished',
      { phase: 'CreatingTargetVM' },
      { kind: 'fail', message: 'the target VM disappeared' },
    ],
    [
      'fails on a foreign target',
      { phase: 'RestoreInProgress', target: 'foreign' },
      { kind: 'fail', message: expect.stringContaining('already exists') },
    ],
    ['does nothing once done', { phase: 'Succeeded', target: 'ours' }, { kind: 'done' }],
    [
      'deletes itself once done and its target VM is gone, as KubeVirt does',
      { phase: 'Succeeded' },
      { kind: 'delete-clone' },
    ],
    ['keeps a failed clone whose target is missing', { phase: 'Failed' }, { kind: 'done' }],
    [
      'waits out a phase delay',
      { phase: 'SnapshotInProgress', knobs: { ...knobs, phaseDelayMs: 500 }, now: 1200 },
      { kind: 'wait', until: 1500 },
    ],
    [
      'holds a never-finish clone with its target',
      { phase: 'RestoreInProgress', target: 'ours', knobs: { ...knobs, neverFinish: true } },
      { kind: 'wait', until: undefined },
    ],
    [
      'fails in the phase the knob names',
      {
        phase: 'RestoreInProgress',
        target: 'ours',
        knobs: { ...knobs, fail: { message: 'boom', phase: 'RestoreInProgress' } },
      },
      { kind: 'fail', message: 'boom' },
    ],
  ])('%s', (_, over, expected) => {
    expect(planClone(facts(over))).toEqual(expected);
  });
});
