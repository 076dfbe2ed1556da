import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadYaml } from '@kubernetes/client-node';
import { VdiError } from '../errors.js';
import type { VirtualMachine } from '../kubevirt-types.js';

/** The fixture sets that ship with the package. @category testing */
export type FixtureSet = 'v0.6.0';

function fixtureDir(set: FixtureSet): string {
  // src/testing and dist/testing both sit two levels below the package root.
  return fileURLToPath(new URL(`../../test/fixtures/${set}/`, import.meta.url));
}

/**
 * Loads a set of VirtualMachine fixtures, such as the pool members v0.6.0 left behind, without a namespace so
 * a test can create them wherever it likes.
 *
 * @example
 * ```ts
 * for (const vm of loadFixtures('v0.6.0')) await cluster.createVm('upgrade-test', vm);
 * ```
 * @throws `VdiError` `INVALID_INPUT` for an unknown set.
 * @category testing
 */
export function loadFixtures(set: FixtureSet): VirtualMachine[] {
  if (set !== 'v0.6.0')
    throw new VdiError('INVALID_INPUT', `There is no fixture set "${set}"; the sets are: v0.6.0.`);
  const dir = fixtureDir(set);
  return readdirSync(dir)
    .filter((file) => file.endsWith('.yaml'))
    .sort()
    .map((file) => loadYaml<VirtualMachine>(readFileSync(join(dir, file), 'utf8')));
}
