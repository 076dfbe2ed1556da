// What the storm's parent and its driver processes tell each other.
import type { CallRecord } from './history.js';

/** A pool the storm works on. */
export interface StormPool {
  name: string;
  ephemeral: boolean;
  /** Its guests take `slowStopMs` of shared time to stop. */
  slowStop: boolean;
}

/** What the parent tells a driver process, as JSON in its one argument. */
export interface DriverConfig {
  proc: number;
  seed: number;
  ops: number;
  /** Milliseconds since the epoch after which no new operation starts. */
  deadline: number;
  kubeconfigPath: string;
  namespace: string;
  golden: string;
  pools: StormPool[];
  identities: string[];
  admin: string;
  maxPoolSize: number;
  slowStopMs: number;
}

/** A line a driver writes besides its calls. */
export type DriverLine =
  | CallRecord
  | { kind: 'done'; proc: number; ops: number }
  | { kind: 'driver-error'; proc: number; message: string };
