export type { Clock } from './clock.js';
export type { VdiErrorCode, VdiErrorOptions } from './errors.js';
export { httpStatusByCode, isVdiError, VdiError } from './errors.js';
