import type { WebSocket } from 'ws';
import type { ConnectFacts } from './connect-facts.js';
import type { DesktopKind } from './ids.js';

// the kinds are the first part of a desktop ID, so ids.ts names them
export type { DesktopKind } from './ids.js';

/**
 * The kind of a member named without one (claim, release, connect and the rest take a pool or member name): every
 * pool the SDK makes is of VMs.
 *
 * @category backends
 */
export const defaultDesktopKind: DesktopKind = 'vm';

/**
 * How long making one member (a pool's, or a reset's recreate) may take before `CLONE_TIMEOUT`, unless the caller
 * says otherwise. @category pools
 */
export const defaultCloneTimeoutMs = 120_000;

/**
 * Where a member's power stands, the same words for every kind.
 *
 * - `running`: its instance runs.
 * - `starting`: it was asked to run and its instance is not running yet.
 * - `stopping`: it was asked to stop and its instance is still going down.
 * - `stopped`: it does not run and nothing asks it to.
 * - `provisioning`: it is still being made (a clone restoring into it, an image pulling); it cannot start yet.
 * - `failed`: the backend reports an error state; {@link MemberFacts.phase} says which.
 * - `unknown`: the backend reports nothing the SDK recognises.
 *
 * @category backends
 */
export type MemberPower =
  | 'running'
  | 'starting'
  | 'stopping'
  | 'stopped'
  | 'provisioning'
  | 'failed'
  | 'unknown';

/**
 * How a reset left a member: `stopped` (a persistent member, its disks kept) or `recreated` (an ephemeral
 * member, made again from its source).
 *
 * @category backends
 */
export type ResetHow = 'stopped' | 'recreated';

/** What a start or stop did: `changed` it, or found it `already` so. @category backends */
export type PowerChangeResult = 'changed' | 'already';

/** A console a member's definition offers, besides RDP (which only a probe can tell). @category backends */
export type MemberConsole = 'vnc' | 'serial' | 'terminal';

/** One member of a pool, by name. @category backends */
export interface MemberRef {
  namespace: string;
  /** The member's name, such as `devpool-1`; for a VM the VirtualMachine's, for a CT the Pod's. */
  member: string;
}

/** A member together with the pool it belongs to, for calls that must work even while the member is gone. @category backends */
export interface PoolMemberRef extends MemberRef {
  /** The pool's name (the `corral.dev/vdi-pool` label value). */
  pool: string;
}

/** A device a member asks for, such as a GPU; `resource` is the extended resource it takes on a node. @category backends */
export interface MemberDevice {
  kind: 'gpu' | 'host-device';
  /** The name the member gives the device. */
  name: string;
  /** The extended resource, such as `nvidia.com/GA102GL_A10`. */
  resource: string;
}

/**
 * The presentation copy of a claim that a member object carries: the `corral.dev/vdi-assigned-to` annotation
 * (exact identity) and label (label-safe copy), and the `corral.dev/vdi-claimed-at` annotation. The claim's
 * Lease stays the truth; each field is `undefined` when the member does not carry it.
 *
 * @category backends
 */
export interface PresentedClaim {
  /** The exact identity, from the annotation. */
  holder: string | undefined;
  /** The label-safe copy, from the label (v0.6.0 wrote only this, with the raw user). */
  label: string | undefined;
  /** When the claim began (RFC 3339). */
  claimedAt: string | undefined;
  /** The claim's session ID (copies written before it was recorded have none). */
  sessionId: string | undefined;
  /** The session a release ended on this member last (see {@link DesktopBackend.sealRelease}). */
  releasedSession?: string | undefined;
}

/** A claim to show on a member: its holder, when it began and its session. @category backends */
export interface ClaimToPresent {
  /** The holder's exact identity. */
  holder: string;
  /** When the claim began (RFC 3339), normally the Lease's `acquireTime`. */
  claimedAt: string;
  /** The claim's session ID, so a take-back of this copy leaves a newer claim's copy of the same holder alone. */
  sessionId: string;
  /** Start the member in the same write, where the backend can ({@link PresentOutcome} says whether it did). */
  start?: boolean;
  /**
   * Write only on the member exactly as in the facts: one that changed since is not read again, and the outcome
   * is `changed`, with nothing written.
   */
  exact?: boolean;
}

/**
 * How a presentation write went. `sealed`: the write was conditional on the member carrying no release of this
 * claim's session ({@link DesktopBackend.sealRelease}), so a release that began before it was seen, and one that
 * begins after it resets the member after this write; the claim need not read its Lease again. `released`: a
 * release of the claim's session had written the member first; nothing was written.
 *
 * @category backends
 */
export type PresentOutcome =
  | { kind: 'presented'; resourceVersion: string; started: boolean; sealed: boolean }
  | { kind: 'released' }
  // only for a claim to present `exact`ly: the member changed since the facts
  | { kind: 'changed' };

/** The member as a caller read it, for a start conditional on it. @category backends */
export type StartFrom = Pick<MemberFacts, 'resourceVersion' | 'usesLegacyRunField'>;

/**
 * Everything the services know about one member, read in one go and as plain data: no KubeVirt or Pod type
 * reaches a service through it.
 *
 * @category backends
 */
export interface MemberFacts {
  kind: DesktopKind;
  namespace: string;
  member: string;
  /** The pool it belongs to. */
  pool: string;
  /** `<kind>/<namespace>/<member>`; stays the same across claims and recreates. */
  desktopId: string;
  /** The member object's UID; a recreate changes it. */
  uid: string;
  /** The member object's resourceVersion as read: the precondition of a presentation write. */
  resourceVersion: string;
  /** The member object is being deleted (a recreate or a pool delete is under way); it must not be handed out. */
  deleting: boolean;
  power: MemberPower;
  /** The backend's own word for the state, for people, such as KubeVirt's `Running` or `Provisioning`. */
  phase: string;
  /** The running instance's IP address; `undefined` while none is known. */
  address: string | undefined;
  /** The node the instance runs on; `undefined` while it is not scheduled. */
  node: string | undefined;
  /** The consoles it offers, from the running instance when there is one, else from its definition. */
  consoles: MemberConsole[];
  /** The devices it asks for, from the running instance when there is one, else from its definition. */
  devices: MemberDevice[];
  /** A reset recreates it from its source instead of stopping it. */
  ephemeral: boolean;
  /** What it was made from, when it records it: a VM's golden VM, a CT's image. */
  source: string | undefined;
  presentation: PresentedClaim;
  /** An instance of an earlier run still exists (finished, or still going down while the member is stopped). */
  previousInstance: boolean;
  /** It still uses v0.6.0's run field (`spec.running` without `spec.runStrategy`); always `false` for a CT. */
  usesLegacyRunField: boolean;
}

/**
 * Whether a member can take redirected USB devices: `supported`, or `unsupported` with a `reason` that says
 * what to change. A service reports `unsupported` as `VdiError` `UNSUPPORTED_BACKEND` with the reason as its
 * message and `details` as its details.
 *
 * @category backends
 */
export type UsbSupport =
  | { kind: 'supported' }
  | { kind: 'unsupported'; reason: string; details: Readonly<Record<string, unknown>> };

/** Options of {@link DesktopBackend.resetMember}. @category backends */
export interface ResetMemberOptions {
  /** How long a recreate may take, in milliseconds. @defaultValue 120000 */
  timeoutMs?: number;
  /** Cancels a recreate's waits; the member is then left for a later reset to finish. */
  signal?: AbortSignal;
  /**
   * What an ephemeral member is made from when its own object no longer says (a recreate stopped after the
   * delete): the source its claim recorded. The caller reads the claim; a backend never does.
   */
  source?: string | undefined;
}

/** Options of {@link DesktopBackend.gatherConnectFacts}. @category backends */
export interface GatherConnectFactsOptions {
  /** How long the RDP probe waits, in milliseconds. @defaultValue 1500 */
  probeTimeoutMs?: number;
  /** Cancels the probe. */
  signal?: AbortSignal;
}

/**
 * An open console of a member: a websocket whose binary messages carry the console's raw bytes (RFB for `vnc`,
 * the serial line for `serial`), or for `terminal` the apiserver's exec websocket (`v4.channel.k8s.io`, each
 * message led by its channel byte). It arrives paused, as the member's side may speak first: `resume()` it once
 * its listeners are attached. Whoever opened it closes it.
 *
 * @category backends
 */
export type ConsoleStream = WebSocket;

/** Options of {@link DesktopBackend.openConsoleStream}. @category backends */
export interface OpenConsoleStreamOptions {
  /** The largest message taken from the member's side; a larger one closes the stream (1009). */
  maxPayload: number;
}

/** Which page {@link DesktopBackend.listMembersByHolder} reads. @category backends */
export interface MembersByHolderPage {
  /** The identities the copy may name, any of them; left out, members whose copy names nobody. */
  holders?: readonly string[];
  limit: number;
  /** Where the page starts: the `continue` of the page before; the first page without it. */
  continue?: string;
}

/** Options of {@link DesktopBackend.readMember}. @category backends */
export interface ReadMemberOptions {
  /** A resourceVersion: answer from this process's watch caches where they have seen it or a later one. */
  seenSince?: string;
}

/** A page of members, and where the next one starts when there is one. @category backends */
export interface MembersPage {
  members: MemberFacts[];
  continue?: string;
}

/** One pool's members as a backend's caches hold them: see {@link DesktopBackend.followMembers}. @category backends */
export interface MemberFollower {
  /** The names of the pool's members now. */
  names(): string[];
  /** A member's facts now; `undefined` when it is not (or no longer) a member of the pool. */
  member(name: string): MemberFacts | undefined;
}

/**
 * What differs between desktop kinds, behind one seam. Services pick the backend by a member's `kind` and never
 * see KubeVirt or Pod objects. The claim (a Lease) is not the backend's: it is the same for every kind, and a
 * backend never reads or writes Leases. The Lease records its member's kind, so a service reads a member together
 * with its claim through `readMemberClaim`, which finds a member named by another kind's desktop ID not found.
 *
 * Every method is safe to call again with the same arguments after any failure. A method that names one member
 * throws `MEMBER_NOT_FOUND` when the member object does not exist (a 404) or is no member of a pool of this kind,
 * except that {@link DesktopBackend.readMember} returns `undefined` for an object that does not exist, and
 * {@link DesktopBackend.resetMember} finishes an interrupted recreate.
 * Apiserver failures arrive as the adapter's `VdiError`s (`FORBIDDEN`, `CLUSTER_UNAVAILABLE`, …) unchanged.
 *
 * @category backends
 */
export interface DesktopBackend {
  readonly kind: DesktopKind;

  /**
   * The members of one pool, or of every pool in the namespace when `pool` is undefined, in no set order.
   * An empty list means there is no such pool here. Reads, never writes. With `cached`, the apiserver may answer
   * from its watch cache, a moment behind the latest writes: for planning that a precondition checks afterwards.
   */
  listMembers(namespace: string, pool?: string, options?: { cached?: boolean }): Promise<MemberFacts[]>;

  /**
   * A page of one pool's members picked by their presentation copy: those whose copy names nobody (`holders` left
   * out), or those whose copy names one of `holders`; read fresh, up to `limit` from `continue`. A copy may lag its claim,
   * so a page only proposes members, and the Lease write decides. A backend whose members carry no such copy
   * leaves it out, and its claims read the whole pool.
   */
  listMembersByHolder?(namespace: string, pool: string, page: MembersByHolderPage): Promise<MembersPage>;

  /**
   * Follows one pool's members in this process's synced watch caches of `namespace`: `onChange` hears the name of
   * every member (or object that may be one) that changed, and the answer reads members from the caches without a
   * request, for as long as those caches run. `undefined` when no synced caches of `namespace` run. A backend without
   * caches leaves it out, and its claims plan from {@link DesktopBackend.listMembers}.
   */
  followMembers?(
    namespace: string,
    pool: string,
    onChange: (member: string) => void,
  ): MemberFollower | undefined;

  /**
   * One member's facts from this process's watch caches, without a request, when the caches hold together on their
   * own: the member object's and its instance's caches are synced, and the instance's has seen the object's
   * resourceVersion. An instance is made only when its member object asks it to run, so while the object keeps
   * that resourceVersion, no instance other than those shown can be from before it, and a write conditional on it
   * that succeeds proves the facts held when it was made. `undefined` when the caches cannot tell. A backend
   * without watch caches leaves it out.
   */
  cachedMember?(ref: MemberRef): MemberFacts | undefined;

  /**
   * One member's facts, read fresh. Reads, never writes. With `seenSince` (a resourceVersion), a backend may answer
   * from this process's watch caches instead, but only when they have seen that resourceVersion or a later one, so
   * the answer shows every change made before it; otherwise it reads fresh.
   *
   * @returns `undefined` when there is no member object of that name (404).
   * @throws `VdiError` `MEMBER_NOT_FOUND` when the object exists but belongs to no pool of this kind.
   */
  readMember(ref: MemberRef, options?: ReadMemberOptions): Promise<MemberFacts | undefined>;

  /**
   * Asks the member to run. Idempotent: a member already running or starting is `already`. Returns once the
   * request is accepted, not once the instance runs; read the facts to see it run. With `asRead`, the start is
   * written conditional on the member as the caller read it, so a stop that landed since wins: a claim reads its
   * Lease after that read and starts only its own, still held, claim.
   *
   * @throws `VdiError` `MEMBER_NOT_FOUND`; `CONFLICT` (retryable) when the member changed since `asRead`;
   *   `START_FAILED` (retryable, with the backend's reason) when the backend refuses or fails the request.
   *   Nothing changes on a failure.
   */
  startMember(ref: MemberRef, asRead?: StartFrom): Promise<PowerChangeResult>;

  /**
   * Asks the member to stop, keeping its disks. Idempotent: a member already stopped or stopping is `already`.
   * Returns once the request is accepted.
   *
   * @throws `VdiError` `MEMBER_NOT_FOUND`; `STOP_FAILED` (retryable) when the backend refuses or fails it.
   */
  stopMember(ref: MemberRef): Promise<PowerChangeResult>;

  /**
   * Resets a member for its next holder: a persistent member is stopped (disks kept), an ephemeral one is
   * deleted and made again from its source under the same name, stopped, and is ready when this returns. A VM
   * member's replacement is made beside it first, so a clone that fails leaves the member as it was.
   * Repeating it after a failure at any step finishes the job: a recreate under way is waited for, and a member
   * whose object is already gone is made again (its source read from another member of `pool`). A failure
   * half-way leaves the member absent or being made; the caller keeps it claimed until a reset succeeds, so it
   * is never handed out half-made.
   *
   * @throws `VdiError` `MEMBER_NOT_FOUND` when the member is gone and nothing in its pool tells what to make
   *   it from; `INVALID_INPUT` when it belongs to another pool; `STOP_FAILED`; `GOLDEN_NOT_FOUND`,
   *   `CLONE_FAILED`, `CLONE_TIMEOUT` when a recreate cannot finish.
   */
  resetMember(ref: PoolMemberRef, options?: ResetMemberOptions): Promise<ResetHow>;

  /**
   * Writes the presentation copy of a claim on the member, conditional on the resourceVersion in `facts`; when
   * the member changed meanwhile it reads it again and retries a few times (or, for a claim to present `exact`ly,
   * answers `changed`). Idempotent: a member that already presents this claim is not written.
   *
   * @returns the member's resourceVersion once it presents the claim, for a start conditional on it, and whether
   *   the write also started the member and was sealed against the claim's release (see {@link PresentOutcome}).
   * @throws `VdiError` `MEMBER_NOT_FOUND`; `CONFLICT` (retryable) when the member kept changing.
   */
  presentClaim(facts: MemberFacts, claim: ClaimToPresent): Promise<PresentOutcome>;

  /**
   * A release's record on a member it resets in place, written once the member's stop was accepted: removes
   * `holder`'s presentation copy and records `sessionId` as released on the member, writing even when there is no
   * copy, so that a presentation or start of that session conditional on an older read is refused and one on a newer
   * read sees the record. A member that asks to run again (a start landed after the stop) is not written, and the
   * release stops it again. Backends whose presentation is never {@link PresentOutcome} `sealed` leave it out, and
   * a release clears their copy instead.
   *
   * @returns `false` when the member asks to run, else `true` (written, or nothing to write).
   * @throws `VdiError` `CONFLICT` (retryable) when the member kept changing.
   */
  sealRelease?(ref: MemberRef, holder: string, sessionId: string): Promise<boolean>;

  /**
   * Removes the presentation copy while it still names `holder` (a newer claim's copy is left alone), and with
   * `sessionId` only while it is that session's copy (a newer claim of the same holder keeps its own),
   * conditional on the member's resourceVersion, reading it again on a conflict. Idempotent.
   *
   * @returns whether it removed a copy; `false` when there was none of `holder`'s or the member is gone.
   * @throws `VdiError` `CONFLICT` (retryable) when the member kept changing.
   */
  clearPresentation(ref: MemberRef, holder: string, sessionId?: string): Promise<boolean>;

  /**
   * What connect planning needs about a running member, read and probed now. Reads, never writes.
   *
   * @throws `VdiError` `MEMBER_NOT_FOUND`; `DESKTOP_STOPPED` when its instance does not run.
   */
  gatherConnectFacts(ref: MemberRef, options?: GatherConnectFactsOptions): Promise<ConnectFacts>;

  /**
   * Whether the member takes redirected USB devices: as its instance runs now, or as its definition would
   * start when it does not run. Reads, never writes; a service checks that the member runs separately.
   *
   * @throws `VdiError` `MEMBER_NOT_FOUND`.
   */
  checkUsbSupport(ref: MemberRef): Promise<UsbSupport>;

  /**
   * Opens one of the member's consoles as a stream, through the apiserver with the SDK's credentials. It checks
   * no claim: callers decide who may open it first.
   *
   * @throws `VdiError` `UNSUPPORTED_BACKEND` for a console this kind does not have; `MEMBER_NOT_FOUND`;
   *   `DESKTOP_STOPPED` when its instance does not run; the apiserver's refusals (`FORBIDDEN`, …).
   */
  openConsoleStream(
    ref: MemberRef,
    console: MemberConsole,
    options: OpenConsoleStreamOptions,
  ): Promise<ConsoleStream>;
}
