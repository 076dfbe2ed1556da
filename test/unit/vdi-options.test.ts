import { KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { isVdiError } from '../../src/errors.js';
import { createVdi } from '../../src/vdi.js';

function offlineKubeConfig(): KubeConfig {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: 'c', server: 'https://127.0.0.1:1' }],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kubeConfig;
}

describe('createVdi goingDownWaitMs', () => {
  it('waits ten seconds for a member going down unless told otherwise, and takes 0 to answer at once', () => {
    expect(createVdi({ kubeConfig: offlineKubeConfig() }).context.goingDownWaitMs).toBe(10_000);
    expect(createVdi({ kubeConfig: offlineKubeConfig(), goingDownWaitMs: 0 }).context.goingDownWaitMs).toBe(
      0,
    );
  });

  it.each([-1, 1.5, Number.NaN, 600_001])(
    'refuses %s with INVALID_INPUT naming the option',
    (goingDownWaitMs) => {
      let caught: unknown;
      try {
        createVdi({ kubeConfig: offlineKubeConfig(), goingDownWaitMs });
      } catch (error) {
        caught = error;
      }
      expect(isVdiError(caught, 'INVALID_INPUT')).toBe(true);
      expect(String((caught as Error).message)).toContain('goingDownWaitMs');
    },
  );
});
