import { parseIpv4 } from './ip-pool.js';

const prefix = 'sim.kubevirt.corral.dev/';

/**
 * Annotations that steer the KubeVirt simulator, so a test in any process can make one VM or clone misbehave.
 * `docs/simulator.md` describes each one. The simulator's clone controller never copies them to a target VM.
 *
 * @category testing
 */
export const simulatorAnnotations = {
  /** Annotation prefix shared by every knob. */
  prefix,
  /** VM: the IPv4 address its VMI reports instead of the one from the simulator's range. */
  ip: `${prefix}ip`,
  /** VM: the node its VMI reports instead of the simulator's default node. */
  node: `${prefix}node`,
  /** VM: the start subresource fails with this message; a leading HTTP status (`409 locked`) sets the code, else 500. */
  failStart: `${prefix}fail-start`,
  /** VM: the stop subresource fails, as {@link simulatorAnnotations.failStart}. */
  failStop: `${prefix}fail-stop`,
  /** VM: milliseconds between wanting to run and creating the VMI. */
  startDelayMs: `${prefix}start-delay-ms`,
  /** VM: milliseconds between wanting to stop and deleting the VMI (the VM shows `Stopping` meanwhile). */
  stopDelayMs: `${prefix}stop-delay-ms`,
  /** VM: `"true"` keeps its VMI in phase `Scheduling`, so the VM never becomes ready. */
  neverReady: `${prefix}never-ready`,
  /** Clone: milliseconds each phase lasts. */
  phaseDelayMs: `${prefix}phase-delay-ms`,
  /** Clone: the clone ends `Failed` with this message. */
  fail: `${prefix}fail`,
  /** Clone: the phase in which {@link simulatorAnnotations.fail} strikes (default `SnapshotInProgress`). */
  failPhase: `${prefix}fail-phase`,
  /** Clone: `"true"` keeps it in `RestoreInProgress` forever, with its target VM created. */
  neverFinish: `${prefix}never-finish`,
  /**
   * Namespace: an RFC 3339 time that the delay knobs of its VMs and clones are measured against instead of the
   * simulator's clock; a test moves it on to let delays pass (see `createNamespaceClock`).
   */
  clock: `${prefix}clock`,
  /** Namespace: `"true"` makes the controllers leave its VMs and clones alone, as if KubeVirt's were down. */
  paused: `${prefix}paused`,
  /**
   * VMI, written by the simulator: the keys pressed on its VNC console, as the screen labels them (`a`, `0xff0d`),
   * space-separated, oldest first, the last 32.
   */
  vncKeys: `${prefix}vnc-keys`,
  /** VMI, written by the simulator: the last text a VNC client put on the guest's clipboard (ClientCutText). */
  vncClipboard: `${prefix}vnc-clipboard`,
  /**
   * VMI, set by a test: text the guest copies. Each VNC client gets it as ServerCutText when it connects and
   * whenever the annotation changes.
   */
  vncCopy: `${prefix}vnc-copy`,
  /**
   * VMI, written by the simulator: the usbredir packets its guest received over every connection, labelled
   * `<type>:<id>:<payload bytes>:<first 8 hex digits of the payload's SHA-256>`, space-separated, oldest first, the last 32.
   */
  usbredirPackets: `${prefix}usbredir-packets`,
} as const;

/** A subresource failure a test asked for. */
export interface InjectedFailure {
  status: number;
  message: string;
}

/** The knobs read from a VM's annotations. */
export interface VmKnobs {
  ipAddress: string | undefined;
  nodeName: string | undefined;
  failStart: InjectedFailure | undefined;
  failStop: InjectedFailure | undefined;
  startDelayMs: number;
  stopDelayMs: number;
  neverReady: boolean;
}

/** The phases of a clone in which a failure can be injected. */
export type CloneFailPhase = 'SnapshotInProgress' | 'RestoreInProgress' | 'CreatingTargetVM';

/** The knobs read from a VirtualMachineClone's annotations. */
export interface CloneKnobs {
  phaseDelayMs: number;
  fail: { message: string; phase: CloneFailPhase } | undefined;
  neverFinish: boolean;
}

/** The knobs read from a Namespace's annotations: the simulator's scope for the objects in it. */
export interface NamespaceKnobs {
  /** Milliseconds since the epoch of the namespace's own clock, or undefined to use the simulator's. */
  clock: number | undefined;
  paused: boolean;
}

/** Knobs plus the annotations that were set but could not be read (the simulator logs and ignores them). */
export interface KnobReading<T> {
  knobs: T;
  problems: string[];
}

/** Annotations as the knob readers take them. */
export type Annotations = Readonly<Record<string, string>> | undefined;

/** Reads a knob of milliseconds (0 when unset); a value that is not one is a problem and counts as 0. */
export function readDelay(annotations: Annotations, key: string, problems: string[]): number {
  const text = annotations?.[key];
  if (text === undefined) return 0;
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value) || value < 0) {
    problems.push(`${key}=${text} is not a number of milliseconds`);
    return 0;
  }
  return value;
}

/** Reads a `"true"`/`"false"` knob (false when unset); any other value is a problem and counts as false. */
export function readFlag(annotations: Annotations, key: string, problems: string[]): boolean {
  const text = annotations?.[key];
  if (text === undefined || text === 'false') return false;
  if (text === 'true') return true;
  problems.push(`${key}=${text} is neither "true" nor "false"`);
  return false;
}

function readFailure(annotations: Annotations, key: string): InjectedFailure | undefined {
  const text = annotations?.[key];
  if (text === undefined) return undefined;
  const match = /^([1-5][0-9]{2})(?:\s+([\s\S]*))?$/.exec(text.trim());
  if (match) return { status: Number(match[1]), message: match[2]?.trim() || `injected failure (${key})` };
  return { status: 500, message: text.trim() || `injected failure (${key})` };
}

/** Reads the fault knobs of a VM. */
export function readVmKnobs(annotations: Annotations): KnobReading<VmKnobs> {
  const problems: string[] = [];
  const ip = annotations?.[simulatorAnnotations.ip];
  if (ip !== undefined && parseIpv4(ip) === undefined)
    problems.push(`${simulatorAnnotations.ip}=${ip} is not an IPv4 address`);
  const node = annotations?.[simulatorAnnotations.node];
  return {
    knobs: {
      ipAddress: ip !== undefined && parseIpv4(ip) !== undefined ? ip : undefined,
      nodeName: node?.trim() ? node.trim() : undefined,
      failStart: readFailure(annotations, simulatorAnnotations.failStart),
      failStop: readFailure(annotations, simulatorAnnotations.failStop),
      startDelayMs: readDelay(annotations, simulatorAnnotations.startDelayMs, problems),
      stopDelayMs: readDelay(annotations, simulatorAnnotations.stopDelayMs, problems),
      neverReady: readFlag(annotations, simulatorAnnotations.neverReady, problems),
    },
    problems,
  };
}

const failPhases: readonly CloneFailPhase[] = ['SnapshotInProgress', 'RestoreInProgress', 'CreatingTargetVM'];

/** Reads the fault knobs of a VirtualMachineClone. */
export function readCloneKnobs(annotations: Annotations): KnobReading<CloneKnobs> {
  const problems: string[] = [];
  const message = annotations?.[simulatorAnnotations.fail];
  const phaseText = annotations?.[simulatorAnnotations.failPhase];
  let phase: CloneFailPhase = 'SnapshotInProgress';
  if (phaseText !== undefined) {
    if ((failPhases as readonly string[]).includes(phaseText)) phase = phaseText as CloneFailPhase;
    else
      problems.push(`${simulatorAnnotations.failPhase}=${phaseText} is not one of ${failPhases.join(', ')}`);
  }
  return {
    knobs: {
      phaseDelayMs: readDelay(annotations, simulatorAnnotations.phaseDelayMs, problems),
      fail:
        message === undefined ? undefined : { message: message.trim() || 'injected clone failure', phase },
      neverFinish: readFlag(annotations, simulatorAnnotations.neverFinish, problems),
    },
    problems,
  };
}

/** Reads the knobs of a Namespace. */
export function readNamespaceKnobs(annotations: Annotations): KnobReading<NamespaceKnobs> {
  const problems: string[] = [];
  const text = annotations?.[simulatorAnnotations.clock];
  const time = text === undefined ? undefined : Date.parse(text);
  if (text !== undefined && !Number.isFinite(time))
    problems.push(`${simulatorAnnotations.clock}=${text} is not an RFC 3339 time`);
  return {
    knobs: {
      clock: time !== undefined && Number.isFinite(time) ? time : undefined,
      paused: readFlag(annotations, simulatorAnnotations.paused, problems),
    },
    problems,
  };
}
