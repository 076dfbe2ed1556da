import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '..');
const forbiddenImports = [/^node:/, /^@kubernetes\/client-node/, /^eventemitter3/, /(^|\/)kube\//];
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

/** Every source file reachable from the given entries (by default ./core: by definition the pure cores). */
function pureCoreFiles(entries = ['src/core/index.ts']): Map<string, string> {
  const files = new Map<string, string>();
  const pending = entries.map((entry) => join(root, entry));
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
    it(`${name} imports no Node built-in, Kubernetes client or event library, and no adapter`, () => {
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

// What a browser bundle cannot load: Node built-ins, the Kubernetes client, the server-side libraries.
const serverOnlyImports = [/^node:/, /^@kubernetes\/client-node/, /^eventemitter3/, /^ws$/, /(^|\/)kube\//];

describe('the browser entries (./client, ./web)', () => {
  const files = pureCoreFiles(['src/client/index.ts', 'src/web/index.ts', 'src/web/page.ts']);

  it('are found by walking the imports of both entries and the served page', () => {
    expect([...files.keys()].some((file) => file.includes('/src/web/'))).toBe(true);
    expect([...files.keys()].some((file) => file.includes('/src/client/'))).toBe(true);
  });

  it('reach no Node built-in, Kubernetes client, server library or adapter, however indirectly', () => {
    const offending = [...files].flatMap(([file, source]) =>
      importsOf(source)
        .filter((specifier) => serverOnlyImports.some((pattern) => pattern.test(specifier)))
        .map((specifier) => `${relative(root, file)} -> ${specifier}`),
    );
    expect(offending).toEqual([]);
  });
});

/** Every TypeScript file under src/, as a path relative to src/ with its source. */
function sourceFiles(): Map<string, string> {
  const files = new Map<string, string>();
  for (const entry of readdirSync(join(root, 'src'), { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
    const file = join(entry.parentPath, entry.name);
    files.set(relative(join(root, 'src'), file), readFileSync(file, 'utf8'));
  }
  return files;
}

/** An import as the layer rules see it: a package name, or a file relative to src/. */
function importTarget(file: string, specifier: string): string {
  if (!specifier.startsWith('.')) return specifier;
  return relative(
    join(root, 'src'),
    resolve(join(root, 'src'), dirname(file), specifier.replace(/\.js$/, '.ts')),
  );
}

const serviceFolders = [
  'claims/',
  'pools/',
  'vm-pools/',
  'ct-pools/',
  'sessions/',
  'connect-planner/',
  'capacity/',
  'usb/',
  'upgrade/',
  'leader/',
  'session-ends/',
  'entitlements/',
  'limits/',
  'waitlist/',
  'spares/',
  'schedules/',
  'rollouts/',
  'pool-status/',
  'metrics/',
  'launch/',
];
const frontEndFolders = ['cli/', 'broker/'];
const browserFolders = ['client/', 'web/'];
// The broker's route table and schemas are pure data, so the browser client builds its calls from them.
const routeTableFiles = new Set([
  'broker/routes.ts',
  'broker/schemas.ts',
  'broker/input-rules.ts',
  'broker/route-declaration.ts',
]);
const browserSafeTargets = new Set(['errors.ts', 'ids.ts']);
// The dev-cluster command exists to start the local control plane, so it alone may reach into testing/.
const testingImporters = new Set(['cli/dev-cluster.ts']);

interface LayerRule {
  name: string;
  breaks(file: string, target: string): boolean;
}

const layerRules: LayerRule[] = [
  {
    name: 'front ends (cli/, broker/) never import @kubernetes/client-node or kube/',
    breaks: (file, target) =>
      frontEndFolders.some((folder) => file.startsWith(folder)) &&
      (target.startsWith('@kubernetes/client-node') || target.startsWith('kube/')),
  },
  {
    name: 'services never import a front end (cli/, broker/)',
    breaks: (file, target) =>
      serviceFolders.some((folder) => file.startsWith(folder)) &&
      frontEndFolders.some((folder) => target.startsWith(folder)),
  },
  {
    name: 'the browser client and page (client/, web/) import only each other, the route table, errors and ids',
    breaks: (file, target) =>
      browserFolders.some((folder) => file.startsWith(folder)) &&
      ![
        'zod/mini',
        '@novnc/novnc',
        '@xterm/xterm',
        '@xterm/xterm/css/xterm.css',
        '@devolutions/iron-remote-desktop',
        '@devolutions/iron-remote-desktop-rdp',
      ].includes(target) &&
      !browserFolders.some((folder) => target.startsWith(folder)) &&
      !routeTableFiles.has(target) &&
      !browserSafeTargets.has(target),
  },
  {
    name: 'only testing/ and the dev-cluster command import testing/',
    breaks: (file, target) =>
      target.startsWith('testing/') && !file.startsWith('testing/') && !testingImporters.has(file),
  },
];

/** The imports that break a layer rule, as `file -> import (rule)`. */
function layerViolations(files: Map<string, string>): string[] {
  const violations: string[] = [];
  for (const [file, source] of files) {
    // an @example in a doc comment imports the published package, not a layer
    for (const specifier of importsOf(withoutComments(source))) {
      const target = importTarget(file, specifier);
      for (const rule of layerRules) {
        if (rule.breaks(file, target)) violations.push(`${file} -> ${specifier} (${rule.name})`);
      }
    }
  }
  return violations;
}

/** Every import cycle among the given files, each as `a -> b -> … -> a`. */
function importCycles(files: Map<string, string>): string[] {
  const edges = new Map<string, string[]>();
  for (const [file, source] of files) {
    edges.set(
      file,
      importsOf(source)
        .filter((specifier) => specifier.startsWith('.'))
        .map((specifier) => importTarget(file, specifier))
        .filter((target) => files.has(target)),
    );
  }
  const cycles: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (file: string) => {
    state.set(file, 'open');
    path.push(file);
    for (const next of edges.get(file) ?? []) {
      if (state.get(next) === 'open') cycles.push([...path.slice(path.indexOf(next)), next].join(' -> '));
      else if (!state.has(next)) visit(next);
    }
    path.pop();
    state.set(file, 'done');
  };
  for (const file of [...files.keys()].sort()) if (!state.has(file)) visit(file);
  return cycles;
}

/** The folder an import sits in, as the layers see it: `claims/`, or a file of src/ itself (`errors.ts`). */
function folderOf(file: string): string {
  const slash = file.indexOf('/');
  return slash === -1 ? file : file.slice(0, slash + 1);
}

/**
 * Every loop between folders, each as `a/ -> b/ -> a/` followed by one import that makes each step: a folder that
 * imports another folder which, however indirectly, imports it back. A loop of files is one too, and is named by
 * {@link importCycles}.
 */
function folderCycles(files: Map<string, string>): string[] {
  const steps = new Map<string, Map<string, string>>();
  for (const [file, source] of files) {
    for (const specifier of importsOf(withoutComments(source))) {
      if (!specifier.startsWith('.')) continue;
      const target = importTarget(file, specifier);
      const [from, to] = [folderOf(file), folderOf(target)];
      if (from === to || !files.has(target)) continue;
      const out = steps.get(from) ?? new Map<string, string>();
      if (!out.has(to)) out.set(to, `${file} -> ${target}`);
      steps.set(from, out);
    }
  }
  const cycles: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (folder: string) => {
    state.set(folder, 'open');
    path.push(folder);
    for (const next of [...(steps.get(folder)?.keys() ?? [])].sort()) {
      if (state.get(next) === 'open') {
        const loop = [...path.slice(path.indexOf(next)), next];
        const via = loop.slice(1).map((to, index) => steps.get(loop[index] as string)?.get(to));
        cycles.push(`${loop.join(' -> ')} (${via.join('; ')})`);
      } else if (!state.has(next)) visit(next);
    }
    path.pop();
    state.set(folder, 'done');
  };
  for (const folder of [...steps.keys()].sort()) if (!state.has(folder)) visit(folder);
  return cycles;
}

describe('the layers', () => {
  const files = sourceFiles();

  it('are checked over every file of src/', () => {
    expect(files.size).toBeGreaterThan(50);
  });

  it('keep every layer rule; a failure names the offending import', () => {
    expect(layerViolations(files)).toEqual([]);
  });

  it('have no import cycle anywhere, testing/ included', () => {
    expect(importCycles(files)).toEqual([]);
  });

  it('have no loop between folders: each folder stands above every folder it imports, testing/ included', () => {
    expect(folderCycles(files)).toEqual([]);
  });
});

describe('the architecture check itself', () => {
  it('names a front end that imports the adapter, a service that imports a front end, and a stray testing/ import', () => {
    const made = new Map([
      ['cli/made-up.ts', "import { KubeCluster } from '../kube/cluster.js';"],
      ['claims/made-up.ts', "import { serveBroker } from '../broker/serve.js';"],
      ['pools/other.ts', "import { startLocalCluster } from '../testing/local-cluster.js';"],
      ['testing/fine.ts', "import { startLocalCluster } from './local-cluster.js';"],
      ['client/made-up.ts', "import { claimDesktop } from '../claims/claim-desktop.js';"],
      ['web/fine.ts', "import { routes } from '../broker/routes.js';"],
    ]);
    expect(layerViolations(made)).toEqual([
      'cli/made-up.ts -> ../kube/cluster.js (front ends (cli/, broker/) never import @kubernetes/client-node or kube/)',
      'claims/made-up.ts -> ../broker/serve.js (services never import a front end (cli/, broker/))',
      'pools/other.ts -> ../testing/local-cluster.js (only testing/ and the dev-cluster command import testing/)',
      'client/made-up.ts -> ../claims/claim-desktop.js (the browser client and page (client/, web/) import only each other, the route table, errors and ids)',
    ]);
  });

  it('finds an import cycle, type-only imports included', () => {
    const made = new Map([
      ['a.ts', "import { b } from './b.js';"],
      ['b.ts', "import type { C } from './c.js';"],
      ['c.ts', "import { a } from './a.js';"],
      ['d.ts', "import { a } from './a.js';"],
    ]);
    expect(importCycles(made)).toEqual(['a.ts -> b.ts -> c.ts -> a.ts']);
  });

  it('finds a loop between folders that no loop of files makes, naming an import of each step', () => {
    const made = new Map([
      ['claims/claim-desktop.ts', "import { planWaitlist } from '../waitlist/plan-waitlist.js';"],
      ['waitlist/plan-waitlist.ts', "import { classifyClaim } from '../claims/claim-liveness.js';"],
      ['claims/claim-liveness.ts', "import { VdiError } from '../errors.js';"],
      ['errors.ts', ''],
    ]);
    expect(importCycles(made)).toEqual([]);
    expect(folderCycles(made)).toEqual([
      'claims/ -> waitlist/ -> claims/ (claims/claim-desktop.ts -> waitlist/plan-waitlist.ts; waitlist/plan-waitlist.ts -> claims/claim-liveness.ts)',
    ]);
  });

  it('flags an adapter import and a clock read in a made-up core file', () => {
    const source = "import { KubeCluster } from '../kube/cluster.js';\nexport const t = () => Date.now();";
    expect(
      importsOf(source).some((specifier) => forbiddenImports.some((pattern) => pattern.test(specifier))),
    ).toBe(true);
    expect(clockReads.some((pattern) => pattern.test(withoutComments(source)))).toBe(true);
  });
});
