import { describe, expect, it } from 'vitest';
import type { VirtualMachine } from '../../../src/kubevirt-types.js';
import { filterClonedKeys } from '../../../src/testing/kubevirt/clone-filters.js';
import { restorePatchRefusal } from '../../../src/testing/kubevirt/clone-plan.js';
import { applyJsonPatch, parseJsonPatches } from '../../../src/testing/kubevirt/json-patch.js';
import {
  buildMemberClone,
  buildStagedClone,
  cloneKeyFilters,
  cloneNameFor,
  stagedNameFor,
} from '../../../src/vm/vm-clone-object.js';

function golden(
  metadata: Partial<VirtualMachine['metadata']>,
  spec: Partial<VirtualMachine['spec']> = { runStrategy: 'Always' },
) {
  return { metadata: { name: 'golden-desktop', ...metadata }, spec } as VirtualMachine;
}

/**
 * Applies the clone's patches to what KubeVirt's restore has before them: the golden VM's labels less the filtered
 * ones (the map stays, emptied, when it had keys) and its kept annotations.
 */
function patchedTarget(vm: VirtualMachine, ephemeral = false): VirtualMachine {
  const clone = buildMemberClone({
    namespace: 'corral-vms',
    pool: 'devpool',
    member: 'devpool-1',
    golden: vm,
    ephemeral,
  });
  const labels = filterClonedKeys(vm.metadata.labels, clone.spec.labelFilters);
  const target = {
    metadata: {
      name: 'devpool-1',
      ...(vm.metadata.labels && Object.keys(vm.metadata.labels).length > 0 ? { labels } : {}),
      annotations: {
        ...filterClonedKeys(vm.metadata.annotations, clone.spec.annotationFilters),
        'restore.kubevirt.io/lastRestoreUID': 'x',
      },
    },
    spec: structuredClone(vm.spec),
  };
  const operations = parseJsonPatches(clone.spec.patches ?? []);
  if (!Array.isArray(operations)) throw new Error(operations.invalid);
  const result = applyJsonPatch(target, operations);
  if (result.kind === 'invalid') throw new Error(result.message);
  return result.document as VirtualMachine;
}

describe('buildMemberClone', () => {
  it('clones the golden VM into the member, leaving out corral.dev keys and the version the cluster chooses', () => {
    const clone = buildMemberClone({
      namespace: 'corral-vms',
      pool: 'devpool',
      member: 'devpool-2',
      golden: golden({ labels: { app: 'desktop' } }),
      ephemeral: false,
    });
    expect(clone.apiVersion).toBeUndefined();
    expect(clone).toMatchObject({
      kind: 'VirtualMachineClone',
      metadata: {
        name: 'devpool-2-clone',
        namespace: 'corral-vms',
        labels: { 'corral.dev/vdi-pool': 'devpool' },
      },
      spec: {
        source: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: 'golden-desktop' },
        target: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: 'devpool-2' },
        labelFilters: cloneKeyFilters,
        annotationFilters: cloneKeyFilters,
        template: { labelFilters: cloneKeyFilters, annotationFilters: cloneKeyFilters },
      },
    });
  });

  it('gives the member its pool label and source, keeps the golden VM’s other labels, and drops its corral.dev ones', () => {
    const vm = golden({
      labels: { app: 'desktop', 'corral.dev/vdi-pool': 'oldpool', 'corral.dev/vdi-assigned-to': 'alice' },
      annotations: { note: 'keep me', 'corral.dev/vdi-assigned-to': 'alice' },
    });
    const target = patchedTarget(vm);
    expect(target.metadata.labels).toEqual({ app: 'desktop', 'corral.dev/vdi-pool': 'devpool' });
    expect(target.metadata.annotations).toEqual({
      note: 'keep me',
      'restore.kubevirt.io/lastRestoreUID': 'x',
      'corral.dev/vdi-source': 'golden-desktop',
    });
  });

  it('adds the marks key by key, also into a label map the filters emptied', () => {
    expect(patchedTarget(golden({ labels: { 'corral.dev/vdi-pool': 'x' } })).metadata.labels).toEqual({
      'corral.dev/vdi-pool': 'devpool',
    });
  });

  it('writes only patches that KubeVirt’s restore webhook lets through', () => {
    for (const ephemeral of [false, true]) {
      const clone = buildMemberClone({
        namespace: 'corral-vms',
        pool: 'devpool',
        member: 'devpool-1',
        golden: golden({ labels: { app: 'desktop' } }, { running: true }),
        ephemeral,
      });
      expect(restorePatchRefusal(clone.spec.patches ?? [])).toBeUndefined();
    }
  });

  it('refuses a golden VM without a label, whose copy would have no label map to add to', () => {
    expect(() =>
      buildMemberClone({
        namespace: 'corral-vms',
        pool: 'devpool',
        member: 'devpool-1',
        golden: golden({}),
        ephemeral: false,
      }),
    ).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));
  });

  it('marks an ephemeral member', () => {
    expect(patchedTarget(golden({ labels: { app: 'desktop' } }), true).metadata.labels).toEqual({
      app: 'desktop',
      'corral.dev/vdi-pool': 'devpool',
      'corral.dev/vdi-ephemeral': 'true',
    });
  });

  it('starts the member stopped, replacing the deprecated spec.running', () => {
    const labels = { app: 'desktop' };
    expect(patchedTarget(golden({ labels }, { runStrategy: 'Always' })).spec).toEqual({
      runStrategy: 'Halted',
    });
    expect(patchedTarget(golden({ labels }, { running: true })).spec).toEqual({ runStrategy: 'Halted' });
  });
});

describe('cloneNameFor', () => {
  it('names the clone after the member', () => {
    expect(cloneNameFor('devpool-1')).toBe('devpool-1-clone');
  });

  it('keeps the name of a very long member within 253 characters, and distinct', () => {
    const long = `${'a'.repeat(250)}-1`;
    const other = `${'a'.repeat(250)}-2`;
    expect(cloneNameFor(long).length).toBeLessThanOrEqual(253);
    expect(cloneNameFor(long)).not.toBe(cloneNameFor(other));
    expect(cloneNameFor(long)).toMatch(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/);
  });
});

describe('buildStagedClone', () => {
  const staged = () =>
    buildStagedClone({
      namespace: 'corral-vms',
      pool: 'devpool',
      member: 'devpool-1',
      golden: golden({ labels: { app: 'desktop', 'corral.dev/vdi-golden': 'true' } }),
    });

  it('clones the golden VM beside the member, under the staged name, with no pool label on the staged VM', () => {
    const clone = staged();
    expect(clone.metadata).toMatchObject({
      name: 'devpool-1-staged-clone',
      labels: { 'corral.dev/vdi-pool': 'devpool' },
      annotations: { 'corral.dev/vdi-source': 'golden-desktop' },
    });
    expect(clone.spec.source.name).toBe('golden-desktop');
    expect(clone.spec.target?.name).toBe('devpool-1-staged');
    const patched = parseJsonPatches(clone.spec.patches ?? []);
    if (!Array.isArray(patched)) throw new Error(patched.invalid);
    expect(patched.map((operation) => operation.path)).toEqual([
      '/metadata/labels/corral.dev~1vdi-staged-pool',
      '/metadata/annotations/corral.dev~1vdi-source',
      '/metadata/annotations/corral.dev~1vdi-staged-for',
      '/spec/runStrategy',
    ]);
    expect(patched.some((operation) => operation.path.includes('vdi-pool'))).toBe(false);
    expect(restorePatchRefusal(clone.spec.patches ?? [])).toBeUndefined();
  });

  it("names the golden VM on the member's clone from a staged VM, whose name is the clone's source", () => {
    const fromStaged = golden({ name: 'devpool-1-staged', labels: { app: 'desktop' } });
    const clone = buildMemberClone({
      namespace: 'corral-vms',
      pool: 'devpool',
      member: 'devpool-1',
      golden: fromStaged,
      ephemeral: true,
      source: 'golden-desktop',
    });
    expect(clone.spec.source.name).toBe('devpool-1-staged');
    expect(clone.metadata.annotations).toEqual({ 'corral.dev/vdi-source': 'golden-desktop' });
    expect(clone.spec.patches).toContain(
      JSON.stringify({
        op: 'add',
        path: '/metadata/annotations/corral.dev~1vdi-source',
        value: 'golden-desktop',
      }),
    );
  });
});

describe('stagedNameFor', () => {
  it('stages beside the member, within 253 characters and distinct for long names', () => {
    expect(stagedNameFor('devpool-1')).toBe('devpool-1-staged');
    const long = `${'a'.repeat(250)}-1`;
    expect(stagedNameFor(long).length).toBeLessThanOrEqual(253);
    expect(stagedNameFor(long)).not.toBe(stagedNameFor(`${'a'.repeat(250)}-2`));
    expect(cloneNameFor(stagedNameFor(long)).length).toBeLessThanOrEqual(253);
  });
});
