import { z } from 'zod';
import { classifyClaim } from '../claims/claim-liveness.js';
import { releaseMember } from '../claims/claims-service.js';
import { leaseNameFor, memberFromLeaseName } from '../claims/lease-name.js';
import { parseRfc3339 } from '../claims/parse-time.js';
import type { VdiContext } from '../context.js';
import { isVdiError, VdiError } from '../errors.js';
import { forEachBounded } from '../for-each-bounded.js';
import { formatDesktopId } from '../ids.js';
import {
  connectedAtAnnotation,
  disconnectedAtAnnotation,
  leaseMemberLabel,
  leasePoolLabel,
  poolLabel,
  sessionIdAnnotation,
} from '../keys.js';
import { isConflictReason } from '../kube/errors.js';
import type { LeaseObject } from '../kubevirt-types.js';
import {
  identitySchema,
  isValidVmName,
  memberNameSchema,
  namespaceSchema,
  parseOptions,
  validateNamespace,
} from '../validate.js';
import {
  checkReclaimPolicy,
  defaultReclaimPolicy,
  describeSession,
  planReclaim,
  type ReclaimPolicy,
  type ReclaimReason,
  type SessionFacts,
} from './plan-reclaim.js';
import { planRenewal } from './plan-renewal.js';

/** The identity the reclaim policy acts as, in the audit log and on events. @category sessions */
export const reclaimActor = 'corral-vdi/broker';

/** The console transports whose sessions count. @category sessions */
export type ConsoleKind = 'vnc' | 'terminal' | 'rdp';

/** Options of {@link createSessionEngine}. @category sessions */
export interface SessionEngineOptions {
  /** The namespaces whose claims this engine renews and reclaims; run one engine per set of namespaces. */
  namespaces: string[];
  /** The reclaim policy; missing fields take {@link defaultReclaimPolicy}'s values. */
  policy?: Partial<ReclaimPolicy>;
  /**
   * Time between passes of {@link SessionEngine.start}'s timer, in ms.
   * @defaultValue 30000
   */
  intervalMs?: number;
  /**
   * Renew a claim's Lease once its last renewal is this old, in ms.
   * @defaultValue a third of each Lease's `leaseDurationSeconds`
   */
  renewIntervalMs?: number;
  /**
   * When this process started, for the restart rule of {@link planReclaim}.
   * @defaultValue the context clock's time when the engine is created
   */
  processStartedAt?: Date;
}

/** Options of {@link SessionEngine.openConsole}. @category sessions */
export interface OpenConsoleOptions {
  /** The member VM's name. */
  member: string;
  /** Defaults to the SDK's namespace; it must be one the engine serves. */
  namespace?: string;
  /** Who opens the console: the holder or an administrator. */
  identity: string;
  /** The console's protocol. */
  kind: ConsoleKind;
}

/** One open console. Close it when its connection ends; closing twice does nothing. @category sessions */
export interface ConsoleHandle {
  /** `vm/<namespace>/<member>`. */
  readonly desktopId: string;
  /** Who opened it. */
  readonly identity: string;
  /** The console's protocol. */
  readonly kind: ConsoleKind;
  /** When it opened, by the engine's clock. */
  readonly openedAt: Date;
  /** Ends the console. The last one to close starts the desktop's disconnect grace. Never throws. */
  close(): Promise<void>;
}

/** The session fields of a desktop view (times in RFC 3339). @category sessions */
export interface DesktopSession {
  /** Whether a console of the desktop is open in this process. */
  connected: boolean;
  /** Since when the disconnect grace runs: the last disconnect, or the engine's start after a restart. */
  disconnectedAt: string | undefined;
  /** The earliest pending reclaim; it may lie in the past until the next pass acts on it. */
  reclaimAt: string | undefined;
  reclaimReason: ReclaimReason | undefined;
}

/** What one pass did. @category sessions */
export interface SessionPassResult {
  /** Live claims looked at. */
  desktops: number;
  /** Leases renewed. */
  renewed: number;
  /** Leases whose session marks were written because an earlier write failed. */
  marked: number;
  reclaimed: number;
  /** Reclaims that failed; their claims stay and the next pass tries again. */
  failed: number;
  /** Lists and writes that failed; the next pass tries again. Failed reclaims are in the audit log instead. */
  errors: VdiError[];
}

/** The console tracker and the reclaim and renewal loop of one process. @category sessions */
export interface SessionEngine {
  /**
   * Counts a console of a claimed desktop. When it is the desktop's first open console, its start is
   * recorded on the Lease (`corral.dev/vdi-connected-at`) before this resolves. A v0.6.0 assignment or a member
   * whose Lease is gone (which only an administrator may open) has no Lease to record on: its console is not
   * counted.
   *
   * @throws {@link VdiError} `CLAIM_ENDED` when the desktop is not claimed, `CLAIM_EXPIRED` when its claim
   *   expired, `INVALID_INPUT` for bad options or a namespace the engine does not serve, and the apiserver's
   *   errors when the mark cannot be written (the console is then not counted).
   */
  openConsole(options: OpenConsoleOptions): Promise<ConsoleHandle>;
  /** Runs a pass now and then every `intervalMs` until {@link SessionEngine.stop}. Calling it twice does nothing. */
  start(): void;
  /** Stops the timer and waits for a running pass. Open consoles stay counted. */
  stop(): Promise<void>;
  /**
   * One pass over the served namespaces: reclaims what the policy says, renews Leases that are due, and writes
   * session marks that an earlier write missed. Calls during a pass share that pass.
   */
  runPass(): Promise<SessionPassResult>;
  /** The session fields of a desktop, from its Lease (as read) and this process's consoles. No I/O. */
  describe(desktop: { namespace: string; member: string; lease: LeaseObject | undefined }): DesktopSession;
  /** The policy in force. */
  readonly policy: Readonly<ReclaimPolicy>;
  readonly processStartedAt: Date;
}

// The consoles of one claimed desktop in this process, and the marks they imply.
interface Tracked {
  claim: ClaimKey;
  open: number;
  connectedAt: Date | undefined;
  disconnectedAt: Date | undefined;
  /** Bumped on every change of the marks; equal to `written` once the Lease carries them. */
  version: number;
  written: number;
  /** Mark writes of one desktop run one after another, so an older state never overwrites a newer one. */
  writing: Promise<unknown>;
}

interface ClaimKey {
  uid: string;
  holder: string;
  sessionId: string;
  acquireTime: string;
}

type LeaseUpdate = { kind: 'written'; lease: LeaseObject } | { kind: 'unchanged' } | { kind: 'gone' };

const positiveMs = z.number().int().positive().max(2_147_483_647);
const optionsSchema = z.object({
  namespaces: z.array(namespaceSchema).min(1),
  policy: z
    .object({ disconnectGraceMs: z.number().optional(), maxSessionMs: z.number().optional() })
    .optional(),
  intervalMs: positiveMs.optional(),
  renewIntervalMs: positiveMs.optional(),
  processStartedAt: z.date().optional(),
});
const consoleSchema = z.object({
  member: memberNameSchema,
  namespace: namespaceSchema.optional(),
  identity: identitySchema,
  kind: z.enum(['vnc', 'terminal', 'rdp']),
});
const writeConcurrency = 16;
const reclaimConcurrency = 4;
const conflictAttempts = 5;

function claimKeyOf(lease: LeaseObject): ClaimKey {
  return {
    uid: lease.metadata.uid ?? '',
    holder: lease.spec.holderIdentity ?? '',
    sessionId: lease.metadata.annotations?.[sessionIdAnnotation] ?? '',
    acquireTime: lease.spec.acquireTime ?? '',
  };
}

function sameClaim(a: ClaimKey, b: ClaimKey): boolean {
  return (
    a.uid === b.uid && a.holder === b.holder && a.sessionId === b.sessionId && a.acquireTime === b.acquireTime
  );
}

function parseMark(lease: LeaseObject, key: string): Date | undefined {
  const text = lease.metadata.annotations?.[key];
  return text === undefined ? undefined : parseRfc3339(text);
}

function acquiredAtOf(lease: LeaseObject): Date | undefined {
  for (const text of [lease.spec.acquireTime, lease.metadata.creationTimestamp, lease.spec.renewTime]) {
    const parsed = text === undefined ? undefined : parseRfc3339(text);
    if (parsed) return parsed;
  }
  return undefined;
}

/**
 * Creates the session engine of one process: it counts open consoles, records connected periods on the claims'
 * Leases, renews the Leases of live claims in its namespaces, and reclaims desktops by the policy of
 * {@link planReclaim} through the same path as a release (a persistent member stops, an ephemeral one is
 * recreated). A pass reads each namespace's claim Leases with one list request and writes only to Leases that
 * need a renewal or a mark. Decisions use `ctx.clock`; only the timer's scheduling uses real time.
 *
 * @example
 * ```ts
 * const engine = createSessionEngine(vdi.context, {
 *   namespaces: ['corral-vms'],
 *   policy: { disconnectGraceMs: parseDuration(process.env.CORRAL_VDI_DISCONNECT_GRACE ?? '15m') },
 * });
 * engine.start();
 * const handle = await engine.openConsole({ member: 'devpool-1', identity: 'alice@example.com', kind: 'vnc' });
 * socket.on('close', () => void handle.close());
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` for bad options.
 * @category sessions
 */
export function createSessionEngine(ctx: VdiContext, options: SessionEngineOptions): SessionEngine {
  const parsed = parseOptions(optionsSchema, options, 'createSessionEngine');
  const namespaces = [...new Set(parsed.namespaces)];
  const policy: ReclaimPolicy = { ...defaultReclaimPolicy, ...parsed.policy };
  checkReclaimPolicy(policy);
  const intervalMs = parsed.intervalMs ?? 30_000;
  const { renewIntervalMs } = parsed;
  const processStartedAt = parsed.processStartedAt ?? ctx.clock.now();

  const tracked = new Map<string, Tracked>();
  let timer: ReturnType<typeof setInterval> | undefined;
  let running: Promise<SessionPassResult> | undefined;

  const keyOf = (namespace: string, member: string) => `${namespace}/${member}`;

  // The console state of this claim, if this process tracks one for it.
  function trackedFor(namespace: string, member: string, lease: LeaseObject): Tracked | undefined {
    const entry = tracked.get(keyOf(namespace, member));
    return entry && sameClaim(entry.claim, claimKeyOf(lease)) ? entry : undefined;
  }

  function factsOf(lease: LeaseObject, entry: Tracked | undefined): SessionFacts | undefined {
    const acquiredAt = acquiredAtOf(lease);
    if (acquiredAt === undefined) return undefined;
    // this process's own marks are at least as new as the Lease's
    return {
      acquiredAt,
      connectedAt: entry?.connectedAt ?? parseMark(lease, connectedAtAnnotation),
      disconnectedAt: entry?.disconnectedAt ?? parseMark(lease, disconnectedAtAnnotation),
      consoleOpen: (entry?.open ?? 0) > 0,
      processStartedAt,
    };
  }

  function withMarks(lease: LeaseObject, entry: Tracked): LeaseObject | undefined {
    const annotations = { ...lease.metadata.annotations };
    if (entry.connectedAt) annotations[connectedAtAnnotation] = entry.connectedAt.toISOString();
    if (entry.disconnectedAt) annotations[disconnectedAtAnnotation] = entry.disconnectedAt.toISOString();
    const current = lease.metadata.annotations ?? {};
    const changed = [connectedAtAnnotation, disconnectedAtAnnotation].some(
      (key) => annotations[key] !== current[key],
    );
    return changed ? { ...lease, metadata: { ...lease.metadata, annotations } } : undefined;
  }

  // Read-modify-write of one claim's Lease; a conflict re-reads it, and a Lease of another claim is left alone.
  async function updateLease(
    namespace: string,
    claim: ClaimKey,
    name: string,
    known: LeaseObject | undefined,
    change: (lease: LeaseObject) => LeaseObject | undefined,
  ): Promise<LeaseUpdate> {
    let lease = known;
    for (let attempt = 1; ; attempt += 1) {
      lease ??= await ctx.cluster.getLease(namespace, name);
      if (!lease || !sameClaim(claimKeyOf(lease), claim)) return { kind: 'gone' };
      const next = change(lease);
      if (!next) return { kind: 'unchanged' };
      try {
        return { kind: 'written', lease: await ctx.cluster.replaceLease(namespace, next) };
      } catch (error) {
        if (!isConflictReason(error, 'Conflict') || attempt === conflictAttempts) throw error;
        lease = undefined;
      }
    }
  }

  function forget(namespace: string, member: string, entry: Tracked): void {
    if (tracked.get(keyOf(namespace, member)) === entry) tracked.delete(keyOf(namespace, member));
  }

  // Writes the entry's current marks, after any write already under way; resolves with whether the claim is still there.
  function syncMarks(
    namespace: string,
    member: string,
    entry: Tracked,
    known?: LeaseObject,
  ): Promise<boolean> {
    const write = entry.writing.then(async () => {
      const version = entry.version;
      const outcome = await updateLease(namespace, entry.claim, leaseNameFor(member), known, (lease) =>
        withMarks(lease, entry),
      );
      if (outcome.kind === 'gone') {
        forget(namespace, member, entry);
        return false;
      }
      entry.written = Math.max(entry.written, version);
      if (entry.open === 0 && entry.written === entry.version) forget(namespace, member, entry);
      return true;
    });
    entry.writing = write.catch(() => undefined);
    return write;
  }

  async function openConsole(openOptions: OpenConsoleOptions): Promise<ConsoleHandle> {
    const {
      member,
      namespace: asked,
      identity,
      kind,
    } = parseOptions(consoleSchema, openOptions, 'openConsole');
    const namespace = validateNamespace(asked ?? ctx.defaultNamespace);
    if (!namespaces.includes(namespace)) {
      throw new VdiError(
        'INVALID_INPUT',
        `Namespace "${namespace}" is not served by this session engine; it serves ${namespaces.join(', ')}.`,
        {
          details: { namespace, namespaces },
        },
      );
    }
    const desktopId = formatDesktopId({ kind: 'vm', namespace, member });
    const [vm, lease] = await Promise.all([
      ctx.cluster.getVm(namespace, member),
      ctx.cluster.getLease(namespace, leaseNameFor(member)),
    ]);
    const now = ctx.clock.now();
    // with the VM gone, the Lease alone says whether the member is claimed
    const claim = classifyClaim({ vm: vm ?? { metadata: { name: member }, spec: {} }, lease, now });
    if (claim.kind === 'expired') {
      throw new VdiError(
        'CLAIM_EXPIRED',
        `The claim on ${desktopId} expired; claim its pool again before opening a console.`,
        {
          details: { desktopId },
        },
      );
    }
    // a v0.6.0 or Lease-less member has no Lease to carry marks, and so no grace to start when it closes
    if (claim.kind === 'legacy' || claim.kind === 'orphan') {
      return { desktopId, identity, kind, openedAt: now, close: async () => undefined };
    }
    if (claim.kind !== 'held' || lease === undefined) {
      throw new VdiError(
        'CLAIM_ENDED',
        `Desktop ${desktopId} is not claimed; claim its pool before opening a console.`,
        {
          details: { desktopId },
        },
      );
    }
    const key = keyOf(namespace, member);
    let entry = trackedFor(namespace, member, lease);
    if (!entry) {
      entry = {
        claim: claimKeyOf(lease),
        open: 0,
        connectedAt: undefined,
        disconnectedAt: undefined,
        version: 0,
        written: 0,
        writing: Promise.resolve(),
      };
      tracked.set(key, entry);
    }
    const before = { connectedAt: entry.connectedAt, version: entry.version };
    entry.open += 1;
    if (entry.open === 1) {
      entry.connectedAt = now;
      entry.version += 1;
    }
    const undo = (current: Tracked) => {
      current.open -= 1;
      // nothing recorded this connected period, so it did not happen
      if (current.open === 0 && current.version === before.version + 1) {
        current.connectedAt = before.connectedAt;
        current.version = before.version;
      }
    };
    let present: boolean;
    try {
      present = await syncMarks(namespace, member, entry, lease);
    } catch (error) {
      undo(entry);
      throw error;
    }
    if (!present) {
      undo(entry);
      throw new VdiError(
        'CLAIM_ENDED',
        `The claim on ${desktopId} ended while the console opened; claim its pool again.`,
        {
          details: { desktopId },
        },
      );
    }
    const opened = entry;
    let closed = false;
    return {
      desktopId,
      identity,
      kind,
      openedAt: now,
      async close() {
        if (closed) return;
        closed = true;
        // a console of a claim that ended, or that this engine already forgot, changes nothing
        if (tracked.get(key) !== opened) return;
        opened.open -= 1;
        if (opened.open > 0) return;
        opened.disconnectedAt = ctx.clock.now();
        opened.version += 1;
        // a failed write stays pending; the next pass writes it
        await syncMarks(namespace, member, opened).catch(() => undefined);
      },
    };
  }

  interface DueReclaim {
    member: string;
    lease: LeaseObject;
  }

  interface DueWrite {
    member: string;
    lease: LeaseObject;
    renew: boolean;
    entry: Tracked | undefined;
  }

  async function reclaim(
    namespace: string,
    { member, lease: listed }: DueReclaim,
    result: SessionPassResult,
  ): Promise<void> {
    const desktopId = formatDesktopId({ kind: 'vm', namespace, member });
    const holder = listed.spec.holderIdentity ?? '';
    // the list may be old by now: act only if this very claim is still due
    const lease = await ctx.cluster.getLease(namespace, leaseNameFor(member));
    if (!lease || !sameClaim(claimKeyOf(lease), claimKeyOf(listed))) return;
    const facts = factsOf(lease, trackedFor(namespace, member, lease));
    const plan = facts && planReclaim(facts, ctx.clock.now(), policy);
    if (plan?.kind !== 'reclaim') return;
    try {
      await releaseMember(ctx, {
        namespace,
        member,
        actor: reclaimActor,
        asAdmin: true,
        auditAction: `vdi reclaim (${plan.reason})`,
        ...(lease.metadata.annotations?.[sessionIdAnnotation] === undefined
          ? {}
          : { expectedSessionId: lease.metadata.annotations[sessionIdAnnotation] }),
      });
    } catch (error) {
      // released by someone else meanwhile: nothing is left to reclaim
      if (isVdiError(error, 'CLAIM_ENDED', 'CLAIM_CHANGED')) return;
      result.failed += 1;
      const message = error instanceof Error ? error.message : String(error);
      ctx.events.emit('reclaim-failed', { desktopId, holder, reason: plan.reason, error: message });
      return;
    }
    const entry = trackedFor(namespace, member, lease);
    if (entry) forget(namespace, member, entry);
    result.reclaimed += 1;
    ctx.events.emit('reclaimed', { desktopId, holder, reason: plan.reason });
  }

  async function write(namespace: string, due: DueWrite, result: SessionPassResult): Promise<void> {
    const { member, lease, renew, entry } = due;
    const version = entry?.version ?? 0;
    const outcome = await updateLease(
      namespace,
      claimKeyOf(lease),
      lease.metadata.name ?? '',
      lease,
      (current) => {
        const marked = entry ? (withMarks(current, entry) ?? current) : current;
        if (!renew) return marked === current ? undefined : marked;
        return { ...marked, spec: { ...marked.spec, renewTime: ctx.clock.now().toISOString() } };
      },
    );
    if (outcome.kind === 'gone') {
      if (entry) forget(namespace, member, entry);
      return;
    }
    if (entry && entry.written < version) {
      entry.written = version;
      if (outcome.kind === 'written') result.marked += 1;
      if (entry.open === 0 && entry.written === entry.version) forget(namespace, member, entry);
    }
    if (renew && outcome.kind === 'written') {
      result.renewed += 1;
      ctx.events.emit('renewed', {
        desktopId: formatDesktopId({ kind: 'vm', namespace, member }),
        holder: lease.spec.holderIdentity ?? '',
      });
    }
  }

  async function membersByLeaseName(namespace: string): Promise<Map<string, string>> {
    const vms = await ctx.cluster.listVms(namespace, poolLabel);
    const names = vms.map((vm) => vm.metadata.name ?? '').filter(isValidVmName);
    return new Map(names.map((name) => [leaseNameFor(name), name]));
  }

  async function passOver(namespace: string, result: SessionPassResult): Promise<void> {
    const leases = await ctx.cluster.listLeases(namespace, leasePoolLabel);
    const now = ctx.clock.now();
    const reclaims: DueReclaim[] = [];
    const writes: DueWrite[] = [];
    let hashedNames: Map<string, string> | undefined;
    for (const lease of leases) {
      const name = lease.metadata.name ?? '';
      let member = lease.metadata.labels?.[leaseMemberLabel] ?? memberFromLeaseName(name);
      // only a member name too long for its Lease name needs the VMs to be found
      if (member === undefined) {
        hashedNames ??= await membersByLeaseName(namespace);
        member = hashedNames.get(name);
      }
      if (member === undefined || !isValidVmName(member) || leaseNameFor(member) !== name) continue;
      const renewal = planRenewal(lease, now, renewIntervalMs);
      if (renewal.kind === 'expired') continue;
      const entry = trackedFor(namespace, member, lease);
      const facts = factsOf(lease, entry);
      if (facts === undefined) continue;
      result.desktops += 1;
      if (planReclaim(facts, now, policy).kind === 'reclaim') {
        reclaims.push({ member, lease });
        continue;
      }
      const marksPending = entry !== undefined && entry.written < entry.version;
      if (renewal.kind === 'renew' || marksPending)
        writes.push({ member, lease, renew: renewal.kind === 'renew', entry });
    }
    await forEachBounded(writes, writeConcurrency, (due) =>
      write(namespace, due, result).catch((error: unknown) => {
        result.errors.push(
          isVdiError(error) ? error : new VdiError('INTERNAL', String(error), { cause: error }),
        );
      }),
    );
    await forEachBounded(reclaims, reclaimConcurrency, (due) =>
      reclaim(namespace, due, result).catch((error: unknown) => {
        result.errors.push(
          isVdiError(error) ? error : new VdiError('INTERNAL', String(error), { cause: error }),
        );
      }),
    );
  }

  async function pass(): Promise<SessionPassResult> {
    const result: SessionPassResult = {
      desktops: 0,
      renewed: 0,
      marked: 0,
      reclaimed: 0,
      failed: 0,
      errors: [],
    };
    await Promise.all(
      namespaces.map((namespace) =>
        passOver(namespace, result).catch((error: unknown) => {
          result.errors.push(
            isVdiError(error) ? error : new VdiError('INTERNAL', String(error), { cause: error }),
          );
        }),
      ),
    );
    return result;
  }

  function runPass(): Promise<SessionPassResult> {
    running ??= pass().finally(() => {
      running = undefined;
    });
    return running;
  }

  return {
    openConsole,
    runPass,
    start() {
      if (timer !== undefined) return;
      void runPass();
      timer = setInterval(() => void runPass(), intervalMs);
      // the engine alone never keeps a process alive
      timer.unref();
    },
    async stop() {
      if (timer !== undefined) clearInterval(timer);
      timer = undefined;
      await running;
    },
    describe({ namespace, member, lease }) {
      const empty: DesktopSession = {
        connected: false,
        disconnectedAt: undefined,
        reclaimAt: undefined,
        reclaimReason: undefined,
      };
      if (!lease || planRenewal(lease, ctx.clock.now()).kind === 'expired') return empty;
      const facts = factsOf(lease, trackedFor(namespace, member, lease));
      if (!facts) return empty;
      const view = describeSession(facts, policy);
      return {
        connected: view.connected,
        disconnectedAt: view.disconnectedAt?.toISOString(),
        reclaimAt: view.reclaimAt?.toISOString(),
        reclaimReason: view.reclaimReason,
      };
    },
    policy,
    processStartedAt,
  };
}
