import { defineConfig } from 'tsup';

/** The public entry points; `test/exports.test.ts` checks that package.json `exports` names exactly these. */
export const libraryEntries = {
  index: 'src/index.ts',
  'core/index': 'src/core/index.ts',
  'testing/index': 'src/testing/index.ts',
  'client/index': 'src/client/index.ts',
  'web/index': 'src/web/index.ts',
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
    // the element's styles, xterm.js's included, travel inside it as text
    loader: { '.css': 'text' },
    noExternal: [/\.css$/],
  },
  {
    entry: { 'cli/main': 'src/cli/main.ts' },
    format: ['esm'],
    sourcemap: true,
    target: 'node22',
    banner: { js: '#!/usr/bin/env node' },
  },
  {
    // The Desktops page `broker serve --ui` serves, bundled for the browser; noVNC and xterm.js load on demand.
    entry: { page: 'src/web/page.ts' },
    outDir: 'dist/ui',
    format: ['esm'],
    platform: 'browser',
    target: 'es2022',
    noExternal: [/.*/],
    loader: { '.css': 'text' },
    minify: true,
    sourcemap: true,
  },
]);
