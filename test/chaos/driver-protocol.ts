// What the storm's parent and its driver processes tell each other.
import type { CallRecord } from './history.js';

/** A pool the storm works on. */
export interface StormPool {
  name: string;
  ephemeral: boolean;
  /** Its guests take `slowStopMs` of shared time to stop. */
  slowStop: boolean;
}

/** One of a driver's lanes: a loop of calls of its own, as a user of its own that the apiserver's audit names. */
export interface DriverLane {
  /** The lane's administrator (group `system:masters`), a user named after the lane. */
  kubeconfigPath: string;
  user: string;
}

/** What the parent tells a driver process, as JSON in its one argument. */
export interface DriverConfig {
  proc: number;
  seed: number;
  /** Operations of the whole process, shared by its lanes. */
  ops: number;
  /** Milliseconds since the epoch after which no new operation starts, once the process has run `minOps`. */
  deadline: number;
  /** Operations the process runs past `deadline` if it has not yet, on a slow machine. */
  minOps: number;
  /** Milliseconds since the epoch after which no new operation starts at all. */
  finalDeadline: number;
  /** The storm's administrator, for the shared clock. */
  kubeconfigPath: string;
  lanes: DriverLane[];
  namespace: string;
  golden: string;
  pools: StormPool[];
  identities: string[];
  admin: string;
  maxPoolSize: number;
  slowStopMs: number;
  /** How often a contest is chosen (see the driver's weights); 0 leaves it out. */
  contestWeight?: number;
}

/** A line a driver writes besides its calls. */
export type DriverLine =
  | CallRecord
  | { kind: 'done'; proc: number; ops: number }
  | { kind: 'driver-error'; proc: number; message: string };
