import { loadYaml } from '@kubernetes/client-node';
import { VdiError } from '../errors.js';

/**
 * Reads a container pool spec written as YAML (or JSON, which is YAML too), as `ct-pool apply -f` takes it. It
 * only parses: {@link parseCtPoolSpec} checks the fields.
 *
 * @example
 * ```ts
 * const raw = readCtPoolSpecText('name: devbox\nimage: ghcr.io/acme/devbox:1.4\nsize: 3\n', 'spec.yaml');
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` when the text is not YAML, or not one mapping.
 * @category ct-pools
 */
export function readCtPoolSpecText(text: string, source: string): Record<string, unknown> {
  let raw: unknown;
  try {
    raw = loadYaml(text);
  } catch (error) {
    throw new VdiError('INVALID_INPUT', `${source} is not YAML: ${(error as Error).message.split('\n')[0]}`, {
      details: { source },
      cause: error,
    });
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new VdiError(
      'INVALID_INPUT',
      `${source} holds no container pool spec; write one mapping with name, image and size, as in docs/ct-pools.md.`,
      { details: { source } },
    );
  }
  return raw as Record<string, unknown>;
}
