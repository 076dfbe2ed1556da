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
