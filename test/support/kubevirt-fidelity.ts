import type { KubevirtWrite } from '../../src/testing/kubevirt-writes.js';

/** A field a write sent that the stored object does not hold as sent: pruned, changed or refused silently. */
export interface LostField {
  write: string;
  path: string;
  sent: unknown;
  stored: unknown;
}

// The apiserver owns these; a client's value for them is not expected back.
const serverOwned = new Set([
  'metadata.resourceVersion',
  'metadata.uid',
  'metadata.generation',
  'metadata.creationTimestamp',
  'metadata.managedFields',
  'metadata.selfLink',
]);

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function isObject(value: unknown): value is Record<string, Json> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function at(value: unknown, path: string[]): unknown {
  let current = value;
  for (const key of path) {
    if (Array.isArray(current)) current = current[Number(key)];
    else if (isObject(current)) current = current[key];
    else return undefined;
  }
  return current;
}

/** Every leaf of a JSON value with its path; empty objects and arrays are leaves too. */
function leaves(value: unknown, path: string[] = []): Array<[string[], unknown]> {
  if (isObject(value) && Object.keys(value).length > 0) {
    return Object.entries(value).flatMap(([key, child]) => leaves(child, [...path, key]));
  }
  if (Array.isArray(value) && value.length > 0) {
    return value.flatMap((child, index) => leaves(child, [...path, String(index)]));
  }
  return [[path, value]];
}

function describeWrite(write: KubevirtWrite): string {
  const subresource = write.subresource ? `/${write.subresource}` : '';
  return `${write.verb} ${write.resource}${subresource} ${write.namespace}/${write.name}`;
}

/** The part of the object a write may change: the status subresource takes status only, the object all but it. */
function writesTo(write: KubevirtWrite, hasStatusSubresource: boolean): (path: string[]) => boolean {
  if (write.subresource === 'status') return (path) => path[0] === 'status';
  if (hasStatusSubresource) return (path) => path[0] !== 'status';
  return () => true;
}

interface SentField {
  path: string[];
  value: unknown;
  removed: boolean;
}

function sentFields(write: KubevirtWrite): SentField[] {
  if (write.contentType.startsWith('application/json-patch+json') && Array.isArray(write.request)) {
    // a JSON patch: what its add and replace operations set, and what its removes take away
    return (write.request as Array<{ op: string; path: string; value?: unknown }>).flatMap(
      (operation): SentField[] => {
        const path = operation.path
          .split('/')
          .slice(1)
          .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'));
        if (operation.op === 'remove') return [{ path, value: undefined, removed: true }];
        if (operation.op !== 'add' && operation.op !== 'replace') return [];
        return leaves(operation.value, path).map(([leafPath, value]) => ({
          path: leafPath,
          value,
          removed: false,
        }));
      },
    );
  }
  // an object, or a merge or apply patch, in which null removes a field
  return leaves(write.request).map(([path, value]) => ({
    path,
    value,
    removed: write.verb === 'patch' && value === null,
  }));
}

/**
 * The fields that successful writes sent and the apiserver did not store as sent. `statusSubresource` names the
 * resources whose status only the status subresource writes (there, a write of the object keeps the old status).
 */
export function findLostFields(writes: KubevirtWrite[], statusSubresource: ReadonlySet<string>): LostField[] {
  const lost: LostField[] = [];
  for (const write of writes) {
    if (write.code < 200 || write.code >= 300) continue;
    const inScope = writesTo(write, statusSubresource.has(write.resource));
    for (const { path, value, removed } of sentFields(write)) {
      const dotted = path.join('.');
      if (!inScope(path) || serverOwned.has(path.slice(0, 2).join('.'))) continue;
      if (path[0] === 'apiVersion' || path[0] === 'kind') continue;
      const stored = at(write.stored, path);
      // an empty map of labels or annotations carries nothing; the apiserver leaves it out
      if (
        path[0] === 'metadata' &&
        stored === undefined &&
        isObject(value) &&
        Object.keys(value).length === 0
      )
        continue;
      const kept = removed ? stored === undefined : JSON.stringify(stored) === JSON.stringify(value);
      if (!kept) lost.push({ write: describeWrite(write), path: dotted, sent: value, stored });
    }
  }
  return lost;
}

/**
 * The fields a create stored that it did not send: the schema's defaults, which a reader meets as if the writer had
 * set them. Server-owned metadata and status are left out.
 */
export function findDefaultedFields(writes: KubevirtWrite[]): string[] {
  const found = new Set<string>();
  for (const write of writes) {
    if (write.verb !== 'create' || write.code < 200 || write.code >= 300) continue;
    for (const [path] of leaves(write.stored)) {
      if (path[0] === 'status' || path[0] === 'metadata') continue;
      if (at(write.request, path) !== undefined) continue;
      // a leaf inside an array the request sent is its element's default
      found.add(`${write.resource} ${path.map((key) => (/^\d+$/.test(key) ? '[]' : key)).join('.')}`);
    }
  }
  return [...found].sort();
}
