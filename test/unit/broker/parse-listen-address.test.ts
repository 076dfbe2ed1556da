import { describe, expect, it } from 'vitest';
import { parseListenAddress } from '../../../src/broker/serve.js';
import { isVdiError } from '../../../src/errors.js';
import { thrownBy } from '../claims/thrown-by.js';

describe('parseListenAddress', () => {
  it.each([
    ['127.0.0.1:8080', { host: '127.0.0.1', port: 8080 }],
    ['localhost:0', { host: 'localhost', port: 0 }],
    ['[::1]:8443', { host: '::1', port: 8443 }],
    ['0.0.0.0:80', { host: '0.0.0.0', port: 80 }],
  ])('reads %s', (listen, expected) => {
    expect(parseListenAddress(listen)).toEqual(expected);
  });

  it.each(['8080', 'localhost', ':8080', '127.0.0.1:65536', '::1:8080', '[::1]', 'host:port'])(
    'refuses %s',
    (listen) => {
      const error = thrownBy(() => parseListenAddress(listen));
      expect(isVdiError(error, 'INVALID_INPUT')).toBe(true);
      expect((error as Error).message).toContain(listen);
    },
  );
});
