// A container pools' reconciler in a process of its own, for a test to kill: it runs a pass of one pool every 150 ms
// and writes each roll-out event and each failed pass as a JSON line.
import { KubeConfig } from '@kubernetes/client-node';
import { createVdi } from '../../../src/vdi.js';

/** What a reconciler process is told on its command line. */
export interface ReconcilerConfig {
  kubeconfigPath: string;
  namespace: string;
  pool: string;
}

const config = JSON.parse(process.argv[2] ?? '{}') as ReconcilerConfig;
const kubeConfig = new KubeConfig();
kubeConfig.loadFromFile(config.kubeconfigPath);
const vdi = createVdi({ kubeConfig, namespace: config.namespace });
const write = (line: Record<string, unknown>) =>
  process.stdout.write(`${JSON.stringify({ pid: process.pid, at: Date.now(), ...line })}\n`);
vdi.events.on('pool-rollout', (facts) => write({ event: 'pool-rollout', ...facts }));
vdi.events.on('pool-rolled-out', (facts) => write({ event: 'pool-rolled-out', ...facts }));
for (;;) {
  try {
    await vdi.reconcileCtPool({ name: config.pool });
  } catch (error) {
    write({ log: String(error) });
  }
  await new Promise((resolve) => setTimeout(resolve, 150));
}
