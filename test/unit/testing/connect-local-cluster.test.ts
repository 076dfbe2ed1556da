import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isVdiError } from '../../../src/errors.js';
import { connectLocalCluster } from '../../../src/testing/local-cluster.js';

const certificates = {
  caPem: '',
  servingCertPem: '',
  servingKeyPem: '',
  frontProxyCaPem: '',
  kubeletClientCertPem: '',
};
const folders: string[] = [];

afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

describe('connectLocalCluster', () => {
  it('refuses a connection whose cluster was stopped (its folder is gone), saying so', () => {
    const error = (() => {
      try {
        return connectLocalCluster({
          server: 'https://127.0.0.1:1',
          kubeconfigPath: join(tmpdir(), 'corral-vdi-gone', 'kubeconfig'),
          dataDir: join(tmpdir(), 'corral-vdi-gone'),
          certificates,
        });
      } catch (caught) {
        return caught;
      }
    })();
    expect(isVdiError(error, 'INVALID_INPUT')).toBe(true);
    expect((error as Error).message).toMatch(/was it stopped\?/);
  });

  it('refuses a folder without the CA that signs its users', () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'corral-vdi-connect-'));
    folders.push(dataDir);
    writeFileSync(join(dataDir, 'kubeconfig'), '');
    expect(() =>
      connectLocalCluster({
        server: 'https://127.0.0.1:1',
        kubeconfigPath: join(dataDir, 'kubeconfig'),
        dataDir,
        certificates,
      }),
    ).toThrow(expect.objectContaining({ name: 'VdiError', code: 'INVALID_INPUT' }));
  });
});
