// The copies a byte parser makes: TypedArray set and slice, Buffer.concat and Buffer#copy.
type TypedArrayMethods = { set: Uint8Array['set']; slice: Uint8Array['slice'] };

/**
 * Runs `work` and counts the bytes it copied from one buffer into another, so a test can tell a parser whose work
 * grows with what it holds from one whose work grows with its input alone, without timing it.
 */
export function countBytesMoved(work: () => void): number {
  let moved = 0;
  const typedArray = Object.getPrototypeOf(Uint8Array.prototype) as TypedArrayMethods;
  const { set, slice } = typedArray;
  const { concat } = Buffer;
  const { copy } = Buffer.prototype;
  typedArray.set = function (this: Uint8Array, source: ArrayLike<number>, offset?: number) {
    moved += source.length;
    set.call(this, source, offset);
  };
  typedArray.slice = function (this: Uint8Array, start?: number, end?: number) {
    const copied = slice.call(this, start, end);
    moved += copied.length;
    return copied;
  } as Uint8Array['slice'];
  Buffer.concat = (list, totalLength) => {
    const joined = concat(list, totalLength);
    moved += joined.length;
    return joined;
  };
  Buffer.prototype.copy = function (this: Buffer, ...args: Parameters<Buffer['copy']>) {
    const copied = copy.apply(this, args);
    moved += copied;
    return copied;
  };
  try {
    work();
  } finally {
    Object.assign(typedArray, { set, slice });
    Buffer.concat = concat;
    Buffer.prototype.copy = copy;
  }
  return moved;
}
