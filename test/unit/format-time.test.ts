import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatMicroTime, formatTime, normalizeTime } from '../../src/format-time.js';

const jsonTime = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const instants = fc.date({
  min: new Date('1970-01-01T00:00:00Z'),
  max: new Date('9999-12-31T23:59:59.999Z'),
  noInvalidDate: true,
});

describe('formatTime', () => {
  it('writes RFC 3339 in UTC with milliseconds', () => {
    expect(formatTime(new Date(Date.UTC(2026, 6, 2, 12, 0, 46, 287)))).toBe('2026-07-02T12:00:46.287Z');
    expect(formatTime(new Date(Date.UTC(2026, 6, 2, 12, 0, 0)))).toBe('2026-07-02T12:00:00.000Z');
  });

  it('always writes the same shape', () => {
    fc.assert(fc.property(instants, (instant) => jsonTime.test(formatTime(instant))));
  });
});

describe('normalizeTime', () => {
  it.each([
    ['2026-07-02T12:00:46.287000Z', '2026-07-02T12:00:46.287Z'],
    ['2026-07-02T12:00:46.287123Z', '2026-07-02T12:00:46.287Z'],
    ['2026-07-02T12:00:46.287Z', '2026-07-02T12:00:46.287Z'],
    ['2026-07-02T12:00:46Z', '2026-07-02T12:00:46.000Z'],
    ['2026-07-02T14:00:46.5+02:00', '2026-07-02T12:00:46.500Z'],
  ])('rewrites %s as %s', (text, expected) => {
    expect(normalizeTime(text)).toBe(expected);
  });

  it('is undefined for no time and for text that is not RFC 3339', () => {
    expect(normalizeTime(undefined)).toBeUndefined();
    expect(normalizeTime('yesterday')).toBeUndefined();
    expect(normalizeTime('2026-07-02')).toBeUndefined();
  });

  it('reads back every formatted instant unchanged', () => {
    fc.assert(fc.property(instants, (instant) => normalizeTime(formatTime(instant)) === formatTime(instant)));
  });
});

describe('formatMicroTime', () => {
  it.each([
    ['2026-07-02T12:00:46.287Z', '2026-07-02T12:00:46.287000Z'],
    ['2026-07-02T12:00:46.287123Z', '2026-07-02T12:00:46.287123Z'],
    ['2026-07-02T12:00:46.287123456Z', '2026-07-02T12:00:46.287123Z'],
    ['2026-07-02T12:00:46Z', '2026-07-02T12:00:46.000000Z'],
    ['2026-07-02T14:00:46.25+02:00', '2026-07-02T12:00:46.250000Z'],
  ])('writes %s as %s', (text, expected) => {
    expect(formatMicroTime(text)).toBe(expected);
  });

  it('leaves text that is not a time for the apiserver to refuse', () => {
    expect(formatMicroTime('soon')).toBe('soon');
  });

  it('names the same instant as the millisecond format', () => {
    fc.assert(
      fc.property(
        instants,
        (instant) => normalizeTime(formatMicroTime(formatTime(instant))) === formatTime(instant),
      ),
    );
  });
});
