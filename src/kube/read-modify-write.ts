import { isVdiError } from '../errors.js';
import type { KubeObject, ResourceClient, Versioned } from './resource.js';
import { versioned } from './resource.js';

/** What {@link readModifyWrite} reads and writes: one namespace's objects of one kind. */
export type ObjectStore<K extends KubeObject> = Pick<ResourceClient<K>, 'get' | 'create' | 'replace'>;

/** Options of {@link readModifyWrite}. */
export interface ReadModifyWriteOptions<K> {
  /** The object as the caller read it (`undefined`: none there); the first try starts from it instead of a read. */
  known?: { object: K | undefined };
  /** Tries in all: a conflict on the last one is thrown. @defaultValue 5 */
  attempts?: number;
}

/** How a {@link readModifyWrite} ended: the object written, or what was read when `modify` had nothing to write. */
export type ReadModifyWriteResult<K> =
  | { kind: 'written'; object: K }
  | { kind: 'unchanged'; current: K | undefined };

/**
 * Reads an object, lets `modify` decide the next one from it, and commits that with the resourceVersion read: a
 * replace of the object read, or a create when there was none. A write another made meanwhile (`CONFLICT`) makes it
 * read and modify again, up to `attempts` tries. `modify` returns `undefined` when there is nothing to write.
 *
 * @throws `VdiError` `CONFLICT` when every try met another write; any other failure of a read or a write at once.
 */
export async function readModifyWrite<K extends KubeObject>(
  store: ObjectStore<K>,
  name: string,
  modify: (current: K | undefined) => K | undefined,
  options: ReadModifyWriteOptions<K> = {},
): Promise<ReadModifyWriteResult<K>> {
  const attempts = options.attempts ?? 5;
  let known = options.known;
  for (let attempt = 1; ; attempt += 1) {
    const current = known ? known.object : await store.get(name);
    known = undefined;
    const next = modify(current);
    if (next === undefined) return { kind: 'unchanged', current };
    try {
      return { kind: 'written', object: await commit(store, current, next) };
    } catch (error) {
      if (!isVdiError(error, 'CONFLICT') || attempt >= attempts) throw error;
    }
  }
}

// the version read, not whatever `next` carries: a change made since the read is refused
function commit<K extends KubeObject>(store: ObjectStore<K>, current: K | undefined, next: K): Promise<K> {
  if (current === undefined) return store.create(next);
  const read = versioned(current, `replace ${next.metadata.name ?? ''}`).metadata.resourceVersion;
  return store.replace({ ...next, metadata: { ...next.metadata, resourceVersion: read } } as Versioned<K>);
}
