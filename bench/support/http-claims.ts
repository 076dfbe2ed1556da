import { spawn } from 'node:child_process';

/** What the HTTP clients answered: how many of each status, and the first failures' messages. */
export interface HttpClaimsOutcome {
  statuses: Record<string, number>;
  failures: string[];
  /** How long each answered POST took, from its sending to its answer's end, as the client saw it. */
  waitedMs: number[];
}

// Plain JavaScript for the child: `count` POSTs, `limit` at a time, each as its own user.
const clientCode = `
import { Agent, request } from 'node:http';
const { url, warmUrl, count, limit, header } = JSON.parse(process.argv[1]);
// node:http over kept-alive sockets: lighter than fetch, as the client shares the machine with what it measures
const agent = new Agent({ keepAlive: true, maxSockets: limit });
function send(target, method, headers) {
  return new Promise((resolve, reject) => {
    const sent = request(target, { method, headers, agent }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode));
      response.on('error', reject);
    });
    sent.on('error', reject);
    sent.end(method === 'POST' ? '{}' : undefined);
  });
}
const statuses = {};
const failures = [];
const waitedMs = [];
let next = 0;
async function worker() {
  while (next < count) {
    const index = next++;
    try {
      const sentAt = performance.now();
      const status = await send(url, 'POST', {
        [header]: 'user-' + (index + 1) + '@example.com',
        'content-type': 'application/json',
      });
      waitedMs.push(performance.now() - sentAt);
      statuses[status] = (statuses[status] ?? 0) + 1;
    } catch (error) {
      statuses.error = (statuses.error ?? 0) + 1;
      if (failures.length < 5) failures.push(String(error?.cause ?? error));
    }
  }
}
// started and loaded, with its connections open as a proxy keeps them, the client waits for the parent's word, so
// its start-up is not timed
for (let round = 0; round < 2; round += 1) {
  await Promise.all(Array.from({ length: Math.min(limit, count) }, () => send(warmUrl, 'GET', {})));
}
process.stdout.write('ready\\n');
await new Promise((resolve) => process.stdin.once('data', resolve));
await Promise.all(Array.from({ length: Math.min(limit, count) }, worker));
process.stdout.write(JSON.stringify({ statuses, failures, waitedMs }));
agent.destroy();
process.stdin.destroy();
`;

/**
 * Starts a process of its own that POSTs `count` claims to `url`, `limit` at a time, as a broker's clients are:
 * the measured process then runs only the broker, as the SDK row runs only the SDK. Resolves once the process is
 * up, so that its start-up is not timed; `run` sends the claims and resolves with what they answered.
 */
export async function startClaimsChild(options: {
  url: string;
  /** A route that claims nothing, asked before the client is ready so its connections are open. */
  warmUrl: string;
  count: number;
  limit: number;
  header: string;
}): Promise<{ run: () => Promise<HttpClaimsOutcome> }> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', clientCode, JSON.stringify(options)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
      if (output.startsWith('ready\n')) resolve();
    });
    exited.then((code) =>
      reject(new Error(`the HTTP client process ended with code ${code} before it was up`)),
    );
  });
  await ready;
  return {
    run: async () => {
      child.stdin.write('go');
      const code = await exited;
      if (code !== 0) throw new Error(`the HTTP client process ended with code ${code}`);
      return JSON.parse(output.slice('ready\n'.length)) as HttpClaimsOutcome;
    },
  };
}
