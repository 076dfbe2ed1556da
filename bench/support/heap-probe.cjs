// Loaded into a measured `broker serve` (NODE_OPTIONS="--expose-gc --require …/heap-probe.cjs"): on SIGUSR2 it
// collects garbage and writes process.memoryUsage() to the file HEAP_PROBE_FILE names, so the bench reads the heap
// the process keeps beside its resident memory, which also holds what V8 and the allocator have not given back.
const { writeFileSync } = require('node:fs');

process.on('SIGUSR2', () => {
  globalThis.gc();
  writeFileSync(process.env.HEAP_PROBE_FILE, JSON.stringify(process.memoryUsage()));
});
