import { readFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../../..');

/** Every import specifier of every source file reachable from `entry`, by file. */
function importsFrom(entry: string): Map<string, string[]> {
  const found = new Map<string, string[]>();
  const pending = [resolve(root, entry)];
  while (pending.length > 0) {
    const file = pending.pop() as string;
    if (found.has(file)) continue;
    const source = readFileSync(file, 'utf8');
    const specifiers = [...source.matchAll(/(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]/g)].map(
      (match) => match[1] ?? '',
    );
    found.set(file, specifiers);
    for (const specifier of specifiers) {
      if (specifier.startsWith('.')) pending.push(resolve(dirname(file), specifier.replace(/\.js$/, '.ts')));
    }
  }
  return found;
}

describe('the route table', () => {
  it('reaches only zod and pure modules, so a browser client can be built from it', () => {
    const files = importsFrom('src/broker/routes.ts');
    expect(files.size).toBeGreaterThan(3);
    const outside = [...files].flatMap(([file, specifiers]) =>
      specifiers
        .filter((specifier) => !specifier.startsWith('.') && !['zod', 'zod/mini'].includes(specifier))
        .map((specifier) => `${relative(root, file)} imports ${specifier}`),
    );
    expect(outside).toEqual([]);
  });
});
