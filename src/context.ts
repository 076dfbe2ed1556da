import type { EventEmitter } from 'eventemitter3';
import type { AuditSink } from './audit.js';
import type { Clock } from './clock.js';
import type { VdiEvents } from './events.js';
import type { KubeCluster } from './kube/cluster.js';

/** What every service shares: the adapter, the clock, the event emitter and the audit sink. */
export interface VdiContext {
  cluster: KubeCluster;
  clock: Clock;
  events: EventEmitter<VdiEvents>;
  audit: AuditSink;
  /** The namespace a call uses when it names none. */
  defaultNamespace: string;
  /** A new, unguessable session ID. */
  newSessionId(): string;
}
