// Moved to src/vm/; kept while recreate-member.ts and src/vm/recreate-vm-member.ts import it from here.
export { cloneNameFor } from '../vm/vm-clone-object.js';
