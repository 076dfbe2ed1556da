import { readdirSync, readFileSync } from 'node:fs';
import type { KubeCluster } from '../../src/kube/cluster.js';

/** Runs `count` jobs with at most `limit` at a time. */
export async function inParallel(
  count: number,
  limit: number,
  run: (index: number) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < count) await run(next++);
  };
  await Promise.all(Array.from({ length: Math.min(limit, count) }, worker));
}

/** The kube-apiserver whose command line names the local cluster's data folder, found in /proc. */
export function findApiserverPid(dataDir: string): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const command = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (command.includes('kube-apiserver') && command.includes(dataDir)) return Number(entry);
    } catch {
      // the process ended while the folder was read
    }
  }
  return undefined;
}

// /proc/<pid>/stat counts CPU in clock ticks, 100 a second on Linux
const ticksPerSecond = 100;

/** User plus system CPU time of a process so far, in ms; 0 without a process. */
export function cpuMsOf(pid: number | undefined): number {
  if (pid === undefined) return 0;
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // the fields after the command name, which is in parentheses and may hold spaces
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const [utime, stime] = [Number(fields[11]), Number(fields[12])];
  return ((utime + stime) * 1000) / ticksPerSecond;
}

/** What one measured run cost: wall time, client requests and response bytes, apiserver and client CPU. */
export interface Cost {
  ms: number;
  requests: number;
  bytes: number;
  apiserverCpuMs: number;
  /** CPU time of this process (the measured client), user plus system. */
  clientCpuMs: number;
}

/** Measures `run` on the adapters whose requests it makes, and the apiserver's CPU meanwhile. */
export async function measure(
  clusters: readonly KubeCluster[],
  apiserverPid: number | undefined,
  run: () => Promise<void>,
): Promise<Cost> {
  const requestsBefore = clusters.reduce((sum, cluster) => sum + cluster.requestTotal, 0);
  const bytesBefore = clusters.reduce((sum, cluster) => sum + cluster.responseBytes, 0);
  const cpuBefore = cpuMsOf(apiserverPid);
  const clientBefore = process.cpuUsage();
  const started = performance.now();
  await run();
  const ms = performance.now() - started;
  const client = process.cpuUsage(clientBefore);
  return {
    ms,
    requests: clusters.reduce((sum, cluster) => sum + cluster.requestTotal, 0) - requestsBefore,
    bytes: clusters.reduce((sum, cluster) => sum + cluster.responseBytes, 0) - bytesBefore,
    apiserverCpuMs: cpuMsOf(apiserverPid) - cpuBefore,
    clientCpuMs: (client.user + client.system) / 1000,
  };
}

/** The exponent k of the least-squares fit time = c · N^k over (N, time) points. */
export function fitExponent(points: ReadonlyArray<{ n: number; ms: number }>): number {
  const xs = points.map((point) => Math.log(point.n));
  const ys = points.map((point) => Math.log(point.ms));
  const meanX = xs.reduce((sum, x) => sum + x, 0) / xs.length;
  const meanY = ys.reduce((sum, y) => sum + y, 0) / ys.length;
  let covariance = 0;
  let variance = 0;
  for (const [index, x] of xs.entries()) {
    covariance += (x - meanX) * ((ys[index] ?? 0) - meanY);
    variance += (x - meanX) ** 2;
  }
  return covariance / variance;
}

/** A size from the environment, for runs smaller or larger than the defaults; a value that is no size is refused. */
export function sizeFromEnv(name: string, fallback: number): number {
  const text = process.env[name];
  if (text === undefined || text === '') return fallback;
  const size = Number(text);
  if (!Number.isSafeInteger(size) || size <= 0) throw new Error(`${name}=${text} is not a size, such as 200`);
  return size;
}

/** A list of sizes from the environment (`50,200,800`); a value that is not such a list is refused. */
export function sizesFromEnv(name: string, fallback: number[]): number[] {
  const text = process.env[name];
  if (text === undefined || text === '') return fallback;
  const sizes = text.split(',').map(Number);
  if (!sizes.every((size) => Number.isSafeInteger(size) && size > 0))
    throw new Error(`${name}=${text} is not a size or a comma-separated list of sizes, such as 50,200,800`);
  return sizes;
}
