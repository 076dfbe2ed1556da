import { isVdiError, type VdiError } from '../../src/errors.js';

/** The `VdiError` a call fails with; a call that succeeds, or fails with anything else, fails the test. */
export async function failureOf(call: Promise<unknown>): Promise<VdiError> {
  const error = await call.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!isVdiError(error)) throw new Error(`expected a VdiError, got ${String(error)}`);
  return error;
}
