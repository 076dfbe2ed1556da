import { readdirSync, readFileSync } from 'node:fs';
import { loadYaml } from '@kubernetes/client-node';
import type { VirtualMachine } from '../../../src/kubevirt-types.js';

const directory = new URL('../../fixtures/v0.6.0/', import.meta.url);

/** The names of the v0.6.0 fixture VMs, one per YAML file. */
export const v060FixtureNames: readonly string[] = readdirSync(directory)
  .filter((file) => file.endsWith('.yaml'))
  .map((file) => file.slice(0, -'.yaml'.length))
  .sort();

/** Reads one v0.6.0 fixture VM by name. */
export function loadV060Fixture(name: string): VirtualMachine {
  return loadYaml<VirtualMachine>(readFileSync(new URL(`${name}.yaml`, directory), 'utf8'));
}
