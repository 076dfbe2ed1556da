import { type Annotations, type KnobReading, readDelay, readFlag } from '../kubevirt/fault-knobs.js';

const prefix = 'sim.node.corral.dev/';

/**
 * Annotations on a Pod that make the node agent misbehave for that Pod only, so a test in any process can
 * steer it. `docs/simulator.md` describes each one.
 *
 * @category testing
 */
export const nodeAgentAnnotations = {
  /** Annotation prefix shared by every knob. */
  prefix,
  /** Pod: its containers fail to start with this message (`StartError`); the restart policy decides what follows. */
  failStart: `${prefix}fail-start`,
  /** Pod: milliseconds between binding and starting its containers (`ContainerCreating` meanwhile). */
  startDelayMs: `${prefix}start-delay-ms`,
  /** Pod: an exec or attach stream is cut, without a status, after this many bytes of output. */
  dropStreamAfterBytes: `${prefix}drop-stream-after-bytes`,
  /** Pod: `"true"` keeps its containers running but never ready. */
  neverReady: `${prefix}never-ready`,
} as const;

/** The knobs read from a Pod's annotations. */
export interface PodKnobs {
  failStart: string | undefined;
  startDelayMs: number;
  dropStreamAfterBytes: number | undefined;
  neverReady: boolean;
}

function readByteCount(text: string | undefined, problems: string[]): number | undefined {
  if (text === undefined) return undefined;
  if (/^[0-9]+$/.test(text.trim())) return Number(text.trim());
  problems.push(`${nodeAgentAnnotations.dropStreamAfterBytes}=${text} is not a number of bytes`);
  return undefined;
}

/** Reads the fault knobs of a Pod. */
export function readPodKnobs(annotations: Annotations): KnobReading<PodKnobs> {
  const problems: string[] = [];
  const failStart = annotations?.[nodeAgentAnnotations.failStart];
  const drop = annotations?.[nodeAgentAnnotations.dropStreamAfterBytes];
  return {
    knobs: {
      failStart: failStart === undefined ? undefined : failStart.trim() || 'injected start failure',
      startDelayMs: readDelay(annotations, nodeAgentAnnotations.startDelayMs, problems),
      dropStreamAfterBytes: readByteCount(drop, problems),
      neverReady: readFlag(annotations, nodeAgentAnnotations.neverReady, problems),
    },
    problems,
  };
}
