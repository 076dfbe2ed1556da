// The name rules live in validate.ts; these names stay importable from here for the broker.
export { isValidVmName, maxPoolNameLength, maxSubdomainLength, validatePoolName } from '../validate.js';
