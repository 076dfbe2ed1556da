import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = resolve(import.meta.dirname, '../../..');
const tsc = join(root, 'node_modules/typescript/bin/tsc');
const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;

interface Packed {
  filename: string;
  unpackedSize: number;
}

let scratch: string;
let consumer: string;
let installed: string;
let packed: Packed;

/** The README's "Use it" code, as a reader copies it. */
function readmeExample(): string {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const code = /## Use it\n[\s\S]*?```ts\n([\s\S]*?)```/.exec(readme)?.[1];
  if (code === undefined) throw new Error('README.md has no ```ts block under "## Use it"');
  return code;
}

/**
 * A consumer project that depends on the tarball alone. Its lockfile pins the package's dependencies as this
 * project's lockfile does (the entries no devDependency brought), so the install runs offline after `npm ci`.
 */
function writeConsumer(tarball: string): void {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'));
  const dependencies = { [pkg.name]: `file:../${tarball}` };
  const packages: Record<string, unknown> = {
    '': { name: 'consumer', dependencies },
    [`node_modules/${pkg.name}`]: {
      version: pkg.version,
      resolved: `file:../${tarball}`,
      license: pkg.license,
      dependencies: pkg.dependencies,
      bin: pkg.bin,
      engines: pkg.engines,
    },
  };
  for (const [path, entry] of Object.entries<{ dev?: boolean; link?: boolean }>(lock.packages)) {
    if (path !== '' && !entry.dev && !entry.link) packages[path] = entry;
  }
  const manifest = { name: 'consumer', private: true, type: 'module', dependencies };
  writeFileSync(join(consumer, 'package.json'), JSON.stringify(manifest, null, 2));
  writeFileSync(
    join(consumer, 'package-lock.json'),
    JSON.stringify({ name: 'consumer', lockfileVersion: 3, requires: true, packages }, null, 2),
  );
}

/** Typechecks `code` in the consumer with `compilerOptions`; resolves with tsc's exit code, output and files. */
async function typecheck(name: string, code: string, compilerOptions: Record<string, unknown>) {
  writeFileSync(join(consumer, `${name}.ts`), code);
  const config = join(consumer, `tsconfig.${name}.json`);
  const options = { strict: true, noEmit: true, target: 'es2022', ...compilerOptions };
  writeFileSync(config, JSON.stringify({ compilerOptions: options, files: [`${name}.ts`] }));
  try {
    const { stdout } = await run(process.execPath, [tsc, '--project', config, '--listFiles'], {
      cwd: consumer,
    });
    return { code: 0, errors: '', files: stdout.split('\n').filter(Boolean) };
  } catch (error) {
    const { code, stdout } = error as { code: number; stdout: string };
    const lines = stdout.split('\n');
    return { code, errors: lines.filter((line) => / error TS\d+/.test(line)).join('\n'), files: lines };
  }
}

/** Bundles `code` as a page would, from the installed package: the gzipped sizes and esbuild's warnings. */
async function bundle(name: string, code: string) {
  const entry = join(consumer, `page-${name}.js`);
  writeFileSync(entry, code);
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    minify: true,
    platform: 'browser',
    format: 'esm',
    splitting: true,
    outdir: join(scratch, `bundle-${name}`),
    write: false,
    logLevel: 'silent',
  });
  const sizes = result.outputFiles.map((file) => ({
    path: file.path,
    gzipped: gzipSync(file.contents).length,
  }));
  const first = sizes.find((file) => file.path.endsWith(`/page-${name}.js`))?.gzipped ?? Number.NaN;
  const warnings = result.warnings.map((warning) => warning.text);
  return { first, total: sizes.reduce((sum, file) => sum + file.gzipped, 0), warnings };
}

function filesUnder(folder: string): string[] {
  return readdirSync(folder, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name));
}

beforeAll(async () => {
  if (!existsSync(join(root, 'dist/index.js'))) {
    throw new Error('dist/ is missing: build the package first (npx tsup), as scripts/test.sh does.');
  }
  scratch = mkdtempSync(join(tmpdir(), 'corral-vdi-package-'));
  consumer = join(scratch, 'consumer');
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', scratch], {
    cwd: root,
    maxBuffer: 64 * 1024 * 1024,
  });
  packed = (JSON.parse(stdout) as Packed[])[0] as Packed;
  console.log(`packed ${packed.filename}: ${(packed.unpackedSize / 1024 / 1024).toFixed(1)} MiB unpacked`);
  await run('mkdir', [consumer]);
  writeConsumer(packed.filename);
  await run('npm', ['ci', '--offline', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: consumer });
  installed = join(consumer, 'node_modules/@corral/vdi');
}, 120_000);

afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

// What a Node project reaches only through Node's types; a page must reach none of it.
const nodeOnlyTypes = /node_modules\/(@types\/node|@types\/ws|ws|isomorphic-ws|@kubernetes\/client-node)\//;

// Each case is a tsc, esbuild or file walk of its own over the installed package: they run side by side.
describe.concurrent('the packed package in a fresh consumer project', () => {
  it.each([
    ['nodenext', { module: 'nodenext', moduleResolution: 'nodenext' }],
    ['node16', { module: 'node16', moduleResolution: 'node16' }],
    ['bundler', { module: 'esnext', moduleResolution: 'bundler' }],
  ])('typechecks the README example under strict %s without skipLibCheck', async (mode, options) => {
    const checked = await typecheck(`use-it-${mode}`, readmeExample(), { ...options, types: ['node'] });
    expect(checked.errors).toBe('');
    expect(checked.code).toBe(0);
  });

  it.each([
    [
      'core',
      `import { parseDuration } from '@corral/vdi/core';\nexport const ms: number = parseDuration('1h');\n`,
    ],
    [
      'client',
      `import { createVdiClient } from '@corral/vdi/client';\nexport const client = createVdiClient({ baseUrl: 'https://corral.example/' });\n`,
    ],
    ['web', `import { defineCorralDesktops } from '@corral/vdi/web';\ndefineCorralDesktops();\n`],
  ])('typechecks /%s in a DOM-only project, reaching no Node type', async (entry, code) => {
    const checked = await typecheck(`browser-${entry}`, code, {
      module: 'esnext',
      moduleResolution: 'bundler',
      lib: ['es2022', 'dom'],
      types: [],
    });
    expect(checked.errors).toBe('');
    expect(checked.code).toBe(0);
    expect(checked.files.filter((file) => nodeOnlyTypes.test(file))).toEqual([]);
  });

  it('bundles small for the browser: /client, one import of /core, the first chunk of /web', async () => {
    const core = await bundle(
      'core',
      `import { parseDuration } from '@corral/vdi/core';\nparseDuration('1h');\n`,
    );
    const client = await bundle(
      'client',
      `import { createVdiClient } from '@corral/vdi/client';\ncreateVdiClient({ baseUrl: '/' });\n`,
    );
    const web = await bundle(
      'web',
      `import { defineCorralDesktops } from '@corral/vdi/web';\ndefineCorralDesktops();\n`,
    );
    console.log(
      `min+gzip: /core parseDuration ${kib(core.total)}, /client ${kib(client.total)}, ` +
        `/web first chunk ${kib(web.first)} (all chunks ${kib(web.total)})`,
    );
    expect([...core.warnings, ...client.warnings, ...web.warnings]).toEqual([]);
    expect(core.total).toBeLessThanOrEqual(15 * 1024);
    expect(client.total).toBeLessThanOrEqual(25 * 1024);
    expect(web.first).toBeLessThanOrEqual(40 * 1024);
  });

  it('ships no source map that points at a file it does not ship', () => {
    const missing: string[] = [];
    for (const file of filesUnder(installed)) {
      if (/\.(c|m)?js$/.test(file)) {
        const url = /\/\/# sourceMappingURL=(\S+)\s*$/.exec(readFileSync(file, 'utf8'))?.[1];
        if (url && !url.startsWith('data:') && !existsSync(resolve(dirname(file), url))) {
          missing.push(`${relative(installed, file)} -> ${url}`);
        }
      }
      if (file.endsWith('.map')) {
        const map = JSON.parse(readFileSync(file, 'utf8')) as { sourceRoot?: string; sources: string[] };
        for (const source of map.sources) {
          const path = resolve(dirname(file), map.sourceRoot ?? '', source);
          if (!path.startsWith(`${installed}/`) || !existsSync(path)) {
            missing.push(`${relative(installed, file)} -> ${source}`);
          }
        }
      }
    }
    expect({ count: missing.length, first: missing.slice(0, 5) }).toEqual({ count: 0, first: [] });
  });

  it('ships the build scripts the test kit runs, and the KubeVirt one answers from where it is installed', async () => {
    for (const file of [
      'build-control-plane.sh',
      'build-kubevirt.sh',
      'kubevirt-build-module.sh',
      'kubevirt-install/main.go',
    ]) {
      expect(existsSync(join(installed, 'scripts', file)), file).toBe(true);
    }
    // the binaries are cached by the test command's set-up, so the script only finds and names them
    const { stdout } = await run('bash', [join(installed, 'scripts/build-kubevirt.sh')]);
    expect(stdout.trim()).toMatch(/\/kubevirt-v\d+\.\d+\.\d+$/);
  });

  it('publishes as public, as a scoped package must say', () => {
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8'));
    expect(manifest.publishConfig).toEqual({ access: 'public' });
  });
});
