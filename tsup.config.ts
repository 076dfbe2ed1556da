import { defineConfig, type Options } from 'tsup';

const nodeEntries = {
  index: 'src/index.ts',
  'testing/index': 'src/testing/index.ts',
} as const;

const browserEntries = {
  'core/index': 'src/core/index.ts',
  'client/index': 'src/client/index.ts',
  'web/index': 'src/web/index.ts',
} as const;

/** The public entry points; `test/exports.test.ts` checks that package.json `exports` names exactly these. */
export const libraryEntries = { ...nodeEntries, ...browserEntries } as const;

const library = {
  format: ['esm', 'cjs'],
  dts: true,
  target: 'node22',
  splitting: false,
  // a dependency none of an entry's code uses is not imported at all: no bare `import 'zod'` left in a page
  treeshake: { preset: 'recommended', moduleSideEffects: (_id: string, external: boolean) => !external },
  // the element's styles, xterm.js's included, travel inside it as text
  loader: { '.css': 'text' },
  noExternal: [/\.css$/],
} satisfies Options;

// No source maps: the package ships dist/ and not src/, and a map of sources it does not ship helps nobody.
export default defineConfig([
  { entry: nodeEntries, ...library, clean: true },
  // Built apart, so no types chunk they share with the SDK brings Node's types (ws, node:http) into a page.
  { entry: browserEntries, ...library },
  {
    entry: { 'cli/main': 'src/cli/main.ts' },
    format: ['esm'],
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
  },
]);
