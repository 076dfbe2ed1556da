// The records a chaos storm collects: what the driver processes called and what the watches saw change.

/** What a failed call threw, as the driver saw it. */
export interface CallError {
  name: string;
  code?: string;
  message: string;
}

/** What a call that succeeded answered, reduced to what the invariants need. */
export interface CallAnswer {
  member?: string;
  sessionId?: string;
  owner?: string;
}

/** One SDK call made by a driver process, with its outcome; times are milliseconds since the epoch. */
export interface CallRecord {
  kind: 'call';
  proc: number;
  /** The lane of the process that made it; its writes are audited as that lane's user. */
  lane: number;
  seq: number;
  op: string;
  /** Calls started together, such as the two claims of a double-click, share a group. */
  group?: number;
  identity?: string;
  pool?: string;
  member?: string;
  asAdmin?: boolean;
  startedAt: number;
  endedAt: number;
  outcome: { ok: true; answer?: CallAnswer } | { ok: false; error: CallError };
}

/** The kinds of change a watch reports. */
export type ChangeType = 'ADDED' | 'MODIFIED' | 'DELETED';

interface ChangeBase {
  type: ChangeType;
  /** When the watching process received it. */
  at: number;
  resourceVersion: number;
  name: string;
}

/** A version of a Lease. Member claims carry `member` and `pool`; claimant Leases carry neither. */
export interface LeaseChange extends ChangeBase {
  kind: 'lease';
  /** The Lease object's uid: a session's end by delete is the delete that named it as precondition. */
  uid?: string;
  member?: string;
  pool?: string;
  holder?: string;
  sessionId?: string;
  releasing?: string;
  /** The `corral.dev/vdi-reset-due` mark: a takeover that has not reset its member yet, so not handed out. */
  resetDue?: string;
  renewTime?: string;
  durationSeconds?: number;
}

/** A version of a VirtualMachine. */
export interface VmChange extends ChangeBase {
  kind: 'vm';
  pool?: string;
  assignedTo?: string;
  /** The session of the claim the member is presented with (`corral.dev/vdi-session-id`). */
  sessionId?: string;
  printableStatus?: string;
  /** `spec.runStrategy`: `Halted` while a stop is asked. */
  runStrategy?: string;
}

/** A version of a VirtualMachineInstance (named after its VM). */
export interface VmiChange extends ChangeBase {
  kind: 'vmi';
  uid: string;
  phase?: string;
}

/** A move of the namespace clock that the SDK processes and the simulator share. */
export interface ClockChange extends ChangeBase {
  kind: 'clock';
  /** The shared time, milliseconds since the epoch. */
  now: number;
}

export type Change = LeaseChange | VmChange | VmiChange | ClockChange;

/**
 * A write to a Lease as the apiserver's audit log has it: who sent it (a lane's user) and when the apiserver
 * received and answered it (ms since the epoch, the clock the drivers read). `member`, `holder` and `sessionId`
 * are what a create or update sent, and `releasing` its `corral.dev/vdi-releasing` mark; a delete sends none.
 */
export interface LeaseWrite {
  kind: 'lease-write';
  verb: 'create' | 'update' | 'delete';
  name: string;
  user: string;
  ok: boolean;
  receivedAt: number;
  /** When the apiserver finished answering it. */
  at: number;
  member?: string;
  holder?: string;
  sessionId?: string;
  releasing?: string;
  /** The uid a delete named as its precondition: the object it deleted, whatever the order the audit logged it in. */
  preconditionUid?: string;
}

/** A storm's call-making lane as the audit names it: the user `user` is lane `lane` of process `proc`. */
export interface LaneUser {
  user: string;
  proc: number;
  lane: number;
}

/** Leases and VMs as listed once the storm is over and one engine pass has run. */
export interface RestState {
  leases: LeaseChange[];
  vms: VmChange[];
  /** The shared clock at rest, in ms: a Lease expired by then binds nobody. */
  now: number;
}

/** Everything a storm recorded. */
export interface History {
  calls: CallRecord[];
  changes: Change[];
  /** Every Lease write of the storm's namespace, from the apiserver's audit. */
  leaseWrites: LeaseWrite[];
  /** Which user each lane wrote as; the storm's own process is `proc` -1. */
  laneUsers: LaneUser[];
  rest?: RestState;
  /** The same, listed before the engine pass: what a cluster without a broker's pass would show at rest. */
  restBeforePass?: RestState;
  /** The error codes `docs/errors.md` documents. */
  documentedCodes: readonly string[];
}

export type HistoryRecord = CallRecord | Change | LeaseWrite;

/** The invariants a storm's history must keep. */
export type InvariantName =
  | 'two-holders'
  | 'claim-told-twice'
  | 'identity-two-desktops'
  | 'claim-ended-without-cause'
  | 'claim-written-untold'
  | 'vmi-at-handout'
  | 'presentation-at-rest'
  | 'undocumented-error'
  | 'claim-given-back'
  | 'take-given-back'
  | 'copy-before-pass';

/** One broken invariant, with the records that show it. */
export interface Violation {
  invariant: InvariantName;
  message: string;
  member?: string;
  evidence: HistoryRecord[];
}
