import { createServer, type Server } from 'node:net';
import { VdiError } from '../../errors.js';

/** The 32-bit value of a dotted IPv4 address, or undefined when `address` is not one. */
export function parseIpv4(address: string): number | undefined {
  const parts = address.split('.');
  if (
    parts.length !== 4 ||
    !parts.every((part) => /^(0|[1-9][0-9]{0,2})$/.test(part) && Number(part) <= 255)
  ) {
    return undefined;
  }
  return parts.reduce((sum, part) => sum * 256 + Number(part), 0);
}

function toAddress(value: number): string {
  return [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255].join('.');
}

/** A parsed loopback CIDR: the first and last address handed out. */
export interface IpRange {
  first: number;
  last: number;
}

/**
 * Reads a CIDR inside 127.0.0.0/8 (every such address answers on Linux's loopback) into the addresses a pool may
 * hand out: all but the network and broadcast addresses, and never 127.0.0.1, which other servers use.
 *
 * @throws `VdiError` `INVALID_INPUT` when the range is not such a CIDR or holds no address.
 */
export function parseIpRange(cidr: string): IpRange {
  const [address = '', bitsText = ''] = cidr.split('/');
  const base = parseIpv4(address);
  const bits = /^[0-9]{1,2}$/.test(bitsText) ? Number(bitsText) : Number.NaN;
  if (base === undefined || !(bits >= 8 && bits <= 30) || base >>> 24 !== 127) {
    throw new VdiError(
      'INVALID_INPUT',
      `ipRange ${cidr} is not a CIDR inside 127.0.0.0/8 (such as 127.1.0.0/16); pass one.`,
    );
  }
  const size = 2 ** (32 - bits);
  const network = base - (base % size);
  const first = network + 1 === parseIpv4('127.0.0.1') ? network + 2 : network + 1;
  const last = network + size - 2;
  if (first > last)
    throw new VdiError('INVALID_INPUT', `ipRange ${cidr} holds no usable address; pass a wider one.`);
  return { first, last };
}

/**
 * Hands each key (a VM's `namespace/name`) its own address from a range and keeps it until the key is released.
 * Released addresses are handed out again once the never-used ones run out.
 */
export class IpPool {
  private readonly byKey = new Map<string, number>();
  private readonly taken = new Set<number>();
  private readonly released: number[] = [];
  private next: number;

  constructor(private readonly range: IpRange) {
    this.next = range.first;
  }

  /** The address of `key`, allocating one the first time. Undefined when the range is exhausted. */
  addressOf(key: string): string | undefined {
    const known = this.byKey.get(key);
    if (known !== undefined) return toAddress(known);
    let value: number | undefined;
    while (this.next <= this.range.last && this.taken.has(this.next)) this.next += 1;
    if (this.next <= this.range.last) value = this.next++;
    else {
      while (this.released.length > 0 && value === undefined) {
        const candidate = this.released.pop() as number;
        if (!this.taken.has(candidate)) value = candidate;
      }
    }
    if (value === undefined) return undefined;
    this.byKey.set(key, value);
    this.taken.add(value);
    return toAddress(value);
  }

  /** Records that `key` already holds `address` (seen on an existing VMI), when the address is in range and free. */
  reserve(key: string, address: string): void {
    const value = parseIpv4(address);
    if (value === undefined || value < this.range.first || value > this.range.last || this.taken.has(value))
      return;
    if (this.byKey.has(key)) return;
    this.byKey.set(key, value);
    this.taken.add(value);
  }

  /** Frees the address of `key`, if it has one. */
  release(key: string): void {
    const value = this.byKey.get(key);
    if (value === undefined) return;
    this.byKey.delete(key);
    this.taken.delete(value);
    this.released.push(value);
  }
}

// The mark of a reserved range listens on this port of the range's broadcast address, which no pool hands out.
const rangeMarkPort = 20_127;

/** The addresses a pool hands out, and the reservation that keeps other processes out of them. */
export interface LoopbackRange {
  /** Such as `127.3.0.0/16`. */
  cidr: string;
  range: IpRange;
  /** Lets another process take the range (nothing for a range given by the caller). */
  release(): Promise<void>;
}

function listenExclusively(host: string, port: number): Promise<Server | undefined> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', (error: NodeJS.ErrnoException) =>
      error.code === 'EADDRINUSE' ? resolve(undefined) : reject(error),
    );
    server.listen({ host, port, exclusive: true }, () => {
      // the mark must not keep the process alive
      server.unref();
      resolve(server);
    });
  });
}

/**
 * The range `cidr`, as given; without one, the first /16 of 127.0.0.0/8 from 127.10.0.0/16 up that no other process
 * on this machine holds, reserved until released. Two control planes at once (two test runs, a test run beside a
 * dev cluster) would otherwise hand out the same addresses, and a test's connection to its VM's port 3389 would
 * reach the other run's server. The mark is a listener on the range's broadcast address, so a process that dies
 * frees its range by itself.
 *
 * @throws `VdiError` `INVALID_INPUT` for a `cidr` {@link parseIpRange} refuses; `CONTROL_PLANE_FAILED` when every
 *   range is held.
 */
export async function claimLoopbackRange(cidr: string | undefined): Promise<LoopbackRange> {
  if (cidr !== undefined) return { cidr, range: parseIpRange(cidr), release: async () => {} };
  // from 127.10 up: 127.1 to 127.4 were fixed addresses of earlier releases of this test kit and their tests
  for (let second = 10; second <= 254; second += 1) {
    const mark = await listenExclusively(`127.${second}.255.255`, rangeMarkPort);
    if (!mark) continue;
    const reserved = `127.${second}.0.0/16`;
    return {
      cidr: reserved,
      range: parseIpRange(reserved),
      release: () => new Promise((resolve) => mark.close(() => resolve())),
    };
  }
  throw new VdiError(
    'CONTROL_PLANE_FAILED',
    `Every /16 of 127.0.0.0/8 from 127.10 up is held by another process's KubeVirt simulator or node agent (each listens on 127.N.255.255:${rangeMarkPort}); stop one, or pass a range.`,
  );
}
