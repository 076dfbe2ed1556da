// The pure cores only: nothing here imports Node built-ins, client-node or any I/O, so a browser can load it.

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
  AccessDecision,
  AccessRefusal,
  AccessRequest,
  ConsoleAccessRequest,
  PoolAccessDecision,
  PoolAccessRequest,
  PoolEntitlement,
} from '../claims/access.js';
export {
  canInspect,
  canOpenConsole,
  canRelease,
  canStart,
  canUsePool,
  refusalError,
} from '../claims/access.js';
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
  isTakeUnderWay,
  leaseExpiresAt,
  readClaimMarks,
  shownHolder,
} from '../claims/claim-liveness.js';
export type { MemberClassification, MemberFacts, PoolMemberFacts } from '../claims/classify-member.js';
export { classifyMember, classifyPoolMember } from '../claims/classify-member.js';
export type { ClaimFollowUp, ClaimOrder, ClaimPlan, PlanClaimInput } from '../claims/plan-claim.js';
export { planClaim } from '../claims/plan-claim.js';
export type { PlanReleaseInput, ReleasePlan } from '../claims/plan-release.js';
export { planRelease } from '../claims/plan-release.js';
export { isReleasing, leavesDesktopDuringRelease } from '../claims/releasing-mark.js';
export type { Clock } from '../clock.js';
export type {
  ConnectFacts,
  ConnectProtocol,
  CtConnectFacts,
  TcpProbeResult,
  VmConnectFacts,
} from '../connect-facts.js';
export { rdpPort } from '../connect-facts.js';
export type { LaunchPlan } from '../connect-planner/launch-plan.js';
export { planLaunch } from '../connect-planner/launch-plan.js';
export type { ConnectOption, ConnectPlan, SkippedProtocol } from '../connect-planner/plan-connect.js';
export { formatHostPort, planConnect } from '../connect-planner/plan-connect.js';
export { phaseOfPod, powerOfPod, toCtMemberFacts } from '../ct/ct-member-facts.js';
export type { CtHomeVolume, CtPoolSpec, HomeOnRelease, ParseCtPoolSpecOptions } from '../ct/ct-pool-spec.js';
export { extendedResourcesOf, isExtendedResource, parseCtPoolSpec } from '../ct/ct-pool-spec.js';
export { toCtAdmissionInput } from '../ct-pools/ct-admission.js';
export type {
  CtMemberRead,
  CtPoolDeletePlan,
  CtReconcileInput,
  CtReconcilePlan,
  CtReconcileStep,
  CtSchedulePlan,
  CtScheduleRead,
} from '../ct-pools/plan-ct-reconcile.js';
export { planCtPoolDelete, planCtReconcile } from '../ct-pools/plan-ct-reconcile.js';
export type { CtRolloutInput, CtRolloutPlan } from '../ct-pools/plan-ct-rollout.js';
export { planCtRollout } from '../ct-pools/plan-ct-rollout.js';
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
  reclaimWarnedAnnotation,
  releaseCauseAnnotation,
  releasedSessionAnnotation,
  releasingAnnotation,
  sessionIdAnnotation,
  sourceAnnotation,
  spareAnnotation,
  stagedForAnnotation,
  stagedPoolLabel,
  uncheckedHolderGroups,
  waiterLabel,
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
export { leaseNameFor, memberFromLeaseName } from '../lease-name.js';
export type { UserLimitDecision, UserLimitInput } from '../limits/user-limit.js';
export {
  desktopsHeldBy,
  lowestLimit,
  planUserLimit,
  refusedByLimit,
  userLimitError,
} from '../limits/user-limit.js';
export { compareNatural, memberNameFor } from '../member-names.js';
export type { CountPoolMembersInput, PoolMemberCounts } from '../metrics/count-pool-members.js';
export { countPoolMembers } from '../metrics/count-pool-members.js';
export { formatDuration, parseDuration } from '../parse-duration.js';
export { parseRfc3339 } from '../parse-time.js';
export type { PoolRollout } from '../pool-rollout.js';
export { checkMaxUnavailable, defaultMaxUnavailable } from '../pool-rollout.js';
export type { PoolSchedule, ScheduleBuffer, SchedulePeriod, Weekday } from '../pool-schedule.js';
export { formatPeriod, parsePeriodFlag, parsePoolSchedule, weekdays } from '../pool-schedule.js';
export type { PoolSettings, PoolSettingsContext, ReclaimAction } from '../pool-settings.js';
export {
  checkPoolSettings,
  poolSettingsName,
  poolSettingsOf,
  reclaimActionOf,
  reclaimActions,
} from '../pool-settings.js';
export type { PoolPlans, PoolPlansFacts } from '../pool-status/describe-pool-plans.js';
export { describePoolPlans } from '../pool-status/describe-pool-plans.js';
export type {
  PoolStatus,
  PoolStatusInput,
  PoolStatusMember,
  SessionState,
} from '../pool-status/pool-status.js';
export { describePoolStatus } from '../pool-status/pool-status.js';
export type { PoolCreatePlan } from '../pools/plan-pool-create.js';
export { planPoolCreate } from '../pools/plan-pool-create.js';
export type { PoolDeletePlan } from '../pools/plan-pool-delete.js';
export { planPoolDelete } from '../pools/plan-pool-delete.js';
export type { ResizeInput, ResizePlan } from '../pools/plan-resize.js';
export { planMemberRemoval, planResize } from '../pools/plan-resize.js';
export { describePools, isFreeMember } from '../pools/pool-view.js';
export type { RolloutStatus } from '../rollouts/describe-rollout.js';
export { describeRollout } from '../rollouts/describe-rollout.js';
export type { RolloutInput, RolloutPlan } from '../rollouts/plan-rollout.js';
export { planRollout } from '../rollouts/plan-rollout.js';
export { isValidLabelValue, sanitizeLabelValue } from '../sanitize-label-value.js';
export type {
  ScheduleScalingInput,
  ScheduleScalingPlan,
  ScheduleTargets,
  ScheduleTargetsInput,
} from '../schedules/plan-schedule.js';
export {
  planScheduleScaling,
  planScheduleTargets,
  retryAt,
  scheduleLeadMs,
  scheduleSettleMs,
} from '../schedules/plan-schedule.js';
export { nextScheduleChange, periodAt, wallClockAt } from '../schedules/schedule-clock.js';
export type { ClaimKey } from '../sessions/claim-key.js';
export { claimKindOf } from '../sessions/claim-key.js';
export type { ConsoleEntry } from '../sessions/console-entries.js';
export { readConsoleEntries } from '../sessions/console-entries.js';
export type { ConsoleState } from '../sessions/console-marks.js';
export type { ConsoleOpenPlan } from '../sessions/plan-console-open.js';
export { planConsoleOpen } from '../sessions/plan-console-open.js';
export type { ConsoleStreamFacts, ConsoleStreamPlan } from '../sessions/plan-console-stream.js';
export { planConsoleStream } from '../sessions/plan-console-stream.js';
export type { LeftCopy } from '../sessions/plan-copy-sweep.js';
export { planCopySweep } from '../sessions/plan-copy-sweep.js';
export type {
  PendingReclaim,
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
  planReclaim,
  planReclaimWarning,
  reclaimWarningFor,
  warnedMark,
} from '../sessions/plan-reclaim.js';
export type { ReclaimPassInput, ReclaimPassPlan, SessionStep } from '../sessions/plan-reclaim-pass.js';
export {
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
export { heldForWaiters, planWaitlist, splitWaiterLeases } from '../waitlist/plan-waitlist.js';
export {
  enqueuedAtAnnotation,
  waiterLeaseName,
  waiterLeaseNamePrefix,
  waiterLeaseSeconds,
  waitersSelector,
} from '../waitlist/waitlist-keys.js';
