import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '..');
const forbiddenImports = [
  /^node:/,
  /^@kubernetes\/client-node/,
  /^p-retry/,
  /^eventemitter3/,
  /(^|\/)kube\//,
];
const clockReads = [
  /\bDate\.now\s*\(/,
  /\bnew Date\s*\(\s*\)/,
  /\bperformance\.now\s*\(/,
  /\bMath\.random\s*\(/,
];

function importsOf(source: string): string[] {
  const specifiers: string[] = [];
  for (const match of source.matchAll(
    /(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
  )) {
    specifiers.push(match[1] ?? match[2] ?? '');
  }
  return specifiers;
}

function withoutComments(source: string): string {
  return source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:])\/\/.*$/gm, '$1');
}

/** Every source file reachable from the ./core entry: by definition the pure cores. */
function pureCoreFiles(): Map<string, string> {
  const files = new Map<string, string>();
  const pending = [join(root, 'src/core/index.ts')];
  while (pending.length > 0) {
    const file = pending.pop() as string;
    if (files.has(file)) continue;
    const source = readFileSync(file, 'utf8');
    files.set(file, source);
    for (const specifier of importsOf(source)) {
      if (specifier.startsWith('.')) pending.push(resolve(dirname(file), specifier.replace(/\.js$/, '.ts')));
    }
  }
  return files;
}

describe('the pure cores', () => {
  const files = pureCoreFiles();

  it('are found by walking the imports of the ./core entry', () => {
    expect(files.size).toBeGreaterThan(1);
  });

  for (const [file, source] of files) {
    const name = relative(root, file);
    it(`${name} imports no Node built-in, Kubernetes client, retry or event library, and no adapter`, () => {
      const offending = importsOf(source).filter((specifier) =>
        forbiddenImports.some((pattern) => pattern.test(specifier)),
      );
      expect(offending).toEqual([]);
    });
    it(`${name} never reads the clock or randomness`, () => {
      const code = withoutComments(source);
      expect(clockReads.filter((pattern) => pattern.test(code)).map(String)).toEqual([]);
    });
  }
});

describe('the architecture check itself', () => {
  it('flags an adapter import and a clock read in a made-up core file', () => {
    const source = "import { KubeCluster } from '../kube/cluster.js';\nexport const t = () => Date.now();";
    expect(
      importsOf(source).some((specifier) => forbiddenImports.some((pattern) => pattern.test(specifier))),
    ).toBe(true);
    expect(clockReads.some((pattern) => pattern.test(withoutComments(source)))).toBe(true);
  });
});
