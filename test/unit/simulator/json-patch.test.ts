import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  applyJsonPatch,
  type JsonPatchOperation,
  parseJsonPatches,
} from '../../../src/testing/kubevirt/json-patch.js';

const document = {
  metadata: { labels: { 'corral.dev/vdi-pool': 'golden', team: 'blue' } },
  spec: { list: [1, 2, 3] },
};

describe('applyJsonPatch', () => {
  it.each<[string, JsonPatchOperation[], unknown]>([
    [
      'adds a member',
      [{ op: 'add', path: '/spec/name', value: 'x' }],
      { ...document, spec: { list: [1, 2, 3], name: 'x' } },
    ],
    [
      'inserts into an array',
      [{ op: 'add', path: '/spec/list/1', value: 9 }],
      { ...document, spec: { list: [1, 9, 2, 3] } },
    ],
    [
      'appends with -',
      [{ op: 'add', path: '/spec/list/-', value: 4 }],
      { ...document, spec: { list: [1, 2, 3, 4] } },
    ],
    [
      'removes an array item',
      [{ op: 'remove', path: '/spec/list/0' }],
      { ...document, spec: { list: [2, 3] } },
    ],
    [
      'reads ~1 as a slash in a key',
      [{ op: 'replace', path: '/metadata/labels/corral.dev~1vdi-pool', value: 'devpool' }],
      { ...document, metadata: { labels: { 'corral.dev/vdi-pool': 'devpool', team: 'blue' } } },
    ],
    [
      'adds a missing object member on replace, as KubeVirt does',
      [{ op: 'replace', path: '/metadata/labels/new', value: 'v' }],
      { ...document, metadata: { labels: { ...document.metadata.labels, new: 'v' } } },
    ],
    [
      'moves a value',
      [{ op: 'move', from: '/metadata/labels/team', path: '/metadata/team' }],
      { ...document, metadata: { labels: { 'corral.dev/vdi-pool': 'golden' }, team: 'blue' } },
    ],
    [
      'copies a value',
      [{ op: 'copy', from: '/spec/list/2', path: '/spec/last' }],
      { ...document, spec: { list: [1, 2, 3], last: 3 } },
    ],
    ['passes a matching test', [{ op: 'test', path: '/spec/list', value: [1, 2, 3] }], document],
    ['replaces the whole document', [{ op: 'replace', path: '', value: { a: 1 } }], { a: 1 }],
  ])('%s', (_, patch, expected) => {
    expect(applyJsonPatch(document, patch)).toEqual({ kind: 'patched', document: expected });
  });

  it.each<[string, JsonPatchOperation[], string]>([
    ['a removal of a missing member', [{ op: 'remove', path: '/spec/missing' }], 'does not exist'],
    ['a replace out of an array', [{ op: 'replace', path: '/spec/list/7', value: 0 }], 'does not exist'],
    ['an add under a missing parent', [{ op: 'add', path: '/nope/deeper', value: 0 }], 'parent'],
    ['a failing test', [{ op: 'test', path: '/spec/list/0', value: 5 }], 'test failed'],
    ['a pointer without a leading slash', [{ op: 'add', path: 'spec', value: 0 }], 'not a JSON pointer'],
    ['a move into its own child', [{ op: 'move', from: '/spec', path: '/spec/inner' }], 'into itself'],
  ])('stops at %s and changes nothing', (_, patch, message) => {
    const result = applyJsonPatch(document, [{ op: 'add', path: '/spec/first', value: 1 }, ...patch]);
    expect(result.kind).toBe('invalid');
    expect(result.kind === 'invalid' && result.message).toContain(message);
  });

  it('never changes its input and undoes an add with a remove of the same new key', () => {
    const json = fc.dictionary(fc.string({ minLength: 1, maxLength: 5 }), fc.jsonValue(), { maxKeys: 5 });
    fc.assert(
      fc.property(json, fc.string({ minLength: 1, maxLength: 8 }), fc.jsonValue(), (input, key, value) => {
        fc.pre(!(key in input));
        const before = structuredClone(input);
        const pointer = `/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;
        const added = applyJsonPatch(input, [{ op: 'add', path: pointer, value }]);
        expect(input).toEqual(before);
        expect(added.kind).toBe('patched');
        const document = (added as { document: unknown }).document;
        expect(applyJsonPatch(document, [{ op: 'test', path: pointer, value }]).kind).toBe('patched');
        expect(applyJsonPatch(document, [{ op: 'remove', path: pointer }])).toEqual({
          kind: 'patched',
          document: before,
        });
      }),
    );
  });
});

describe('parseJsonPatches', () => {
  it('reads one operation per string, as VirtualMachineClone patches are written', () => {
    expect(
      parseJsonPatches(['{"op":"remove","path":"/a"}', '{"op":"copy","from":"/a","path":"/b"}']),
    ).toEqual([
      { op: 'remove', path: '/a' },
      { op: 'copy', from: '/a', path: '/b' },
    ]);
  });

  it.each([
    ['not json', 'is not JSON'],
    ['{"op":"merge","path":"/a"}', 'no valid "op"'],
    ['{"op":"add","value":1}', 'no "path"'],
    ['{"op":"add","path":"/a"}', 'no "value"'],
    ['{"op":"move","path":"/a"}', 'no "from"'],
  ])('names a malformed patch: %s', (text, message) => {
    const parsed = parseJsonPatches([text]);
    expect(Array.isArray(parsed)).toBe(false);
    expect((parsed as { invalid: string }).invalid).toContain(message);
  });
});
