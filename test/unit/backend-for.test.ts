import { describe, expect, it } from 'vitest';
import { backendFor } from '../../src/context.js';
import type { DesktopBackend } from '../../src/desktop-backend.js';
import { isVdiError } from '../../src/errors.js';
import { thrownBy } from './claims/thrown-by.js';

describe('backendFor', () => {
  const vm = { kind: 'vm' } as DesktopBackend;

  it('returns the backend registered for the kind', () => {
    expect(backendFor({ backends: { vm } }, 'vm')).toBe(vm);
  });

  it('refuses a kind without a backend with UNSUPPORTED_BACKEND, naming what is served', () => {
    const error = thrownBy(() => backendFor({ backends: { vm } }, 'ct'));
    expect(isVdiError(error, 'UNSUPPORTED_BACKEND')).toBe(true);
    expect((error as Error).message).toBe(
      'No backend serves "ct" desktops here; this SDK serves vm desktops, so pick a member of a pool of that kind.',
    );
    expect((error as { details: unknown }).details).toEqual({ kind: 'ct', served: ['vm'] });
  });
});
