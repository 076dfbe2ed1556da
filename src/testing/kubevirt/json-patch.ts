/** One RFC 6902 operation. */
export type JsonPatchOperation =
  | { op: 'add' | 'replace' | 'test'; path: string; value: unknown }
  | { op: 'remove'; path: string }
  | { op: 'move' | 'copy'; from: string; path: string };

/** The outcome of {@link applyJsonPatch}: the patched copy, or why an operation could not apply. */
export type JsonPatchResult = { kind: 'patched'; document: unknown } | { kind: 'invalid'; message: string };

type Container = Record<string, unknown> | unknown[];

const operations = new Set(['add', 'remove', 'replace', 'move', 'copy', 'test']);

/** Reads KubeVirt-style patches (one JSON operation per string) into operations, or says which one is malformed. */
export function parseJsonPatches(patches: readonly string[]): JsonPatchOperation[] | { invalid: string } {
  const parsed: JsonPatchOperation[] = [];
  for (const text of patches) {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return { invalid: `patch ${text} is not JSON` };
    }
    const candidate = value as { op?: unknown; path?: unknown; from?: unknown };
    if (
      typeof value !== 'object' ||
      value === null ||
      typeof candidate.op !== 'string' ||
      !operations.has(candidate.op)
    ) {
      return { invalid: `patch ${text} has no valid "op"` };
    }
    if (typeof candidate.path !== 'string') return { invalid: `patch ${text} has no "path"` };
    if ((candidate.op === 'move' || candidate.op === 'copy') && typeof candidate.from !== 'string') {
      return { invalid: `patch ${text} has no "from"` };
    }
    if (
      (candidate.op === 'add' || candidate.op === 'replace' || candidate.op === 'test') &&
      !('value' in candidate)
    ) {
      return { invalid: `patch ${text} has no "value"` };
    }
    parsed.push(value as JsonPatchOperation);
  }
  return parsed;
}

function parsePointer(pointer: string): string[] | undefined {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) return undefined;
  return pointer
    .slice(1)
    .split('/')
    .map((token) => token.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function isContainer(value: unknown): value is Container {
  return typeof value === 'object' && value !== null;
}

function arrayIndex(token: string, length: number, allowEnd: boolean): number | undefined {
  if (allowEnd && token === '-') return length;
  if (!/^(0|[1-9][0-9]*)$/.test(token)) return undefined;
  const index = Number(token);
  return index < length || (allowEnd && index === length) ? index : undefined;
}

function childOf(container: Container, token: string): { found: boolean; value: unknown } {
  if (Array.isArray(container)) {
    const index = arrayIndex(token, container.length, false);
    return index === undefined
      ? { found: false, value: undefined }
      : { found: true, value: container[index] };
  }
  return Object.hasOwn(container, token)
    ? { found: true, value: container[token] }
    : { found: false, value: undefined };
}

function resolveParent(document: unknown, tokens: string[]): Container | undefined {
  let current: unknown = document;
  for (const token of tokens.slice(0, -1)) {
    if (!isContainer(current)) return undefined;
    const child = childOf(current, token);
    if (!child.found) return undefined;
    current = child.value;
  }
  return isContainer(current) ? current : undefined;
}

function read(document: unknown, tokens: string[]): { found: boolean; value: unknown } {
  if (tokens.length === 0) return { found: true, value: document };
  const parent = resolveParent(document, tokens);
  return parent === undefined ? { found: false, value: undefined } : childOf(parent, tokens.at(-1) as string);
}

function isDeepEqual(left: unknown, right: unknown): boolean {
  if (left === right) return true;
  if (!isContainer(left) || !isContainer(right) || Array.isArray(left) !== Array.isArray(right)) return false;
  const leftKeys = Object.keys(left);
  const rightKeys = Object.keys(right);
  if (leftKeys.length !== rightKeys.length) return false;
  return leftKeys.every(
    (key) =>
      Object.hasOwn(right, key) &&
      isDeepEqual((left as Record<string, unknown>)[key], (right as Record<string, unknown>)[key]),
  );
}

class PatchFailure extends Error {}

// Each step returns the new root, which differs from the old one only when the path is "".
function addAt(document: unknown, tokens: string[], value: unknown): unknown {
  if (tokens.length === 0) return value;
  const parent = resolveParent(document, tokens);
  const last = tokens.at(-1) as string;
  if (parent === undefined) throw new PatchFailure('its parent does not exist');
  if (Array.isArray(parent)) {
    const index = arrayIndex(last, parent.length, true);
    if (index === undefined) throw new PatchFailure(`index ${last} is out of range`);
    parent.splice(index, 0, value);
  } else {
    parent[last] = value;
  }
  return document;
}

function removeAt(document: unknown, tokens: string[]): unknown {
  const parent = tokens.length === 0 ? undefined : resolveParent(document, tokens);
  const last = tokens.at(-1) as string;
  if (parent === undefined || !childOf(parent, last).found) throw new PatchFailure('the path does not exist');
  if (Array.isArray(parent)) parent.splice(Number(last), 1);
  else delete parent[last];
  return document;
}

function pointerOf(pointer: string): string[] {
  const tokens = parsePointer(pointer);
  if (tokens === undefined) throw new PatchFailure(`${pointer} is not a JSON pointer`);
  return tokens;
}

function applyOperation(document: unknown, operation: JsonPatchOperation): unknown {
  const tokens = pointerOf(operation.path);
  switch (operation.op) {
    case 'add':
      return addAt(document, tokens, structuredClone(operation.value));
    case 'remove':
      return removeAt(document, tokens);
    case 'replace': {
      if (tokens.length === 0) return structuredClone(operation.value);
      // Like evanphx/json-patch v4, which KubeVirt applies clone patches with, a missing object member is added.
      const parent = resolveParent(document, tokens);
      const found = read(document, tokens).found;
      if (!found && (parent === undefined || Array.isArray(parent)))
        throw new PatchFailure('the path does not exist');
      return addAt(found ? removeAt(document, tokens) : document, tokens, structuredClone(operation.value));
    }
    case 'test': {
      const current = read(document, tokens);
      if (!current.found || !isDeepEqual(current.value, operation.value))
        throw new PatchFailure('the test failed');
      return document;
    }
    case 'move':
    case 'copy': {
      const fromTokens = pointerOf(operation.from);
      const source = read(document, fromTokens);
      if (!source.found) throw new PatchFailure(`from ${operation.from} does not exist`);
      if (operation.op === 'move' && operation.path.startsWith(`${operation.from}/`)) {
        throw new PatchFailure('a value cannot move into itself');
      }
      const value = structuredClone(source.value);
      return addAt(operation.op === 'move' ? removeAt(document, fromTokens) : document, tokens, value);
    }
  }
}

/**
 * Applies RFC 6902 operations to a copy of `document`. The input is never changed; an operation that cannot apply
 * (a missing path, a failed `test`) stops the whole patch, as the RFC requires. One leniency, KubeVirt's: `replace`
 * of a missing member of an existing object adds it.
 */
export function applyJsonPatch(document: unknown, patch: readonly JsonPatchOperation[]): JsonPatchResult {
  let current: unknown = structuredClone(document);
  for (const operation of patch) {
    try {
      current = applyOperation(current, operation);
    } catch (error) {
      if (!(error instanceof PatchFailure)) throw error;
      return { kind: 'invalid', message: `${operation.op} ${operation.path}: ${error.message}` };
    }
  }
  return { kind: 'patched', document: current };
}
