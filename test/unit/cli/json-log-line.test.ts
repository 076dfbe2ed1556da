import { describe, expect, it } from 'vitest';
import { formatJsonLogLine } from '../../../src/cli/json-log-line.js';

const time = new Date('2026-12-03T10:21:40.512Z');

describe('formatJsonLogLine', () => {
  it('writes a request line with its level and fields as one JSON object', () => {
    const line = formatJsonLogLine(
      'broker: GET /readyz 200 1ms (request r-1)',
      { level: 'info', requestId: 'r-1', method: 'GET', path: '/readyz', status: 200, durationMs: 1 },
      time,
    );
    expect(line).not.toContain('\n');
    expect(JSON.parse(line)).toEqual({
      time: '2026-12-03T10:21:40.512Z',
      level: 'info',
      msg: 'broker: GET /readyz 200 1ms (request r-1)',
      requestId: 'r-1',
      method: 'GET',
      path: '/readyz',
      status: 200,
      durationMs: 1,
    });
  });

  it('takes a line without fields as a warning, and keeps a message with newlines on one line', () => {
    const line = formatJsonLogLine('broker: failed\n  at stack', undefined, time);
    expect(line).not.toContain('\n');
    expect(JSON.parse(line)).toEqual({
      time: '2026-12-03T10:21:40.512Z',
      level: 'warn',
      msg: 'broker: failed\n  at stack',
    });
  });
});
