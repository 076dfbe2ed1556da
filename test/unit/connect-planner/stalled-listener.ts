import { type ChildProcess, spawn } from 'node:child_process';
import { connect, type Socket } from 'node:net';

/** A TCP port that completes no handshake: the probe against it can only time out or be aborted. */
export interface StalledListener {
  host: string;
  port: number;
  close(): void;
}

// The child listens, reports its port, then blocks its event loop so it never accepts; once the kernel's
// accept queue is full, further handshakes get no answer at all.
const childScript = `
const server = require('node:net').createServer();
server.listen({ host: process.argv[1], port: Number(process.argv[2]), backlog: 1 }, () => {
  process.stdout.write(String(server.address().port) + '\\n');
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 120000);
});
`;

export async function startStalledListener(host: string, port = 0): Promise<StalledListener> {
  const child: ChildProcess = spawn(process.execPath, ['-e', childScript, host, String(port)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const boundPort = await new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.stdout?.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim())));
  });
  // Linux queues backlog + 1 finished handshakes; two fillers make the queue full
  const fillers: Socket[] = [];
  for (let i = 0; i < 2; i++) {
    const socket = connect({ host, port: boundPort });
    fillers.push(socket);
    await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  }
  return {
    host,
    port: boundPort,
    close() {
      for (const socket of fillers) socket.destroy();
      child.kill('SIGKILL');
    },
  };
}
