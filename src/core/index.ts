// The pure cores only: nothing here imports Node built-ins, client-node or any I/O, so a browser can load it.

export type {
  AccessDecision,
  AccessRefusal,
  AccessRequest,
  ConsoleAccessRequest,
  PoolAccessDecision,
  PoolAccessRequest,
  PoolEntitlement,
} from '../access.js';
export { canInspect, canOpenConsole, canRelease, canStart, canUsePool, refusalError } from '../access.js';
export { createConsoleInputDetector } from '../broker/console-input.js';
export type { RfbInputParser, RfbInputScan } from '../broker/rfb-input.js';
export { createRfbInputParser } from '../broker/rfb-input.js';
export type {
  AdmissionPlan,
  AdmitPoolInput,
  CapacityRow,
  UnscheduledDemand,
} from '../capacity/admit-pool.js';
export { admitPool } from '../capacity/admit-pool.js';
export type { DeviceKind, DeviceNeed, UncountedDevice } from '../capacity/device-needs.js';
export { classifyDevice, readDeviceNeeds, uncountedDevicesOf } from '../capacity/device-needs.js';
export { parseDeviceCount } from '../capacity/parse-quantity.js';
export type {
  ClaimFacts,
  ClaimLiveness,
  ClaimMarks,
  LeaseLiveness,
  MemberClaimFacts,
} from '../claims/claim-liveness.js';
export {
  claimHolder,
  classifyClaim,
  classifyLease,
  classifyLeaselessMember,
  classifyLeaselessVm,
  classifyMemberClaim,
  isClaimable,
  isLeaseExpired,
  leaseExpiresAt,
  readClaimMarks,
} from '../claims/claim-liveness.js';
export type { MemberClassification, MemberFacts, PoolMemberFacts } from '../claims/classify-member.js';
export { classifyMember, classifyPoolMember } from '../claims/classify-member.js';
export { leaseNameFor, memberFromLeaseName } from '../claims/lease-name.js';
export { parseRfc3339 } from '../claims/parse-time.js';
export type { ClaimFollowUp, ClaimOrder, ClaimPlan, PlanClaimInput } from '../claims/plan-claim.js';
export { planClaim } from '../claims/plan-claim.js';
export type { PlanReleaseInput, ReleasePlan } from '../claims/plan-release.js';
export { planRelease } from '../claims/plan-release.js';
export { isReleasing, leavesDesktopDuringRelease } from '../claims/releasing-mark.js';
export { isValidLabelValue, sanitizeLabelValue } from '../claims/sanitize-label-value.js';
export type { Clock } from '../clock.js';
export type { LaunchPlan } from '../connect-planner/launch-plan.js';
export { planLaunch } from '../connect-planner/launch-plan.js';
export type {
  ConnectFacts,
  ConnectOption,
  ConnectPlan,
  ConnectProtocol,
  CtConnectFacts,
  SkippedProtocol,
  TcpProbeResult,
  VmConnectFacts,
} from '../connect-planner/plan-connect.js';
export { formatHostPort, planConnect, rdpPort } from '../connect-planner/plan-connect.js';
export { toCtAdmissionInput } from '../ct/ct-admission.js';
export { phaseOfPod, powerOfPod, toCtMemberFacts } from '../ct/ct-member-facts.js';
export type { CtHomeVolume, CtPoolSpec, HomeOnRelease, ParseCtPoolSpecOptions } from '../ct/ct-pool-spec.js';
export { extendedResourcesOf, isExtendedResource, parseCtPoolSpec } from '../ct/ct-pool-spec.js';
export type {
  CtMemberRead,
  CtPoolDeletePlan,
  CtReconcileInput,
  CtReconcilePlan,
  CtReconcileStep,
} from '../ct/plan-ct-reconcile.js';
export { planCtPoolDelete, planCtReconcile } from '../ct/plan-ct-reconcile.js';
// DesktopBackend, the seam that does the I/O (its console streams are Node websockets), is the SDK's, not a core's.
export type {
  ClaimToPresent,
  GatherConnectFactsOptions,
  MemberConsole,
  MemberDevice,
  MemberFacts as BackendMemberFacts,
  MemberPower,
  MemberRef,
  PoolMemberRef,
  PowerChangeResult,
  PresentedClaim,
  PresentOutcome,
  ResetHow,
  ResetMemberOptions,
  StartFrom,
  UsbSupport,
} from '../desktop-backend.js';
export { defaultDesktopKind } from '../desktop-backend.js';
export type { HolderRecord } from '../entitlements/holder-entitlement.js';
export {
  formatHolderGroups,
  judgeHolderEntitlement,
  maxHolderGroupsLength,
  readHolderRecord,
} from '../entitlements/holder-entitlement.js';
export type { VdiErrorCode, VdiErrorOptions } from '../errors.js';
export { httpStatusByCode, isVdiError, VdiError } from '../errors.js';
export { formatTime, normalizeTime } from '../format-time.js';
export type { DesktopKind, DesktopRef, PoolRef } from '../ids.js';
export { formatDesktopId, formatPoolId, parseDesktopId, parsePoolId } from '../ids.js';
export {
  assignedToKey,
  claimedAtAnnotation,
  connectedAtAnnotation,
  consolesAnnotation,
  disconnectedAtAnnotation,
  ephemeralLabel,
  holderGroupsAnnotation,
  idleWarnedAnnotation,
  inputAtAnnotation,
  leaseDurationSeconds,
  leaseMemberLabel,
  leaseNamePrefix,
  leasePoolLabel,
  minReadyAnnotation,
  notEntitledAtAnnotation,
  poolLabel,
  poolSettingsLabel,
  reclaimNotifiedAnnotation,
  releaseCauseAnnotation,
  releasedSessionAnnotation,
  releasingAnnotation,
  sessionIdAnnotation,
  sourceAnnotation,
  spareAnnotation,
  stagedForAnnotation,
  stagedPoolLabel,
  uncheckedHolderGroups,
} from '../keys.js';
export type { LeaseObject, NodeObject, ObjectMeta } from '../kube-objects.js';
export type {
  PermittedHostDevice,
  PermittedHostDevices,
  RunStrategy,
  VirtualMachine,
  VirtualMachineClone,
  VirtualMachineInstance,
  VmDeviceRequest,
  VmDevices,
} from '../kubevirt-types.js';
export type {
  LeaderElectionTimings,
  LeaderObservation,
  LeaderStep,
  LeaderStepInput,
} from '../leader/plan-leader-election.js';
export {
  checkLeaderElectionTimings,
  defaultLeaderElectionTimings,
  isLeadershipHeld,
  observeLeaderLease,
  planLeaderRelease,
  planLeaderStep,
} from '../leader/plan-leader-election.js';
export type { UserLimitDecision, UserLimitInput } from '../limits/user-limit.js';
export { desktopsHeldBy, lowestLimit, planUserLimit, userLimitError } from '../limits/user-limit.js';
export { compareNatural, memberNameFor } from '../member-names.js';
export type { CountPoolMembersInput, PoolMemberCounts } from '../metrics/count-pool-members.js';
export { countPoolMembers } from '../metrics/count-pool-members.js';
export type { PoolCreatePlan } from '../pools/plan-pool-create.js';
export { planPoolCreate } from '../pools/plan-pool-create.js';
export type { PoolDeletePlan } from '../pools/plan-pool-delete.js';
export { planPoolDelete } from '../pools/plan-pool-delete.js';
export type { ResizeInput, ResizePlan } from '../pools/plan-resize.js';
export { planMemberRemoval, planResize } from '../pools/plan-resize.js';
export type { PoolSettings, PoolSettingsContext, ReclaimAction } from '../pools/pool-settings.js';
export {
  checkPoolSettings,
  poolSettingsName,
  poolSettingsOf,
  reclaimActionOf,
  reclaimActions,
} from '../pools/pool-settings.js';
export { describePools, isFreeMember } from '../pools/pool-view.js';
export type { ConsoleEntry } from '../sessions/console-entries.js';
export { readConsoleEntries } from '../sessions/console-entries.js';
export { formatDuration, parseDuration } from '../sessions/parse-duration.js';
export type { ConsoleOpenPlan } from '../sessions/plan-console-open.js';
export { planConsoleOpen } from '../sessions/plan-console-open.js';
export type { ConsoleStreamFacts, ConsoleStreamPlan } from '../sessions/plan-console-stream.js';
export { planConsoleStream } from '../sessions/plan-console-stream.js';
export type { LeftCopy } from '../sessions/plan-copy-sweep.js';
export { planCopySweep } from '../sessions/plan-copy-sweep.js';
export type {
  ReclaimPlan,
  ReclaimPolicy,
  ReclaimReason,
  SessionFacts,
  SessionView,
} from '../sessions/plan-reclaim.js';
export {
  checkReclaimPolicy,
  defaultReclaimPolicy,
  describeSession,
  hasBrokerConsole,
  planIdleWarning,
  planReclaim,
} from '../sessions/plan-reclaim.js';
export type {
  ClaimKey,
  ConsoleState,
  ReclaimPassInput,
  ReclaimPassPlan,
  SessionStep,
} from '../sessions/plan-reclaim-pass.js';
export {
  claimKindOf,
  notEntitledReclaimAt,
  notifiedMark,
  planReclaimPass,
  policyFor,
  releaseStalledAfterMs,
} from '../sessions/plan-reclaim-pass.js';
export type { RenewalPlan } from '../sessions/plan-renewal.js';
export { planRenewal } from '../sessions/plan-renewal.js';
export { readMinReady, validateMinReady } from '../spares/min-ready.js';
export type { SparesInput, SparesPlan } from '../spares/plan-spares.js';
export { planSpares } from '../spares/plan-spares.js';
export type { PoolStatus, PoolStatusInput, PoolStatusMember, SessionState } from '../spares/pool-status.js';
export { describePoolStatus } from '../spares/pool-status.js';
export type { LegacyState } from '../upgrade/classify-legacy.js';
export { classifyLegacy } from '../upgrade/classify-legacy.js';
export type { UsbDeviceId } from '../usb/device-id.js';
export { parseUsbDeviceId } from '../usb/device-id.js';
export type { UsbSecurityNotice } from '../usb/security-notice.js';
export { usbSecurityNotice } from '../usb/security-notice.js';
export {
  durationSchema,
  goldenNameSchema,
  identitySchema,
  isValidNamespace,
  isValidVmName,
  maxIdentityLength,
  maxNamespaceLength,
  maxPoolNameLength,
  maxSubdomainLength,
  memberNameSchema,
  namespaceSchema,
  parseOptions,
  poolNameSchema,
  validateGoldenName,
  validateIdentity,
  validateMemberName,
  validateNamespace,
  validatePoolName,
} from '../validate.js';
export type { PlanWaitlistInput, Waiter, WaitlistPlan } from '../waitlist/plan-waitlist.js';
export { planWaitlist, splitWaiterLeases } from '../waitlist/plan-waitlist.js';
export {
  enqueuedAtAnnotation,
  waiterLabel,
  waiterLeaseName,
  waiterLeaseNamePrefix,
  waiterLeaseSeconds,
  waitersSelector,
} from '../waitlist/waitlist-keys.js';
