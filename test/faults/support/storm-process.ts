// A client process of its own: runs a claim storm and writes each event as a JSON line; "stop" on stdin ends it.
import { createInterface } from 'node:readline';
import { KubeConfig } from '@kubernetes/client-node';
import { createVdi } from '../../../src/vdi.js';
import { runClaimStorm } from './claim-storm.js';
import type { StormProcessConfig } from './storm-client.js';

const config = JSON.parse(process.argv[2] ?? '{}') as StormProcessConfig;
const kubeConfig = new KubeConfig();
kubeConfig.loadFromFile(config.kubeconfigPath);
const stop = new AbortController();
createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.trim() === 'stop') stop.abort();
});

await runClaimStorm({
  vdi: createVdi({ kubeConfig, namespace: config.namespace }),
  namespace: config.namespace,
  pools: config.pools,
  identities: config.identities,
  seed: config.seed,
  boundMs: config.boundMs,
  stop: stop.signal,
  record: (event) => process.stdout.write(`${JSON.stringify(event)}\n`),
});
process.exit(0);
