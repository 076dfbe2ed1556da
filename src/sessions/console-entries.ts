import { z } from 'zod';
import { consolesAnnotation } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import { parseRfc3339 } from '../parse-time.js';

/**
 * One broker replica's open consoles of a claimed desktop, as its `corral.dev/vdi-consoles` entry records them.
 *
 * @category sessions
 */
export interface ConsoleEntry {
  /** How many consoles the replica had open when it last wrote the entry. */
  open: number;
  /** When the replica last wrote the entry: it refreshes it on every heartbeat while its consoles are open. */
  seenAt: Date;
  /** From this instant on, the entry is a dead replica's: its consoles went with it. */
  expiresAt: Date;
}

/**
 * What the console entries of one claim say at an instant: the replicas with consoles open, and when the latest
 * entry of a replica that stopped heartbeating expired.
 *
 * @category sessions
 */
export interface ConsolePresence {
  live: Map<string, ConsoleEntry>;
  lostAt: Date | undefined;
}

// Pure, so a page that imports another function of ./core bundles no zod.
const entrySchema = /* @__PURE__ */ z.object({
  open: /* @__PURE__ */ z.number().int().positive(),
  seenAt: /* @__PURE__ */ z.string(),
  expiresAt: /* @__PURE__ */ z.string(),
});

/**
 * The entries of a Lease's `corral.dev/vdi-consoles` annotation, by replica ID. Malformed JSON reads as no
 * entries and a malformed entry as absent, so a hand-edited annotation never stops a pass; the next write
 * replaces it.
 *
 * @example
 * ```ts
 * readConsoleEntries(lease).get('broker-7f9c')?.open; // 2
 * ```
 * @category sessions
 */
export function readConsoleEntries(lease: LeaseObject): Map<string, ConsoleEntry> {
  const entries = new Map<string, ConsoleEntry>();
  const text = lease.metadata.annotations?.[consolesAnnotation];
  if (text === undefined) return entries;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return entries;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return entries;
  for (const [replica, value] of Object.entries(parsed)) {
    const entry = entrySchema.safeParse(value);
    if (!entry.success) continue;
    const seenAt = parseRfc3339(entry.data.seenAt);
    const expiresAt = parseRfc3339(entry.data.expiresAt);
    if (seenAt && expiresAt) entries.set(replica, { open: entry.data.open, seenAt, expiresAt });
  }
  return entries;
}

/**
 * The `corral.dev/vdi-consoles` annotation's value for `entries`: compact JSON with the replicas in order, or
 * `undefined` for none (the annotation is then removed).
 *
 * @category sessions
 */
export function formatConsoleEntries(entries: ReadonlyMap<string, ConsoleEntry>): string | undefined {
  if (entries.size === 0) return undefined;
  const replicas = [...entries.keys()].sort();
  return JSON.stringify(
    Object.fromEntries(
      replicas.map((replica) => {
        const { open, seenAt, expiresAt } = entries.get(replica) as ConsoleEntry;
        return [replica, { open, seenAt: seenAt.toISOString(), expiresAt: expiresAt.toISOString() }];
      }),
    ),
  );
}

/**
 * Splits console entries at `now` into live ones and the latest expiry of the dead ones. An entry written before
 * `acquiredAt` belongs to an earlier claim and counts for neither.
 *
 * @category sessions
 */
export function judgeConsoleEntries(
  entries: ReadonlyMap<string, ConsoleEntry>,
  now: Date,
  acquiredAt: Date,
): ConsolePresence {
  const live = new Map<string, ConsoleEntry>();
  let lostAt: Date | undefined;
  for (const [replica, entry] of entries) {
    if (entry.seenAt.getTime() < acquiredAt.getTime()) continue;
    if (entry.expiresAt.getTime() > now.getTime()) live.set(replica, entry);
    else if (lostAt === undefined || entry.expiresAt.getTime() > lostAt.getTime()) lostAt = entry.expiresAt;
  }
  return { live, lostAt };
}
