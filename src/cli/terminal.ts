/** A stream the CLI writes to: the process's stdout or stderr, or a test's capture. */
export interface OutputStream {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

/** Where the CLI reads its environment and writes its output. */
export interface CliIo {
  stdout: OutputStream;
  stderr: OutputStream;
  env: Readonly<Record<string, string | undefined>>;
}

/** ANSI styles, or identity functions when colour is off. */
export interface Paint {
  bold(text: string): string;
  dim(text: string): string;
  red(text: string): string;
  green(text: string): string;
  yellow(text: string): string;
  cyan(text: string): string;
}

function paintFor(enabled: boolean): Paint {
  const style = (open: number, close: number) => (text: string) =>
    enabled ? `\u001b[${open}m${text}\u001b[${close}m` : text;
  return {
    bold: style(1, 22),
    dim: style(2, 22),
    red: style(31, 39),
    green: style(32, 39),
    yellow: style(33, 39),
    cyan: style(36, 39),
  };
}

/** Colour only on a terminal, never with `NO_COLOR` set (https://no-color.org) or a dumb terminal. */
function wantsColour(stream: OutputStream, env: CliIo['env']): boolean {
  return stream.isTTY === true && !env.NO_COLOR && env.TERM !== 'dumb';
}

/** One step a progress bar shows. */
export interface ProgressStep {
  done: number;
  total: number;
  /** What just happened, such as `devpool-2 ready`. */
  label: string;
}

/** A one-line progress bar on stderr, redrawn in place. */
export interface ProgressBar {
  update(step: ProgressStep): void;
  /** Removes the bar, so what follows starts on a clean line. */
  clear(): void;
}

const barWidth = 24;

/** `[#########---------------] 1/3 devpool-1 ready`, cut to the terminal's width. */
export function renderProgress(step: ProgressStep, columns: number): string {
  const ratio = step.total === 0 ? 1 : Math.min(1, step.done / step.total);
  const filled = Math.round(ratio * barWidth);
  const line = `[${'#'.repeat(filled)}${'-'.repeat(barWidth - filled)}] ${step.done}/${step.total} ${step.label}`;
  return line.length >= columns ? line.slice(0, Math.max(0, columns - 1)) : line;
}

/** The CLI's view of its output: text or JSON on stdout, messages and progress on stderr. */
export class Terminal {
  readonly json: boolean;
  readonly paint: Paint;
  readonly errorPaint: Paint;
  private readonly io: CliIo;

  constructor(io: CliIo, options: { json: boolean }) {
    this.io = io;
    this.json = options.json;
    this.paint = paintFor(!options.json && wantsColour(io.stdout, io.env));
    this.errorPaint = paintFor(wantsColour(io.stderr, io.env));
  }

  /** Writes lines of text output to stdout. */
  print(...lines: string[]): void {
    for (const line of lines) this.io.stdout.write(`${line}\n`);
  }

  /** Writes one JSON document to stdout. */
  printJson(value: unknown): void {
    this.io.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
  }

  /** Writes a line to stderr: warnings, notices, errors. */
  note(line: string): void {
    this.io.stderr.write(`${line}\n`);
  }

  /** Writes `error: <message>` to stderr. */
  error(message: string): void {
    this.note(`${this.errorPaint.red(this.errorPaint.bold('error:'))} ${message}`);
  }

  /** A progress bar on stderr when stderr is a terminal; otherwise one that draws nothing. */
  progressBar(): ProgressBar {
    const stream = this.io.stderr;
    if (stream.isTTY !== true) return { update() {}, clear() {} };
    let drawn = false;
    return {
      update(step) {
        stream.write(`\r\u001b[2K${renderProgress(step, stream.columns || 80)}`);
        drawn = true;
      },
      clear() {
        if (drawn) stream.write('\r\u001b[2K');
        drawn = false;
      },
    };
  }
}
