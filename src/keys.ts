/** Label on a VM naming the pool it belongs to. @category keys */
export const poolLabel = 'corral.dev/vdi-pool';
/** Annotation (exact identity) and label (label-safe copy) of the VM's current holder. @category keys */
export const assignedToKey = 'corral.dev/vdi-assigned-to';
/** Annotation on the VM with the claim time (RFC 3339). @category keys */
export const claimedAtAnnotation = 'corral.dev/vdi-claimed-at';
/** Label on the Lease naming its pool. @category keys */
export const leasePoolLabel = 'corral.dev/vdi-pool';
/**
 * Label on the Lease naming its member's desktop kind (`vm` or `ct`), so the session engine resets the member
 * through the right backend. Leases written before it carry none. @category keys
 */
export const leaseKindLabel = 'corral.dev/vdi-kind';
/** Label on the Lease naming its member VM. @category keys */
export const leaseMemberLabel = 'corral.dev/vdi-member';
/**
 * Label on the Lease with a short hash of its holder's identity, so a claim finds its identity's own claims with a
 * small quorum read while it plans from a cached list of the pool. @category keys
 */
export const leaseHolderLabel = 'corral.dev/vdi-holder-hash';
/** Annotation on the Lease with the claim's session ID; it changes with every claim. @category keys */
export const sessionIdAnnotation = 'corral.dev/vdi-session-id';
/**
 * VM annotation a release writes before it resets a persistent member: the session it ended, so that a claim of
 * that session whose presentation comes later is refused. @category keys
 */
export const releasedSessionAnnotation = 'corral.dev/vdi-released-session';
/** Lease annotation: start of the current or last connected period. @category keys */
export const connectedAtAnnotation = 'corral.dev/vdi-connected-at';
/** Lease annotation: end of the last connected period. @category keys */
export const disconnectedAtAnnotation = 'corral.dev/vdi-disconnected-at';
/**
 * Lease annotation: the open consoles of the claim per broker replica, as compact JSON
 * `{"<replicaId>":{"open":1,"seenAt":"…","expiresAt":"…"}}`. @category keys
 */
export const consolesAnnotation = 'corral.dev/vdi-consoles';
/**
 * Lease annotation: the RDP proxy tokens minted for the claim and not used yet, as compact JSON
 * `[{"hash":"…","caller":"…","expiresAt":"…"}]`: SHA-256 digests only, never a token. @category keys
 */
export const rdpTokensAnnotation = 'corral.dev/vdi-rdp-tokens';
/** Label on a VM of an ephemeral pool: the member is recreated from its source on release. @category keys */
export const ephemeralLabel = 'corral.dev/vdi-ephemeral';
/**
 * Annotation on a VM of an ephemeral pool naming the golden VM it is recreated from. A claim of an ephemeral member
 * records the member's source on its Lease too (a VM's golden VM, a container's image), so a reset stopped after the
 * member's delete still knows what to make it from. @category keys
 */
export const sourceAnnotation = 'corral.dev/vdi-source';
/**
 * Label on the VM a recreate of an ephemeral member stages its replacement in, naming the member's pool: the staged
 * VM is no member (it has no pool label), and a pool delete removes it. @category keys
 */
export const stagedPoolLabel = 'corral.dev/vdi-staged-pool';
/**
 * Annotation on the clone a recreate makes a member with, once the old VM is gone: a recreate that finds it unfinished
 * finishes it, while a member's unfinished clone without it (a create's or a grow's) is waited for and the member then
 * recreated. @category keys
 */
export const recreateCloneAnnotation = 'corral.dev/vdi-recreate';
/** Annotation on a staged VM naming the member it replaces. @category keys */
export const stagedForAnnotation = 'corral.dev/vdi-staged-for';
/**
 * Label a pool puts on a golden VM that has no label at all, before its first clone: KubeVirt's restore can add a
 * member's pool label only into a label map the golden VM already has (its webhook refuses a patch that writes the
 * whole map). Members do not inherit it (their clones leave out `corral.dev/*`). @category keys
 */
export const goldenLabel = 'corral.dev/vdi-golden';
/** Prefix of a claim's Lease name: `corral-vdi-<member>`. @category keys */
export const leaseNamePrefix = 'corral-vdi-';
/** How long a Lease lives without renewal. @category keys */
export const leaseDurationSeconds = 3600;
/** The holder a shrink or pool delete writes on a member's claim Lease while it removes the member. @category keys */
export const removalHolder = 'corral-vdi/resize';
/** How long a removal's Lease binds: a removal that died leaves its member unclaimable no longer. @category keys */
export const removalLeaseDurationSeconds = 300;
/**
 * Lease annotation: a release of the claim with this session ID is under way. It keeps the member out of other
 * claims and renewals until the release deletes the Lease. @category keys
 */
export const releasingAnnotation = 'corral.dev/vdi-releasing';
/**
 * Lease annotation written with {@link releasingAnnotation}: what ends the claim, `released` (a holder's or an
 * administrator's release) or `reclaimed <reason>` (the session engine's policy), so that every broker replica closes
 * the desktop's consoles with the same code once the release is done. @category keys
 */
export const releaseCauseAnnotation = 'corral.dev/vdi-release-cause';
/**
 * Lease annotation: the claim with this session ID took the member over from an expired claim and has not reset
 * it yet. The holder's next claim or start resets it before anything else. @category keys
 */
export const resetDueAnnotation = 'corral.dev/vdi-reset-due';
/**
 * Annotation on every member VM of a pool: how many free members the spare keeper keeps running (`minReady`).
 * @category keys
 */
export const minReadyAnnotation = 'corral.dev/vdi-min-ready';
/**
 * Annotation on a member the spare keeper started as a warm spare (RFC 3339 start time): only a member so marked
 * is stopped when the pool has more spares than it keeps. @category keys
 */
export const spareAnnotation = 'corral.dev/vdi-spare';
/**
 * VM annotation: when a scheduled pool's keeper first saw the member free (RFC 3339); a scale-down removes only
 * members free for the settle time. @category keys
 */
export const freeSinceAnnotation = 'corral.dev/vdi-free-since';
/**
 * Lease annotation: the last input (a key, a pointer move or click, terminal bytes) a broker console carried to the
 * desktop (RFC 3339), written at most once per input-mark interval so every replica sees it. @category keys
 */
export const inputAtAnnotation = 'corral.dev/vdi-input-at';
/**
 * Lease annotation: the reason and instant (RFC 3339) of the reclaim its holder was last warned about, such as
 * `max-duration 2026-07-02T20:00:00.000Z`. @category keys
 */
export const reclaimWarnedAnnotation = 'corral.dev/vdi-reclaim-warned';
/**
 * Lease annotation: the reclaim a `notify` pool reported instead of taking the desktop back, as `<reason> <due
 * instant>`; the same due reclaim is not reported again. @category keys
 */
export const reclaimNotifiedAnnotation = 'corral.dev/vdi-reclaim-notified';
/** Label on the ConfigMap `corral-vdi-pool-<pool>` that holds a pool's settings. @category keys */
export const poolSettingsLabel = 'corral.dev/vdi-pool-settings';
/**
 * Lease annotation: the groups the holder's claim was let into its pool with, as a JSON list, refreshed when the
 * broker sees the holder with other groups; `unchecked` for a claim that asked no entitlement (an administrator's
 * assign or own claim, an operator's claim without groups). @category keys
 */
export const holderGroupsAnnotation = 'corral.dev/vdi-holder-groups';
/**
 * Lease annotation: when the session engine first saw the claim's holder no longer let into the pool (RFC 3339);
 * the claim is reclaimed once the grace has passed since. @category keys
 */
export const notEntitledAtAnnotation = 'corral.dev/vdi-not-entitled-at';
/** The {@link holderGroupsAnnotation} of a claim that asked no entitlement, which is never judged. @category keys */
export const uncheckedHolderGroups = 'unchecked';
/**
 * VM annotation: the golden VM a roll-out moves the member to. A claimed member keeps its disk until released; an
 * ephemeral one is then made again from this golden VM instead of its `corral.dev/vdi-source`. @category keys
 */
export const rollToAnnotation = 'corral.dev/vdi-roll-to';
/**
 * Lease annotation: when a roll-out with a deadline takes the claimed member back (RFC 3339), so the session engine
 * warns its holder and then reclaims it for `roll-out`. @category keys
 */
export const rollOutAtAnnotation = 'corral.dev/vdi-roll-out-at';
/**
 * Label on a waiter's Lease: the short hash of the waiting identity; its presence marks a waiter, whose Lease carries
 * the pool label too, so a claim tells it from a member's claim. @category keys
 */
export const waiterLabel = 'corral.dev/vdi-waiter';
