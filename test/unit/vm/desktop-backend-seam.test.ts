import { readdirSync, readFileSync } from 'node:fs';
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

// The rules that still take a VirtualMachine, for the readers that hold one (broker, sessions, pools).
const vmShapedRules = new Set([
  'src/claims/claim-liveness.ts',
  'src/claims/classify-member.ts',
  'src/claims/desktop-view.ts',
]);
const kubevirtTypeNames = /\b(VirtualMachine\w*|Vm\w+)\b/;
const vmCalls = /\bcluster\.\w*Vmi?s?\b/;

function namedImportsOf(source: string, from: RegExp): string[] {
  return [...source.matchAll(/import\s+(?:type\s+)?\{([^}]*)\}\s*from\s*['"]([^'"]+)['"]/g)]
    .filter((match) => from.test(match[2] ?? ''))
    .flatMap((match) => (match[1] ?? '').split(',').map((name) => name.replace(/^\s*type\s+/, '').trim()))
    .filter(Boolean);
}

/** Where a service file breaks the seam: a backend or pools import, a KubeVirt type, or a VM call. */
function breaches(file: string, source: string): string[] {
  const layers = importsOf(source).filter((specifier) => /(^|\/)(vm|ct|pools)\//.test(specifier));
  const types = vmShapedRules.has(file)
    ? []
    : namedImportsOf(source, /kubevirt-types/).filter((name) => kubevirtTypeNames.test(name));
  const calls = [...source.matchAll(new RegExp(vmCalls, 'g'))].map((match) => match[0]);
  return [...layers, ...types, ...calls];
}

describe('the services on the seam', () => {
  const folders = ['src/claims', 'src/connect-planner', 'src/usb'];
  const files = folders.flatMap((folder) =>
    readdirSync(resolve(root, folder))
      .filter((name) => name.endsWith('.ts'))
      .map((name) => `${folder}/${name}`),
  );

  it('are found in claims, connect and USB', () => {
    expect(files).toContain('src/claims/claim-desktop.ts');
    expect(files).toContain('src/connect-planner/connect.ts');
    expect(files).toContain('src/usb/redirect-usb.ts');
  });

  for (const file of files) {
    it(`${file} reaches members only through a backend: no backend or pools import, KubeVirt type or VM call`, () => {
      expect(breaches(file, readFileSync(resolve(root, file), 'utf8'))).toEqual([]);
    });
  }

  it('flags a made-up service that imports a KubeVirt type, the pools layer and calls the cluster for a VM', () => {
    const leaky = [
      "import type { LeaseObject, VirtualMachine } from '../kubevirt-types.js';",
      "import { compareNatural } from '../pools/member-names.js';",
      'const vm = await ctx.cluster.getVm(namespace, member);',
    ].join('\n');
    expect(breaches('src/claims/leaky.ts', leaky)).toEqual([
      '../pools/member-names.js',
      'VirtualMachine',
      'cluster.getVm',
    ]);
  });
});
