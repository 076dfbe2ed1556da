import { describe, expect, it } from 'vitest';
import { frameFromBrowser, frameFromShell } from '../../../src/broker/terminal-framing.js';

const text = (value: string) => Buffer.from(value);
const framed = (channel: number, value: string) => Buffer.concat([Buffer.of(channel), text(value)]);

describe('the terminal framing', () => {
  it('puts typed bytes on stdin and a size message on the resize channel', () => {
    expect(frameFromBrowser(text('ls\n'), true)).toEqual({ kind: 'send', data: framed(0, 'ls\n') });
    expect(frameFromBrowser(text('{"cols":132,"rows":40}'), false)).toEqual({
      kind: 'send',
      data: framed(4, '{"Width":132,"Height":40}'),
    });
  });

  it.each(['hello', '{"cols":0,"rows":40}', '{"cols":1.5,"rows":2}', '{"rows":40}', '[]', 'null'])(
    'drops the text message %s',
    (message) => {
      expect(frameFromBrowser(text(message), false)).toEqual({ kind: 'drop' });
    },
  );

  it('unwraps output and errors, and drops empty or unknown frames', () => {
    expect(frameFromShell(framed(1, 'out'))).toEqual({ kind: 'send', data: text('out') });
    expect(frameFromShell(framed(2, 'err'))).toEqual({ kind: 'send', data: text('err') });
    expect(frameFromShell(Buffer.of(1))).toEqual({ kind: 'drop' });
    expect(frameFromShell(framed(9, 'x'))).toEqual({ kind: 'drop' });
    expect(frameFromShell(Buffer.alloc(0))).toEqual({ kind: 'drop' });
  });

  it.each([
    ['{"status":"Success"}', 0],
    ['{"status":"Failure","details":{"causes":[{"reason":"ExitCode","message":"3"}]}}', 3],
    ['{"status":"Failure"}', 1],
    ['not json', 1],
  ])('closes on the status %s with exit code %i', (status, code) => {
    expect(frameFromShell(framed(3, status))).toEqual({
      kind: 'close',
      code: 1000,
      reason: `The shell exited with code ${code}.`,
    });
  });
});
