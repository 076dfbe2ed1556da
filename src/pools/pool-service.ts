// The pool service: one file per call, gathered here for the SDK's entry and the front ends.

export { defaultPoolActor, maxPoolSize } from '../pool-options.js';
export type { CreatePoolOptions, CreatePoolResult } from './create-pool.js';
export { createPool } from './create-pool.js';
export type { DeletePoolOptions, DeletePoolResult } from './delete-pool.js';
export { deletePool } from './delete-pool.js';
export type { ListPoolsOptions, PoolOptions } from './list-pools.js';
export { getPool, listPools } from './list-pools.js';
export type { ResizePoolOptions, ResizePoolResult } from './resize-pool.js';
export { resizePool } from './resize-pool.js';
export type { SetPoolOptions, SetPoolResult } from './set-pool.js';
export { setPool } from './set-pool.js';
export type { SetPoolSettingsOptions, SetPoolSettingsResult } from './set-pool-settings.js';
export { setPoolSettings } from './set-pool-settings.js';
