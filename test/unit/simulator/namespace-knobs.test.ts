import { describe, expect, it } from 'vitest';
import { readNamespaceKnobs, simulatorAnnotations } from '../../../src/testing/kubevirt/fault-knobs.js';

describe('readNamespaceKnobs', () => {
  it('reads nothing set as the simulator clock and no pause', () => {
    expect(readNamespaceKnobs(undefined)).toEqual({
      knobs: { clock: undefined, paused: false },
      problems: [],
    });
  });

  it('reads a clock and a pause', () => {
    const reading = readNamespaceKnobs({
      [simulatorAnnotations.clock]: '2026-07-02T12:00:03.500Z',
      [simulatorAnnotations.paused]: 'true',
    });
    expect(reading).toEqual({
      knobs: { clock: Date.parse('2026-07-02T12:00:03.500Z'), paused: true },
      problems: [],
    });
  });

  it.each([
    [
      'a clock that is not a time',
      { [simulatorAnnotations.clock]: 'soon' },
      /clock=soon is not an RFC 3339 time/,
    ],
    ['a pause that is not a flag', { [simulatorAnnotations.paused]: 'yes' }, /paused=yes is neither/],
  ])('ignores %s and says why', (_, annotations, problem) => {
    const reading = readNamespaceKnobs(annotations);
    expect(reading.knobs).toEqual({ clock: undefined, paused: false });
    expect(reading.problems).toEqual([expect.stringMatching(problem)]);
  });
});
