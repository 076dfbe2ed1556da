// The pure cores only: nothing here imports Node built-ins, client-node or any I/O, so a browser can load it.
export type { Clock } from '../clock.js';
export type { VdiErrorCode, VdiErrorOptions } from '../errors.js';
export { httpStatusByCode, isVdiError, VdiError } from '../errors.js';
