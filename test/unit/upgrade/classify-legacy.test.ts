import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { VirtualMachine } from '../../../src/kubevirt-types.js';
import { classifyLegacy, type LegacyState } from '../../../src/upgrade/classify-legacy.js';
import { loadV060Fixture, v060FixtureNames } from './v0.6.0-fixtures.js';

const pool = { 'corral.dev/vdi-pool': 'legacypool' };

function vm(
  labels: Record<string, string>,
  annotations: Record<string, string>,
  spec: VirtualMachine['spec'],
): VirtualMachine {
  return { metadata: { name: 'legacypool-1', labels, annotations }, spec };
}

describe('classifyLegacy', () => {
  it.each<[string, VirtualMachine, LegacyState]>([
    [
      'a v0.6.0 assignment with its claim time',
      vm(
        { ...pool, 'corral.dev/vdi-assigned-to': 'alice' },
        { 'corral.dev/vdi-claimed-at': '2026-07-02T12:00:00Z' },
        { running: true },
      ),
      {
        kind: 'legacy-assigned',
        pool: 'legacypool',
        user: 'alice',
        claimedAt: '2026-07-02T12:00:00Z',
        usesSpecRunning: true,
      },
    ],
    [
      'a v0.6.0 assignment without a claim time on a runStrategy VM',
      vm({ ...pool, 'corral.dev/vdi-assigned-to': 'alice' }, {}, { runStrategy: 'Halted' }),
      { kind: 'legacy-assigned', pool: 'legacypool', user: 'alice', usesSpecRunning: false },
    ],
    [
      'a free member on spec.running',
      vm(pool, {}, { running: false }),
      { kind: 'legacy-free', pool: 'legacypool', usesSpecRunning: true },
    ],
    ['a free member on runStrategy', vm(pool, {}, { runStrategy: 'Halted' }), { kind: 'not-legacy' }],
    [
      'a current assignment (annotation and label)',
      vm(
        { ...pool, 'corral.dev/vdi-assigned-to': 'alice_example.com' },
        { 'corral.dev/vdi-assigned-to': 'alice@example.com' },
        { running: false },
      ),
      { kind: 'not-legacy' },
    ],
    [
      'an empty assigned-to label',
      vm({ ...pool, 'corral.dev/vdi-assigned-to': '' }, {}, { runStrategy: 'Manual' }),
      { kind: 'not-legacy' },
    ],
    [
      'an assigned-to label on a VM outside any pool',
      vm({ 'corral.dev/vdi-assigned-to': 'alice' }, {}, { running: false }),
      { kind: 'not-legacy' },
    ],
    [
      'a VM without labels or annotations',
      { metadata: { name: 'golden-desktop' }, spec: { running: false } },
      { kind: 'not-legacy' },
    ],
  ])('classifies %s', (_case, input, expected) => {
    expect(classifyLegacy(input)).toEqual(expected);
  });

  it.each<[string, LegacyState]>([
    [
      'legacypool-1',
      {
        kind: 'legacy-assigned',
        pool: 'legacypool',
        user: 'alice',
        claimedAt: '2026-07-02T12:00:00Z',
        usesSpecRunning: true,
      },
    ],
    ['legacypool-2', { kind: 'legacy-free', pool: 'legacypool', usesSpecRunning: true }],
    [
      'legacypool-3',
      {
        kind: 'legacy-assigned',
        pool: 'legacypool',
        user: 'bob',
        claimedAt: '2026-07-01T08:30:15Z',
        usesSpecRunning: true,
      },
    ],
    [
      'legacypool-4',
      {
        kind: 'legacy-assigned',
        pool: 'legacypool',
        user: 'carol',
        claimedAt: '2026-07-02T09:45:00Z',
        usesSpecRunning: true,
      },
    ],
  ])('classifies the v0.6.0 fixture %s', (name, expected) => {
    expect(classifyLegacy(loadV060Fixture(name))).toEqual(expected);
  });

  it('has an expectation for every v0.6.0 fixture', () => {
    expect(v060FixtureNames).toEqual(['legacypool-1', 'legacypool-2', 'legacypool-3', 'legacypool-4']);
  });

  it('never calls a VM with the current assigned-to annotation legacy', () => {
    const text = fc.string({ minLength: 1 });
    fc.assert(
      fc.property(text, fc.option(text), fc.option(fc.boolean()), (identity, label, running) => {
        const labels: Record<string, string> = {
          ...pool,
          ...(label === null ? {} : { 'corral.dev/vdi-assigned-to': label }),
        };
        const spec = running === null ? {} : { running };
        expect(classifyLegacy(vm(labels, { 'corral.dev/vdi-assigned-to': identity }, spec))).toEqual({
          kind: 'not-legacy',
        });
      }),
    );
  });
});
