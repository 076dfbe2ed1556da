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

// The rules that still take a VirtualMachine, for the readers that hold one (broker, sessions, pools), and the
// v0.6.0 state, which was VMs.
const vmShapedRules = new Set([
  'src/claims/claim-liveness.ts',
  'src/claims/classify-member.ts',
  'src/claims/desktop-view.ts',
  'src/upgrade/classify-legacy.ts',
]);
const kubevirtTypeNames = /\b(VirtualMachine\w*|Vm\w+)\b/;
const vmCalls = /\bcluster\.\w*Vmi?s?\b/;
// Each kind's own folders: its backend (vm/, ct/) and the services of its pools, which name its objects by design
// (a VM pool is its VMs, cloned from a golden VM whose devices capacity/ admits; its warm spares and the marks of
// its schedule are on them, and its roll-out rebuilds them from a new golden VM).
const kindFolders = [
  'vm',
  'vm-pools',
  'pools',
  'spares',
  'schedules',
  'rollouts',
  'capacity',
  'ct',
  'ct-pools',
];
// what is no service: the front ends, the entry points, the adapter and the test bed
const notServices = ['cli', 'broker', 'web', 'client', 'core', 'kube', 'testing'];
const kindImport = new RegExp(`(^|/)(${kindFolders.join('|')})/`);
// pure rules of kind folders that name none of their objects, which the pool status states for every kind
const sharedRules = /\/(schedules\/describe-schedule|rollouts\/describe-rollout|spares\/plan-spares)\.js$/;

function namedImportsOf(source: string, from: RegExp): string[] {
  return [...source.matchAll(/import\s+(?:type\s+)?\{([^}]*)\}\s*from\s*['"]([^'"]+)['"]/g)]
    .filter((match) => from.test(match[2] ?? ''))
    .flatMap((match) => (match[1] ?? '').split(',').map((name) => name.replace(/^\s*type\s+/, '').trim()))
    .filter(Boolean);
}

/** Where a service file breaks the seam: a kind folder's import, a KubeVirt type, or a VM call. */
function breaches(file: string, source: string): string[] {
  const layers = importsOf(source).filter(
    (specifier) => kindImport.test(specifier) && !sharedRules.test(specifier),
  );
  const types = vmShapedRules.has(file)
    ? []
    : namedImportsOf(source, /kubevirt-types/).filter((name) => kubevirtTypeNames.test(name));
  const calls = [...source.matchAll(new RegExp(vmCalls, 'g'))].map((match) => match[0]);
  return [...layers, ...types, ...calls];
}

/** Every TypeScript file under the given folders of src/, as `src/<folder>/<file>`. */
function filesOf(folders: readonly string[]): string[] {
  return folders.flatMap((folder) =>
    readdirSync(resolve(root, 'src', folder), { recursive: true })
      .map(String)
      .filter((name) => name.endsWith('.ts'))
      .map((name) => `src/${folder}/${name}`),
  );
}

describe('the services on the seam', () => {
  const folders = readdirSync(resolve(root, 'src'), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .filter((folder) => !kindFolders.includes(folder) && !notServices.includes(folder));
  const files = filesOf(folders);

  it("are every folder of src/ but the kinds' own, the front ends, the entries, the adapter and the test bed", () => {
    expect(folders).toEqual(
      expect.arrayContaining(['claims', 'connect-planner', 'usb', 'sessions', 'waitlist']),
    );
    expect(files).toContain('src/claims/claim-desktop.ts');
    expect(files).toContain('src/connect-planner/connect.ts');
    expect(files).toContain('src/usb/redirect-usb.ts');
    expect(files).toContain('src/sessions/run-reclaim-pass.ts');
    expect(files).toContain('src/entitlements/pool-entitlement.ts');
    expect(files).toContain('src/metrics/read-pool-counts.ts');
  });

  for (const file of files) {
    it(`${file} reaches members only through a backend and pools through their kind: no kind folder, KubeVirt type or VM call`, () => {
      expect(breaches(file, readFileSync(resolve(root, file), 'utf8'))).toEqual([]);
    });
  }

  it('flags a made-up service that imports a KubeVirt type, the pools layer and calls the cluster for a VM', () => {
    const leaky = [
      "import type { LeaseObject, VirtualMachine } from '../kubevirt-types.js';",
      "import { compareNatural } from '../pools/member-names.js';",
      "import { readCtPool } from '../ct/ct-pool-store.js';",
      'const vm = await ctx.cluster.getVm(namespace, member);',
    ].join('\n');
    expect(breaches('src/metrics/leaky.ts', leaky)).toEqual([
      '../pools/member-names.js',
      '../ct/ct-pool-store.js',
      'VirtualMachine',
      'cluster.getVm',
    ]);
  });
});

// Backends sit below the services: they reach the cluster through kube/ and speak the floor's words (src/*.ts).
const backendFolders = ['vm', 'ct'];

describe('the backends under the services', () => {
  const files = filesOf(backendFolders);

  it('are found in vm/ and ct/', () => {
    expect(files).toContain('src/vm/vm-backend.ts');
    expect(files).toContain('src/ct/ct-backend.ts');
  });

  for (const file of files) {
    it(`${file} imports only its own folder, kube/ and the files of src/ itself`, () => {
      const above = importsOf(readFileSync(resolve(root, file), 'utf8')).filter(
        (specifier) => specifier.startsWith('../') && /^\.\.\/(?!kube\/)[^/]+\//.test(specifier),
      );
      expect(above).toEqual([]);
    });
  }
});
