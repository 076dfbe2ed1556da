import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// Benchmarks run one at a time against their own local control plane: npx vitest run -c bench/vitest.config.ts
export default defineConfig({
  test: {
    root: fileURLToPath(new URL('..', import.meta.url)),
    include: ['bench/**/*.bench.ts'],
    testTimeout: 900_000,
    hookTimeout: 900_000,
    fileParallelism: false,
  },
});
