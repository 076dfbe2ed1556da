import { freeSinceAnnotation } from '../keys.js';
import type { VirtualMachine } from '../kubevirt-types.js';
import { parseRfc3339 } from '../parse-time.js';

/** When each member VM was first seen free by a schedule's keeper (`corral.dev/vdi-free-since`), by name. */
export function freeSinceOf(vms: readonly VirtualMachine[]): Map<string, Date> {
  const marks = new Map<string, Date>();
  for (const vm of vms) {
    const text = vm.metadata.annotations?.[freeSinceAnnotation];
    const at = text === undefined ? undefined : parseRfc3339(text);
    if (at) marks.set(vm.metadata.name ?? '', at);
  }
  return marks;
}
