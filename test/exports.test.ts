import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { libraryEntries } from '../tsup.config.js';

const pkg = JSON.parse(readFileSync(resolve(import.meta.dirname, '../package.json'), 'utf8')) as {
  exports: Record<string, unknown>;
};

describe('the package exports map', () => {
  it('names exactly the tsup library entries, plus ./package.json', () => {
    const fromEntries = Object.keys(libraryEntries).map((entry) =>
      entry === 'index' ? '.' : `./${entry.replace(/\/index$/, '')}`,
    );
    expect(Object.keys(pkg.exports).sort()).toEqual([...fromEntries, './package.json'].sort());
  });

  it('points each entry at the built files of that entry, for import and require', () => {
    for (const [entry] of Object.entries(libraryEntries)) {
      const key = entry === 'index' ? '.' : `./${entry.replace(/\/index$/, '')}`;
      expect(pkg.exports[key]).toEqual({
        import: { types: `./dist/${entry}.d.ts`, default: `./dist/${entry}.js` },
        require: { types: `./dist/${entry}.d.cts`, default: `./dist/${entry}.cjs` },
      });
    }
  });

  it('keeps every entry free of export *', () => {
    for (const file of Object.values(libraryEntries)) {
      expect(readFileSync(resolve(import.meta.dirname, '..', file), 'utf8')).not.toMatch(/export \*/);
    }
  });
});
