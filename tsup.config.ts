import { defineConfig } from 'tsup';

/** The public entry points; `test/exports.test.ts` checks that package.json `exports` names exactly these. */
export const libraryEntries = {
  index: 'src/index.ts',
  'core/index': 'src/core/index.ts',
  'testing/index': 'src/testing/index.ts',
} as const;

export default defineConfig([
  {
    entry: libraryEntries,
    format: ['esm', 'cjs'],
    dts: true,
    sourcemap: true,
    clean: true,
    target: 'node22',
    splitting: false,
    treeshake: true,
  },
  {
    entry: { 'cli/main': 'src/cli/main.ts' },
    format: ['esm'],
    sourcemap: true,
    target: 'node22',
    banner: { js: '#!/usr/bin/env node' },
  },
]);
