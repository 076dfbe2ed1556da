import { freeSinceAnnotation } from '../keys.js';
import { parseRfc3339 } from '../parse-time.js';

/**
 * When each member was first seen free by a schedule's keeper (`corral.dev/vdi-free-since` on its VM, or on a
 * container member's Pod), by name.
 */
export function freeSinceOf(
  objects: ReadonlyArray<{ metadata: { name?: string; annotations?: Record<string, string> } }>,
): Map<string, Date> {
  const marks = new Map<string, Date>();
  for (const object of objects) {
    const text = object.metadata.annotations?.[freeSinceAnnotation];
    const at = text === undefined ? undefined : parseRfc3339(text);
    if (at) marks.set(object.metadata.name ?? '', at);
  }
  return marks;
}
