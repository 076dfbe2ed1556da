import { spawn } from 'node:child_process';

/** What the HTTP clients answered: how many of each status, and the first failures' messages. */
export interface HttpClaimsOutcome {
  statuses: Record<string, number>;
  failures: string[];
}

// Plain JavaScript for the child: `count` POSTs, `limit` at a time, each as its own user.
const clientCode = `
const { url, count, limit, header } = JSON.parse(process.argv[1]);
const statuses = {};
const failures = [];
let next = 0;
async function worker() {
  while (next < count) {
    const index = next++;
    try {
      const response = await fetch(url, {
        method: 'POST',
        headers: { [header]: 'user-' + (index + 1) + '@example.com', 'content-type': 'application/json' },
        body: '{}',
      });
      await response.arrayBuffer();
      statuses[response.status] = (statuses[response.status] ?? 0) + 1;
    } catch (error) {
      statuses.error = (statuses.error ?? 0) + 1;
      if (failures.length < 5) failures.push(String(error?.cause ?? error));
    }
  }
}
await Promise.all(Array.from({ length: Math.min(limit, count) }, worker));
process.stdout.write(JSON.stringify({ statuses, failures }));
`;

/**
 * POSTs `count` claims to `url`, `limit` at a time, from a process of its own, as a broker's clients are: the
 * measured process then runs only the broker, as the SDK row runs only the SDK.
 */
export async function postClaimsFromChild(options: {
  url: string;
  count: number;
  limit: number;
  header: string;
}): Promise<HttpClaimsOutcome> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', clientCode, JSON.stringify(options)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`the HTTP client process ended with code ${code}`);
  return JSON.parse(output) as HttpClaimsOutcome;
}
