/**
 * The translation between a browser's terminal websocket (plain bytes, like `serial`) and the apiserver's exec
 * websocket (`v4.channel.k8s.io`: each message starts with its channel byte).
 */

const stdinChannel = 0;
const stdoutChannel = 1;
const stderrChannel = 2;
const statusChannel = 3;
const resizeChannel = 4;

/** What a message of one side becomes on the other. */
export type FramedMessage =
  | { kind: 'send'; data: Buffer; binary?: boolean }
  | { kind: 'close'; code: number; reason: string }
  | { kind: 'drop' };

/**
 * A browser's message towards the shell: binary bytes are typed input (channel 0); a text message
 * `{"cols":C,"rows":R}` resizes the terminal (channel 4); any other text is dropped.
 */
export function frameFromBrowser(data: Buffer, isBinary: boolean): FramedMessage {
  if (isBinary) return { kind: 'send', data: Buffer.concat([Buffer.of(stdinChannel), data]) };
  const size = parseSize(data.toString('utf8'));
  if (!size) return { kind: 'drop' };
  const resize = JSON.stringify({ Width: size.cols, Height: size.rows });
  return { kind: 'send', data: Buffer.concat([Buffer.of(resizeChannel), Buffer.from(resize)]) };
}

/**
 * A message of the exec stream towards the browser: output (channels 1 and 2) loses its channel byte, the status
 * (channel 3) closes the console with 1000 and the shell's exit code in the reason, and anything else is dropped.
 */
export function frameFromShell(data: Buffer): FramedMessage {
  const channel = data[0];
  if (channel === stdoutChannel || channel === stderrChannel) {
    return data.length > 1 ? { kind: 'send', data: data.subarray(1) } : { kind: 'drop' };
  }
  if (channel === statusChannel) {
    const code = exitCodeOf(data.subarray(1).toString('utf8'));
    return { kind: 'close', code: 1000, reason: `The shell exited with code ${code}.` };
  }
  return { kind: 'drop' };
}

function parseSize(text: string): { cols: number; rows: number } | undefined {
  try {
    const { cols, rows } = JSON.parse(text) as { cols?: unknown; rows?: unknown };
    const valid = (value: unknown): value is number =>
      Number.isInteger(value) && (value as number) > 0 && (value as number) <= 10_000;
    return valid(cols) && valid(rows) ? { cols, rows } : undefined;
  } catch {
    return undefined;
  }
}

// a Status of Success is 0; a failure carries the code as the ExitCode cause, else it is 1
function exitCodeOf(text: string): number {
  try {
    const status = JSON.parse(text) as {
      status?: string;
      details?: { causes?: Array<{ reason?: string; message?: string }> };
    };
    if (status.status === 'Success') return 0;
    const cause = status.details?.causes?.find((candidate) => candidate.reason === 'ExitCode');
    const code = Number(cause?.message);
    return Number.isInteger(code) ? code : 1;
  } catch {
    return 1;
  }
}

/** The framing of a terminal console between the browser and the exec stream. */
export const terminalFraming = {
  toDesktop: frameFromBrowser,
  toClient: (data: Buffer) => frameFromShell(data),
};
