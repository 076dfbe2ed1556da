// Moved to src/vm/ and pool-member-factory.ts; kept while recreate-member.ts and src/vm/recreate-vm-member.ts
// import it from here.
export { cloneMember, waitForClone } from '../vm/vm-clone-runner.js';
export { defaultCloneTimeoutMs } from './pool-member-factory.js';
