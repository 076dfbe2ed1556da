import { EventEmitter } from 'node:events';
import { mkdirSync, rmSync } from 'node:fs';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { type LocalProcess, type ProcessExit, startLocalProcess } from './local-process.js';

/** A container's state, as the Pod's `containerStatuses[].state` shows it. */
export type ContainerState =
  | { kind: 'waiting'; reason: string; message?: string }
  | { kind: 'running'; startedAt: Date }
  | TerminatedState;

/** A finished run of a container. */
export interface TerminatedState {
  kind: 'terminated';
  exitCode: number;
  reason: string;
  message?: string;
  startedAt?: Date;
  finishedAt: Date;
}

/** One line a container wrote, as the log keeps it. */
export interface LogLine {
  time: Date;
  stream: 'stdout' | 'stderr';
  text: string;
}

// Enough for any test's output; the oldest lines go first.
const maxLogLines = 10_000;

/** A container of a running Pod: its state, restarts, logs and main process. */
export class ContainerRecord extends EventEmitter {
  state: ContainerState = { kind: 'waiting', reason: 'ContainerCreating' };
  lastTerminated: TerminatedState | undefined;
  restartCount = 0;
  /** Whether the main process has been started at least once. */
  everStarted = false;
  process: LocalProcess | undefined;
  log: LogLine[] = [];
  previousLog: LogLine[] = [];

  constructor(readonly spec: V1Container) {
    super();
  }

  get name(): string {
    return this.spec.name;
  }

  appendLog(stream: LogLine['stream'], text: string): void {
    const line = { time: new Date(), stream, text };
    this.log.push(line);
    if (this.log.length > maxLogLines) this.log.shift();
    this.emit('log', line);
  }
}

/** What a sandbox needs to know about its Pod and to report changes. */
export interface PodSandboxOptions {
  pod: V1Pod;
  /** The Pod's scratch folder, created here and removed by {@link PodSandbox.remove}. */
  dir: string;
  podIp: string;
  /** Called whenever a container's state changed, so the Pod's status is written again. */
  onChange: () => void;
  /** Run a process that only waits in place of each container's command (an image this node cannot run). */
  idle?: boolean;
}

/** The longest wait before a crashed container starts again (kubelet's is five minutes; tests cannot wait that long). */
const maxBackoffMs = 5000;

function exitCodeOf(exit: ProcessExit): number {
  if (exit.code !== null) return exit.code;
  // A signal ends a container with 128 + its number, as container runtimes report it.
  const numbers: Partial<Record<NodeJS.Signals, number>> = { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 };
  return 128 + (exit.signal ? (numbers[exit.signal] ?? 0) : 0);
}

/** The environment of a container: the agent's `PATH`, the scratch folder as `HOME`, the Pod's name as `HOSTNAME`, then the spec's `env`. */
function environmentOf(pod: V1Pod, container: V1Container, dir: string, podIp: string, tty: boolean) {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: dir,
    HOSTNAME: pod.metadata?.name ?? '',
  };
  if (tty) env.TERM = 'xterm';
  const fields: Record<string, string | undefined> = {
    'metadata.name': pod.metadata?.name,
    'metadata.namespace': pod.metadata?.namespace,
    'metadata.uid': pod.metadata?.uid,
    'spec.nodeName': pod.spec?.nodeName,
    'spec.serviceAccountName': pod.spec?.serviceAccountName,
    'status.hostIP': '127.0.0.1',
    'status.podIP': podIp,
  };
  for (const variable of container.env ?? []) {
    const fieldPath = variable.valueFrom?.fieldRef?.fieldPath;
    const value = variable.value ?? (fieldPath === undefined ? undefined : fields[fieldPath]);
    if (value !== undefined) env[variable.name] = value;
  }
  return env;
}

/** The stand-in for an image's entrypoint when the spec names no command: a shell that reads its input. */
const defaultEntrypoint = ['/bin/sh'];
/** What an idle container runs: a process that stays up until it is stopped. */
const idleCommand = ['sleep', 'infinity'];

/**
 * The local processes of one Pod: each container's main process in the Pod's scratch folder, restarted as the
 * restart policy says, with its output kept as the container's log; and the exec processes started in it.
 */
export class PodSandbox {
  readonly containers = new Map<string, ContainerRecord>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly execs = new Set<LocalProcess>();
  private stopping = false;

  constructor(private readonly options: PodSandboxOptions) {
    mkdirSync(options.dir, { recursive: true });
    for (const spec of options.pod.spec?.containers ?? [])
      this.containers.set(spec.name, new ContainerRecord(spec));
  }

  get pod(): V1Pod {
    return this.options.pod;
  }

  /** Starts every container's main process, or fails each with `failStart` (a `StartError`). */
  start(failStart: string | undefined): void {
    for (const record of this.containers.values()) this.run(record, failStart);
  }

  /** Starts `command` in the container's folder and environment, for an exec. */
  exec(container: ContainerRecord, command: string[], tty: boolean): LocalProcess {
    const { pod, dir, podIp } = this.options;
    const started = startLocalProcess(command, {
      cwd: dir,
      env: environmentOf(pod, container.spec, dir, podIp, tty),
      tty,
      endGroupOnExit: false,
    });
    this.execs.add(started);
    void started.exited.then(() => this.execs.delete(started));
    return started;
  }

  /**
   * Ends every process: `SIGTERM`, then `SIGKILL` after `graceMs`. Resolves when all main processes have ended.
   */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    const running = [...this.containers.values()].flatMap((record) =>
      record.process ? [record.process] : [],
    );
    for (const exec of this.execs) exec.kill('SIGKILL');
    for (const main of running) main.kill('SIGTERM');
    const force = setTimeout(() => {
      for (const main of running) main.kill('SIGKILL');
    }, graceMs);
    await Promise.all(running.map((main) => main.exited));
    clearTimeout(force);
  }

  /** Kills every process at once, without waiting (for an exit hook). */
  killNow(): void {
    this.stopping = true;
    for (const exec of this.execs) exec.kill('SIGKILL');
    for (const record of this.containers.values()) record.process?.kill('SIGKILL');
  }

  /** Kills every process at once and removes the scratch folder. */
  async remove(): Promise<void> {
    await this.stop(0);
    rmSync(this.options.dir, { recursive: true, force: true });
  }

  private run(record: ContainerRecord, failStart: string | undefined): void {
    if (this.stopping) return;
    const { pod, dir, podIp } = this.options;
    if (record.everStarted) {
      record.previousLog = record.log;
      record.log = [];
    }
    record.everStarted = true;
    if (failStart !== undefined) {
      this.finish(record, undefined, { exitCode: 128, reason: 'StartError', message: failStart }, failStart);
      return;
    }
    const command = this.options.idle
      ? idleCommand
      : [...(record.spec.command ?? []), ...(record.spec.args ?? [])];
    const tty = record.spec.tty === true;
    const started = new Date();
    const main = startLocalProcess(command.length > 0 ? command : defaultEntrypoint, {
      cwd: dir,
      env: environmentOf(pod, record.spec, dir, podIp, tty),
      tty,
      endGroupOnExit: true,
    });
    record.process = main;
    record.state = { kind: 'running', startedAt: started };
    const partial = { stdout: '', stderr: '' };
    main.on('output', (stream: LogLine['stream'], chunk: Buffer) => {
      record.emit('output', stream, chunk);
      const lines = (partial[stream] + chunk.toString('utf8')).split('\n');
      partial[stream] = lines.pop() ?? '';
      for (const line of lines) record.appendLog(stream, line.replace(/\r$/, ''));
    });
    void main.exited.then((exit) => {
      for (const stream of ['stdout', 'stderr'] as const)
        if (partial[stream] !== '') record.appendLog(stream, partial[stream]);
      record.process = undefined;
      if (exit.startError) {
        const message = `failed to start container process: exec: "${command[0] ?? ''}": ${exit.startError.message}`;
        this.finish(record, started, { exitCode: 128, reason: 'StartError', message }, undefined);
        return;
      }
      const exitCode = exitCodeOf(exit);
      this.finish(record, started, { exitCode, reason: exitCode === 0 ? 'Completed' : 'Error' }, undefined);
    });
    this.options.onChange();
  }

  private finish(
    record: ContainerRecord,
    startedAt: Date | undefined,
    end: { exitCode: number; reason: string; message?: string },
    failStart: string | undefined,
  ): void {
    const terminated: TerminatedState = { kind: 'terminated', ...end, startedAt, finishedAt: new Date() };
    record.emit('exit', terminated);
    const policy = this.options.pod.spec?.restartPolicy ?? 'Always';
    const restart = !this.stopping && (policy === 'Always' || (policy === 'OnFailure' && end.exitCode !== 0));
    if (!restart) {
      record.state = terminated;
      this.options.onChange();
      return;
    }
    record.lastTerminated = terminated;
    const backoffMs = Math.min(250 * 2 ** record.restartCount, maxBackoffMs);
    record.state = {
      kind: 'waiting',
      reason: 'CrashLoopBackOff',
      message: `back-off ${backoffMs} ms restarting failed container=${record.name} pod=${this.options.pod.metadata?.name ?? ''}`,
    };
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      record.restartCount += 1;
      this.run(record, failStart);
    }, backoffMs);
    this.timers.add(timer);
    this.options.onChange();
  }
}
