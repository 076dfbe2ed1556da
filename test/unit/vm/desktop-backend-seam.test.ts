import { readFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../../..');
// what a service would see of a backend's objects if the seam let it through
const backendOnly = [/kubevirt-types/, /^@kubernetes\/client-node/, /(^|\/)kube\//, /(^|\/)(vm|ct)\//];

function importsOf(source: string): string[] {
  return [...source.matchAll(/(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]/g)].map(
    (match) => match[1] ?? '',
  );
}

/** Every source file the seam reaches through its imports, with what each imports. */
function reachableFrom(entry: string): Map<string, string[]> {
  const files = new Map<string, string[]>();
  const pending = [resolve(root, entry)];
  while (pending.length > 0) {
    const file = pending.pop() as string;
    if (files.has(file)) continue;
    const specifiers = importsOf(readFileSync(file, 'utf8'));
    files.set(file, specifiers);
    for (const specifier of specifiers) {
      if (specifier.startsWith('.')) pending.push(resolve(dirname(file), specifier.replace(/\.js$/, '.ts')));
    }
  }
  return files;
}

function offending(specifiers: string[]): string[] {
  return specifiers.filter((specifier) => backendOnly.some((pattern) => pattern.test(specifier)));
}

describe('the DesktopBackend seam', () => {
  const files = reachableFrom('src/desktop-backend.ts');

  it('is found with the modules its types come from', () => {
    expect([...files.keys()].map((file) => relative(root, file))).toContain('src/desktop-backend.ts');
  });

  for (const [file, specifiers] of files) {
    it(`${relative(root, file)} reaches no KubeVirt type, Kubernetes client, adapter or backend`, () => {
      expect(offending(specifiers)).toEqual([]);
    });
  }

  it('flags a made-up seam file that leaks a KubeVirt type', () => {
    const leaky =
      "import type { VirtualMachine } from './kubevirt-types.js';\nexport type X = VirtualMachine;";
    expect(offending(importsOf(leaky))).toEqual(['./kubevirt-types.js']);
  });
});
