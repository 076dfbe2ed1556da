// A broker replica in a process of its own, for a test to kill: it leads by the leader Lease, runs its passes every
// 300 ms, and writes each event of interest and each log line as a JSON line.
import { KubeConfig } from '@kubernetes/client-node';
import { MemoryAuditSink } from '../../../src/audit.js';
import { createBroker } from '../../../src/broker/broker.js';
import { authGatewayIdentity } from '../../../src/broker/identity.js';
import type { VdiEvents } from '../../../src/events.js';
import { createVdi } from '../../../src/vdi.js';

/** What a replica process is told on its command line. */
export interface ReplicaConfig {
  kubeconfigPath: string;
  namespace: string;
  identity: string;
  reclaimWarningMs: number;
}

const config = JSON.parse(process.argv[2] ?? '{}') as ReplicaConfig;
const kubeConfig = new KubeConfig();
kubeConfig.loadFromFile(config.kubeconfigPath);
const vdi = createVdi({ kubeConfig, namespace: config.namespace, audit: new MemoryAuditSink() });
const write = (line: Record<string, unknown>) =>
  process.stdout.write(`${JSON.stringify({ replica: config.identity, at: Date.now(), ...line })}\n`);
const watched: Array<keyof VdiEvents> = ['pool-rollout', 'pool-rolled-out', 'reclaim-warning', 'reclaimed'];
for (const event of watched) vdi.events.on(event, (facts: object) => write({ event, ...facts }));
const broker = createBroker({
  vdi,
  identity: [authGatewayIdentity()],
  namespaces: [config.namespace],
  intervalMs: 300,
  disconnectGraceMs: 0,
  reclaimWarningMs: config.reclaimWarningMs,
  leaderElection: {
    identity: config.identity,
    leaseDurationMs: 3000,
    renewDeadlineMs: 2000,
    retryPeriodMs: 500,
  },
  log: (message) => write({ log: message }),
});
broker.start();
// the broker's timers never keep a process alive; this one runs until it is killed
setInterval(() => {}, 60_000);
