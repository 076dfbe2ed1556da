import type { Clock } from './clock.js';
import { VdiError } from './errors.js';

/** The actions the audit log records. @category audit */
export type AuditAction =
  | 'vdi claim'
  | 'vdi start'
  | 'vdi release'
  | 'vdi force-release'
  | 'vdi reclaim (disconnect-grace)'
  | 'vdi reclaim (max-duration)'
  | 'vdi reclaim (idle)'
  | 'vdi reclaim (not-entitled)'
  | 'vdi reclaim (roll-out)'
  | 'vdi reclaim notify'
  | 'vdi pool set'
  | 'vdi reclaim (expired)'
  | 'vdi pool create'
  | 'vdi pool resize'
  | 'vdi pool set'
  | 'vdi pool delete'
  | 'vdi pool force-delete'
  | 'vdi pool roll-out'
  | 'vdi pool roll-out pause'
  | 'vdi pool roll-out resume'
  | 'vdi ct-pool apply'
  | 'vdi ct-pool delete'
  | 'vdi ct-pool force-delete';

/** One audit record: who did what to which desktop or pool, and how it ended. @category audit */
export interface AuditRecord {
  /** When it happened (RFC 3339, from the injected clock). */
  at: string;
  action: AuditAction;
  /** The acting identity: the caller, an admin, or `corral-vdi/broker` for the reclaim policy. */
  user: string;
  /** What it acted on: a desktop ID `vm/<ns>/<member>` or pool ID `vm/<ns>/<pool>`; a force-release adds the holder. */
  target: string;
  status: 'ok' | 'error';
  /** The error message when `status` is `error`. */
  error?: string;
}

/** Where audit records go. Plug in your own to ship them to a log store. @category audit */
export interface AuditSink {
  /** Keeps one record; a returned promise is awaited before the call that made the record returns. */
  record(entry: AuditRecord): void | Promise<void>;
}

/**
 * The default audit sink: the newest `limit` records in memory, oldest dropped first.
 *
 * @example
 * ```ts
 * const audit = new MemoryAuditSink(500);
 * const vdi = createVdi({ kubeConfig, audit });
 * console.log(audit.list().at(-1));
 * ```
 * @category audit
 */
export class MemoryAuditSink implements AuditSink {
  private readonly entries: AuditRecord[] = [];
  readonly limit: number;

  /** @throws {@link VdiError} `INVALID_INPUT` when `limit` is not a whole number of at least 0. */
  constructor(limit = 1000) {
    // NaN or Infinity would let the log grow without bound
    if (!Number.isSafeInteger(limit) || limit < 0)
      throw new VdiError(
        'INVALID_INPUT',
        `The audit limit must be a whole number of at least 0, not ${limit}.`,
        {
          details: { limit },
        },
      );
    this.limit = limit;
  }

  /** Keeps one record, dropping the oldest past the limit. */
  record(entry: AuditRecord): void {
    this.entries.push(entry);
    if (this.entries.length > this.limit) this.entries.splice(0, this.entries.length - this.limit);
  }

  /** The kept records, oldest first. */
  list(): AuditRecord[] {
    return [...this.entries];
  }
}

/** Writes one audit record at the clock's now: `ok`, or `error` with the error's message. */
export async function recordAudit(
  ctx: { audit: AuditSink; clock: Clock },
  entry: { action: AuditAction; user: string; target: string; error?: unknown },
): Promise<void> {
  const { action, user, target, error } = entry;
  await ctx.audit.record({
    at: ctx.clock.now().toISOString(),
    action,
    user,
    target,
    status: error === undefined ? 'ok' : 'error',
    ...(error === undefined ? {} : { error: error instanceof Error ? error.message : String(error) }),
  });
}
