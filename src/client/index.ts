// The browser client of the broker: fetch only, no Node.js import, so a page can bundle it.

export type {
  ClaimedDesktopBody,
  ConnectAnswerBody,
  DesktopBody,
  PoolBody,
  RdpTokenBody,
  TaskBody,
  WaiterBody,
} from '../broker/schemas.js';
// the answer schemas the client checks with, for a page that validates what it stores or receives elsewhere
export {
  auditRecordSchema,
  claimedDesktopSchema,
  connectAnswerSchema,
  desktopSchema,
  errorBodySchema,
  poolSchema,
  rdpTokenSchema,
  releaseAcceptedSchema,
  taskSchema,
  waiterSchema,
} from '../broker/schemas.js';
export type { VdiErrorCode } from '../errors.js';
export { isVdiError, VdiError } from '../errors.js';
export type {
  AuditRecordBody,
  ConsoleProtocol,
  ReleaseAcceptedBody,
  VdiClient,
  VdiClientOptions,
} from './vdi-client.js';
export { createVdiClient } from './vdi-client.js';
