// Lets plain Node run any of this project's TypeScript, parameter properties included (Node only strips types):
// imports name `.js` files that exist as `.ts` sources, and each `.ts` source goes through esbuild.
import { readFileSync } from 'node:fs';
import { registerHooks } from 'node:module';
import { fileURLToPath } from 'node:url';
import { transformSync } from 'esbuild';

registerHooks({
  resolve(specifier, context, next) {
    try {
      return next(specifier, context);
    } catch (error) {
      if (!specifier.startsWith('.') || !specifier.endsWith('.js')) throw error;
      return next(`${specifier.slice(0, -3)}.ts`, context);
    }
  },
  load(url, context, next) {
    if (!url.startsWith('file:') || !url.endsWith('.ts')) return next(url, context);
    const path = fileURLToPath(url);
    const { code } = transformSync(readFileSync(path, 'utf8'), {
      loader: 'ts',
      format: 'esm',
      target: 'node24',
      sourcefile: path,
    });
    return { format: 'module', source: code, shortCircuit: true };
  },
});
