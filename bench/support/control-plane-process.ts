// The benchmarks' control plane in a process of its own: starts it, writes its connection as one JSON line, and
// stops it when its standard input ends.
import { startLocalCluster } from '../../src/testing/local-cluster.js';

const cluster = await startLocalCluster();
process.stdout.write(`${JSON.stringify(cluster.connection)}\n`);
process.stdin.resume();
process.stdin.on('end', () => {
  void cluster.stop().then(() => process.exit(0));
});
