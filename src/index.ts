// Every public name of the SDK, listed; the pure cores are also reachable alone as @corral/vdi/core.

export type { AuditAction, AuditRecord, AuditSink } from './audit.js';
export { MemoryAuditSink } from './audit.js';
export type {
  AuthorizeConsoleOptions,
  Broker,
  BrokerLeaderElection,
  BrokerLogFields,
  BrokerLogger,
  BrokerOptions,
  CtReconcilePassResult,
  FetchInfo,
  OpenConsole,
  ReadableAuditSink,
  SparesPassResult,
} from './broker/broker.js';
export { createBroker } from './broker/broker.js';
export type { BrokerSettings } from './broker/broker-settings.js';
export { brokerEnvironmentVariables, brokerOptionsFromEnv } from './broker/broker-settings.js';
export { createConsoleInputDetector } from './broker/console-input.js';
export type { RelayStats } from './broker/console-relay.js';
export { consoleCloseCodes } from './broker/console-relay.js';
export type {
  AuthGatewayIdentityOptions,
  CallerIdentity,
  Identification,
  IdentityProvider,
  IdentityRequest,
  TailscaleIdentityOptions,
} from './broker/identity.js';
export { authGatewayIdentity, tailscaleIdentity, tailscaleLoginHeader } from './broker/identity.js';
export type { OidcSignIn, OidcSignInOptions } from './broker/oidc-sign-in.js';
export { createOidcSignIn } from './broker/oidc-sign-in.js';
export { buildOpenApiDocument } from './broker/openapi.js';
export type { RdCleanPathError, RdCleanPathPdu } from './broker/rdcleanpath.js';
export {
  decodeRdCleanPathPdu,
  encodeRdCleanPathPdu,
  measureRdCleanPathPdu,
  RdCleanPathFormatError,
  rdCleanPathErrorPdu,
  rdCleanPathVersion,
} from './broker/rdcleanpath.js';
export type { RfbInputParser, RfbInputScan } from './broker/rfb-input.js';
export { createRfbInputParser } from './broker/rfb-input.js';
export type { BrokerServer, ServeBrokerOptions, ShutdownHook } from './broker/serve.js';
export { serveBroker } from './broker/serve.js';
export type { AdmissionPlan, AdmitPoolInput, CapacityRow, UnscheduledDemand } from './capacity/admit-pool.js';
export { admitPool } from './capacity/admit-pool.js';
export type { PlanCapacityOptions } from './capacity/capacity-service.js';
export { planCapacity } from './capacity/capacity-service.js';
export type { DeviceKind, DeviceNeed, UncountedDevice } from './capacity/device-needs.js';
export { classifyDevice, readDeviceNeeds, uncountedDevicesOf } from './capacity/device-needs.js';
export { parseDeviceCount } from './capacity/parse-quantity.js';
export type { ClaimLimitInput, ClaimQueue, ClaimQueueInput } from './claim-policy.js';
export type {
  AccessDecision,
  AccessRefusal,
  AccessRequest,
  ConsoleAccessRequest,
} from './claims/access.js';
export { canInspect, canOpenConsole, canRelease, canStart, refusalError } from './claims/access.js';
export type {
  ClaimFacts,
  ClaimLiveness,
  ClaimMarks,
  LeaseLiveness,
  MemberClaimFacts,
} from './claims/claim-liveness.js';
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
} from './claims/claim-liveness.js';
export type {
  ClaimOptions,
  ClaimResult,
  ClaimsService,
  ListDesktopsOptions,
  MemberOptions,
  ReleaseOptions,
  ReleaseResult,
} from './claims/claims-service.js';
export type { MemberClassification, MemberFacts, PoolMemberFacts } from './claims/classify-member.js';
export { classifyMember, classifyPoolMember } from './claims/classify-member.js';
export type { DesktopView } from './claims/desktop-view.js';
export type { ClaimFollowUp, ClaimOrder, ClaimPlan, PlanClaimInput } from './claims/plan-claim.js';
export { planClaim } from './claims/plan-claim.js';
export type { PlanReleaseInput, ReleasePlan } from './claims/plan-release.js';
export { planRelease } from './claims/plan-release.js';
export { isReleasing, leavesDesktopDuringRelease } from './claims/releasing-mark.js';
export type { Clock } from './clock.js';
export type {
  ConnectFacts,
  ConnectProtocol,
  CtConnectFacts,
  TcpProbeResult,
  VmConnectFacts,
} from './connect-facts.js';
export { rdpPort } from './connect-facts.js';
export type { ConnectOptions, ConnectResult } from './connect-planner/connect.js';
export { connect } from './connect-planner/connect.js';
export type { LaunchPlan } from './connect-planner/launch-plan.js';
export { planLaunch } from './connect-planner/launch-plan.js';
export type { ConnectOption, ConnectPlan, SkippedProtocol } from './connect-planner/plan-connect.js';
export { formatHostPort, planConnect } from './connect-planner/plan-connect.js';
export type {
  ClaimPolicy,
  EntitlementRequest,
  PoolClaimLimits,
  PoolFacts,
  PoolKind,
  VdiContext,
} from './context.js';
export { backendFor, poolKindFor } from './context.js';
export { createCtBackend } from './ct/ct-backend.js';
export { kindLabel, specConfigMapName } from './ct/ct-keys.js';
export { toCtMemberFacts } from './ct/ct-member-facts.js';
export type { CtHomeVolume, CtPoolSpec, HomeOnRelease, ParseCtPoolSpecOptions } from './ct/ct-pool-spec.js';
export { extendedResourcesOf, isExtendedResource, parseCtPoolSpec } from './ct/ct-pool-spec.js';
export { toCtAdmissionInput } from './ct-pools/ct-admission.js';
export type {
  ApplyCtPoolOptions,
  ApplyCtPoolResult,
  CtPoolMemberView,
  CtPoolView,
  DeleteCtPoolOptions,
  DeleteCtPoolResult,
} from './ct-pools/ct-pool-service.js';
export { applyCtPool, deleteCtPool, getCtPool, listCtPools } from './ct-pools/ct-pool-service.js';
export type { OpenTerminalOptions } from './ct-pools/open-terminal.js';
export { openTerminal } from './ct-pools/open-terminal.js';
export type {
  CtMemberRead,
  CtPoolDeletePlan,
  CtReconcileInput,
  CtReconcilePlan,
  CtReconcileStep,
  CtSchedulePlan,
  CtScheduleRead,
} from './ct-pools/plan-ct-reconcile.js';
export { planCtPoolDelete, planCtReconcile } from './ct-pools/plan-ct-reconcile.js';
export type { CtRolloutInput, CtRolloutPlan } from './ct-pools/plan-ct-rollout.js';
export { planCtRollout } from './ct-pools/plan-ct-rollout.js';
export type {
  CtRolloutResult,
  ReconcileCtPoolOptions,
  ReconcileCtPoolResult,
} from './ct-pools/reconcile-ct-pool.js';
export { reconcileCtPool } from './ct-pools/reconcile-ct-pool.js';
export type {
  ClaimToPresent,
  ConsoleStream,
  DesktopBackend,
  GatherConnectFactsOptions,
  MemberConsole,
  MemberDevice,
  MemberFacts as BackendMemberFacts,
  MemberFollower,
  MemberPower,
  MemberRef,
  MembersByHolderPage,
  MembersPage,
  OpenConsoleStreamOptions,
  PoolMemberRef,
  PowerChangeResult,
  PresentedClaim,
  PresentOutcome,
  ReadMemberOptions,
  ResetHow,
  ResetMemberOptions,
  StartFrom,
  UsbSupport,
} from './desktop-backend.js';
export { defaultCloneTimeoutMs, defaultDesktopKind } from './desktop-backend.js';
export type { HolderRecord } from './entitlements/holder-entitlement.js';
export {
  formatHolderGroups,
  judgeHolderEntitlement,
  maxHolderGroupsLength,
  readHolderRecord,
} from './entitlements/holder-entitlement.js';
export type { VdiErrorCode, VdiErrorOptions } from './errors.js';
export { httpStatusByCode, isVdiError, VdiError } from './errors.js';
export type { VdiEvents } from './events.js';
export type { DesktopKind, DesktopRef, PoolRef } from './ids.js';
export { formatDesktopId, formatPoolId, parseDesktopId, parsePoolId } from './ids.js';
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
  rdpTokensAnnotation,
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
} from './keys.js';
export type {
  DeletePreconditions,
  KubeRequestObserver,
  ListOptions,
  PowerChange,
  SharedReads,
} from './kube/cluster.js';
export { KubeCluster } from './kube/cluster.js';
export type {
  CachedObjects,
  CacheSources,
  NamespaceCaches,
  StartCachesOptions,
  WatchFrom,
} from './kube/cluster-caches.js';
export type { PodExecTarget, TerminalStream } from './kube/pod-exec.js';
export {
  type ObjectStore,
  type ReadModifyWriteOptions,
  type ReadModifyWriteResult,
  readModifyWrite,
} from './kube/read-modify-write.js';
export type {
  DeleteOptions,
  DiscoveredVersion,
  KubeObject,
  ListPage,
  MergePatch,
  PageRequest,
  PatchOptions,
  ResourceKind,
  ResourceTransport,
  Versioned,
} from './kube/resource.js';
export { ResourceClient } from './kube/resource.js';
export {
  cloneKind,
  configMapKind,
  type KubeVirtConfiguration,
  kubeVirtKind,
  leaseKind,
  nodeKind,
  podKind,
  pvcKind,
  serviceKind,
  snapshotKind,
  vmiKind,
  vmKind,
} from './kube/resource-kinds.js';
export type { RetryOptions, Sleep } from './kube/retry.js';
export type {
  CacheChange,
  CachedObject,
  ListedObjects,
  WatchCacheOptions,
  WatchCacheSource,
} from './kube/watch-cache.js';
export { WatchCache } from './kube/watch-cache.js';
export type { OpenWatch, WatchEvent } from './kube/watch-stream.js';
export type {
  ConfigMapObject,
  ContainerObject,
  LeaseObject,
  NodeObject,
  ObjectMeta,
  PersistentVolumeClaimObject,
  PodObject,
  ServiceObject,
} from './kube-objects.js';
export type {
  PermittedHostDevice,
  PermittedHostDevices,
  RunStrategy,
  VirtualMachine,
  VirtualMachineClone,
  VirtualMachineInstance,
  VirtualMachineSnapshot,
  VmDeviceRequest,
  VmDevices,
} from './kubevirt-types.js';
export type { RunLaunchPlanOptions } from './launch/run-launch-plan.js';
export { runLaunchPlan } from './launch/run-launch-plan.js';
export type { OutputStream, ProcessExit } from './launch/run-process.js';
export type { LeaderElector, LeaderElectorOptions } from './leader/leader-elector.js';
export { createLeaderElector, defaultLeaderLeaseName } from './leader/leader-elector.js';
export type {
  LeaderElectionTimings,
  LeaderObservation,
  LeaderStep,
  LeaderStepInput,
} from './leader/plan-leader-election.js';
export {
  checkLeaderElectionTimings,
  defaultLeaderElectionTimings,
  isLeadershipHeld,
  observeLeaderLease,
  planLeaderRelease,
  planLeaderStep,
} from './leader/plan-leader-election.js';
export { leaseNameFor, memberFromLeaseName } from './lease-name.js';
export { compareNatural, memberNameFor } from './member-names.js';
export type { BrokerMetrics, ReleaseReason } from './metrics/broker-metrics.js';
export type { CountPoolMembersInput, PoolMemberCounts } from './metrics/count-pool-members.js';
export { countPoolMembers } from './metrics/count-pool-members.js';
export { formatDuration, parseDuration } from './parse-duration.js';
export { parseRfc3339 } from './parse-time.js';
export type { PoolRollout } from './pool-rollout.js';
export { checkMaxUnavailable, defaultMaxUnavailable } from './pool-rollout.js';
export type { PoolSchedule, ScheduleBuffer, SchedulePeriod, Weekday } from './pool-schedule.js';
export { formatPeriod, parsePeriodFlag, parsePoolSchedule, weekdays } from './pool-schedule.js';
export type { PoolSettings, PoolSettingsContext, ReclaimAction, ScheduleFailure } from './pool-settings.js';
export {
  checkPoolSettings,
  poolSettingsName,
  poolSettingsOf,
  reclaimActionOf,
  reclaimActions,
} from './pool-settings.js';
export type { PoolPlans, PoolPlansFacts } from './pool-status/describe-pool-plans.js';
export { describePoolPlans } from './pool-status/describe-pool-plans.js';
export type {
  PoolStatus,
  PoolStatusInput,
  PoolStatusMember,
  SessionState,
} from './pool-status/pool-status.js';
export { describePoolStatus } from './pool-status/pool-status.js';
export type { PlannedPool } from './pool-status/read-pool-plans.js';
export { readPoolPlans } from './pool-status/read-pool-plans.js';
export type { PoolStatusOptions } from './pool-status/read-pool-status.js';
export { readPoolStatus } from './pool-status/read-pool-status.js';
export type { PoolCreatePlan } from './pools/plan-pool-create.js';
export { planPoolCreate } from './pools/plan-pool-create.js';
export type { PoolDeletePlan } from './pools/plan-pool-delete.js';
export { planPoolDelete } from './pools/plan-pool-delete.js';
export type { ResizeInput, ResizePlan } from './pools/plan-resize.js';
export { planMemberRemoval, planResize } from './pools/plan-resize.js';
export type {
  MakeMembersInput,
  MemberMakingPoolKind,
  MemberOutcome,
  MemberSource,
  PoolMemberFactory,
} from './pools/pool-member-factory.js';
export { defaultCloneConcurrency } from './pools/pool-member-factory.js';
export type {
  CreatePoolOptions,
  CreatePoolResult,
  DeletePoolOptions,
  DeletePoolResult,
  ListPoolsOptions,
  PoolOptions,
  ResizePoolOptions,
  ResizePoolResult,
  SetPoolOptions,
  SetPoolResult,
  SetPoolSettingsOptions,
  SetPoolSettingsResult,
} from './pools/pool-service.js';
export {
  createPool,
  defaultPoolActor,
  deletePool,
  getPool,
  listPools,
  maxPoolSize,
  resizePool,
  setPool,
  setPoolSettings,
} from './pools/pool-service.js';
export type { MemberState, PoolMemberView, PoolView } from './pools/pool-view.js';
export { describePools, isFreeMember } from './pools/pool-view.js';
export type { ProbeTcpOptions } from './probe-tcp.js';
export { defaultProbeTimeoutMs, probeTcp } from './probe-tcp.js';
export type { RolloutStatus } from './rollouts/describe-rollout.js';
export { describeRollout } from './rollouts/describe-rollout.js';
export type {
  KeepPoolRolloutOptions,
  KeepRolloutOutcome,
  KeepRolloutResult,
  KeepRolloutsPassResult,
} from './rollouts/keep-rollout.js';
export { keepPoolRollout, keepRollouts } from './rollouts/keep-rollout.js';
export type { RolloutInput, RolloutPlan } from './rollouts/plan-rollout.js';
export { planRollout } from './rollouts/plan-rollout.js';
export type {
  SetPoolRolloutPausedOptions,
  StartPoolRolloutOptions,
  StartPoolRolloutResult,
} from './rollouts/start-rollout.js';
export { setPoolRolloutPaused, startPoolRollout } from './rollouts/start-rollout.js';
export { isValidLabelValue, sanitizeLabelValue } from './sanitize-label-value.js';
export type { ScheduleStatus, ScheduleStatusInput } from './schedules/describe-schedule.js';
export { describeSchedule } from './schedules/describe-schedule.js';
export type {
  KeepPoolScheduleOptions,
  KeepScheduleOutcome,
  KeepScheduleResult,
} from './schedules/keep-schedule.js';
export { keepPoolSchedule, scheduleActor } from './schedules/keep-schedule.js';
export type { KeepSchedulesPassResult } from './schedules/keep-schedules.js';
export { keepSchedules } from './schedules/keep-schedules.js';
export type {
  ScheduleScalingInput,
  ScheduleScalingPlan,
  ScheduleTargets,
  ScheduleTargetsInput,
} from './schedules/plan-schedule.js';
export {
  planScheduleScaling,
  planScheduleTargets,
  retryAt,
  scheduleLeadMs,
  scheduleSettleMs,
} from './schedules/plan-schedule.js';
export { nextScheduleChange, periodAt, wallClockAt } from './schedules/schedule-clock.js';
export type { SetPoolScheduleOptions, SetPoolScheduleResult } from './schedules/set-pool-schedule.js';
export { setPoolSchedule } from './schedules/set-pool-schedule.js';
export type { SessionEnds } from './session-ends/session-ends.js';
export {
  createSessionEnds,
  sessionEndsLabel,
  sessionEndsLeaseName,
  sessionEndsLoginAnnotation,
  sessionsEndedAtAnnotation,
} from './session-ends/session-ends.js';
export type { ClaimKey } from './sessions/claim-key.js';
export type { ConsoleEntry } from './sessions/console-entries.js';
export { readConsoleEntries } from './sessions/console-entries.js';
export type { ConsoleState } from './sessions/console-marks.js';
export type { ConsoleOpenPlan } from './sessions/plan-console-open.js';
export { planConsoleOpen } from './sessions/plan-console-open.js';
export type { ConsoleStreamFacts, ConsoleStreamPlan } from './sessions/plan-console-stream.js';
export { planConsoleStream } from './sessions/plan-console-stream.js';
export type { LeftCopy } from './sessions/plan-copy-sweep.js';
export { planCopySweep } from './sessions/plan-copy-sweep.js';
export type {
  PendingReclaim,
  ReclaimPlan,
  ReclaimPolicy,
  ReclaimReason,
  SessionFacts,
  SessionView,
} from './sessions/plan-reclaim.js';
export {
  checkReclaimPolicy,
  defaultReclaimPolicy,
  describeSession,
  hasBrokerConsole,
  planReclaim,
  planReclaimWarning,
  reclaimWarningFor,
  warnedMark,
} from './sessions/plan-reclaim.js';
export type { ReclaimPassInput, ReclaimPassPlan, SessionStep } from './sessions/plan-reclaim-pass.js';
export {
  notEntitledReclaimAt,
  notifiedMark,
  planReclaimPass,
  policyFor,
  releaseStalledAfterMs,
} from './sessions/plan-reclaim-pass.js';
export type { RenewalPlan } from './sessions/plan-renewal.js';
export { planRenewal } from './sessions/plan-renewal.js';
export type {
  ConsoleEnd,
  ConsoleHandle,
  ConsoleKind,
  DesktopSession,
  EndConsolesOptions,
  OpenConsoleOptions,
  SessionEngine,
  SessionEngineOptions,
  SessionPassResult,
} from './sessions/session-engine.js';
export { createSessionEngine, reclaimActor } from './sessions/session-engine.js';
export type { KeepSparesPassResult, KeepSparesResult } from './spares/keep-spares.js';
export { keepPoolSpares, keepSpares } from './spares/keep-spares.js';
export { readMinReady, validateMinReady } from './spares/min-ready.js';
export type { SparesInput, SparesPlan } from './spares/plan-spares.js';
export { planSpares } from './spares/plan-spares.js';
export type { LegacyState } from './upgrade/classify-legacy.js';
export { classifyLegacy } from './upgrade/classify-legacy.js';
export type { UsbDeviceId } from './usb/device-id.js';
export { parseUsbDeviceId } from './usb/device-id.js';
export type { ListUsbDevicesOptions } from './usb/list-usb-devices.js';
export { listUsbDevices } from './usb/list-usb-devices.js';
export type { UsbDevice } from './usb/parse-usb-device.js';
export type { RedirectUsbOptions, RedirectUsbResult } from './usb/redirect-usb.js';
export { redirectUsb } from './usb/redirect-usb.js';
export type { UsbSecurityNotice } from './usb/security-notice.js';
export { usbSecurityNotice } from './usb/security-notice.js';
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
} from './validate.js';
export type { Vdi, VdiOptions } from './vdi.js';
export { createVdi, defaultNamespace, systemClock } from './vdi.js';
export { createVmBackend } from './vm/vm-backend.js';
export type { RecreateMemberOptions } from './vm-pools/recreate-member.js';
export { recreateMember } from './vm-pools/recreate-member.js';
export type { WaiterOptions, WaitingClaimOptions, WaitPosition } from './waitlist/claim-or-wait.js';
export { maxWaitTimeoutMs } from './waitlist/claim-or-wait.js';
export type { PlanWaitlistInput, Waiter, WaitlistPlan } from './waitlist/plan-waitlist.js';
export { heldForWaiters, planWaitlist, splitWaiterLeases } from './waitlist/plan-waitlist.js';
export {
  enqueuedAtAnnotation,
  waiterLeaseName,
  waiterLeaseNamePrefix,
  waiterLeaseSeconds,
  waiterRenewMs,
  waitersSelector,
} from './waitlist/waitlist-keys.js';
export type { WaitlistService } from './waitlist/waitlist-service.js';
