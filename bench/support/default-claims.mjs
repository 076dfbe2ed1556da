// One run of claims with createVdi's defaults (no watch caches), as a fresh process such as the CLI makes them.
// Arguments: one JSON object { kubeconfigPath, namespace, pool, count, concurrency, sdk } where `sdk` is the built
// package's entry (dist/index.js). Prints one JSON line: each claim's wait in ms, refusals, requests and response bytes.
import { pathToFileURL } from 'node:url';

const asked = JSON.parse(process.argv[2] ?? '{}');
const { createVdi, isVdiError } = await import(pathToFileURL(asked.sdk).href);
// the SDK loads the kubeconfig itself, as the CLI does: a build's own client library then reads it
process.env.KUBECONFIG = asked.kubeconfigPath;
const vdi = createVdi({ namespace: asked.namespace });
const { cluster } = vdi.context;
const waited = [];
let refused = 0;
let next = 0;
async function claimant() {
  while (next < asked.count) {
    next += 1;
    const identity = `default-claimant-${next}@example.com`;
    const askedAt = performance.now();
    try {
      await vdi.claim({ pool: asked.pool, namespace: asked.namespace, identity });
      waited.push(performance.now() - askedAt);
    } catch (error) {
      if (!isVdiError(error, 'NO_FREE_MEMBER')) throw error;
      refused += 1;
    }
  }
}
await Promise.all(Array.from({ length: asked.concurrency }, claimant));
console.log(
  JSON.stringify({ waited, refused, requests: cluster.requestTotal, bytes: cluster.responseBytes }),
);
