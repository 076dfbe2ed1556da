// Every public name of the SDK, listed; the pure cores are also reachable alone as @corral/vdi/core.

export type {
  AccessDecision,
  AccessRefusal,
  AccessRequest,
  ConsoleAccessRequest,
} from './access.js';
export { canInspect, canOpenConsole, canRelease, canStart, refusalError } from './access.js';
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
  leaseExpiresAt,
  readClaimMarks,
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
export { leaseNameFor, memberFromLeaseName } from './claims/lease-name.js';
export { parseRfc3339 } from './claims/parse-time.js';
export type { ClaimFollowUp, ClaimOrder, ClaimPlan, PlanClaimInput } from './claims/plan-claim.js';
export { planClaim } from './claims/plan-claim.js';
export type { PlanReleaseInput, ReleasePlan } from './claims/plan-release.js';
export { planRelease } from './claims/plan-release.js';
export { isReleasing } from './claims/releasing-mark.js';
export { isValidLabelValue, sanitizeLabelValue } from './claims/sanitize-label-value.js';
export type { Clock } from './clock.js';
export type { ConnectOptions, ConnectResult } from './connect-planner/connect.js';
export { connect } from './connect-planner/connect.js';
export type { LaunchPlan } from './connect-planner/launch-plan.js';
export { planLaunch } from './connect-planner/launch-plan.js';
export type {
  ConnectFacts,
  ConnectOption,
  ConnectPlan,
  ConnectProtocol,
  CtConnectFacts,
  SkippedProtocol,
  TcpProbeResult,
  VmConnectFacts,
} from './connect-planner/plan-connect.js';
export { formatHostPort, planConnect, rdpPort } from './connect-planner/plan-connect.js';
export type { ProbeTcpOptions } from './connect-planner/probe-tcp.js';
export { defaultProbeTimeoutMs, probeTcp } from './connect-planner/probe-tcp.js';
export type { EntitlementRequest, PoolClaimLimits, VdiContext } from './context.js';
export { backendFor } from './context.js';
export { toCtAdmissionInput } from './ct/ct-admission.js';
export { createCtBackend } from './ct/ct-backend.js';
export { kindLabel, specConfigMapName } from './ct/ct-keys.js';
export { toCtMemberFacts } from './ct/ct-member-facts.js';
export type {
  ApplyCtPoolOptions,
  ApplyCtPoolResult,
  CtPoolMemberView,
  CtPoolView,
  DeleteCtPoolOptions,
  DeleteCtPoolResult,
} from './ct/ct-pool-service.js';
export { applyCtPool, deleteCtPool, getCtPool, listCtPools } from './ct/ct-pool-service.js';
export type { CtHomeVolume, CtPoolSpec, HomeOnRelease, ParseCtPoolSpecOptions } from './ct/ct-pool-spec.js';
export { extendedResourcesOf, isExtendedResource, parseCtPoolSpec } from './ct/ct-pool-spec.js';
export type { OpenTerminalOptions } from './ct/open-terminal.js';
export { openTerminal } from './ct/open-terminal.js';
export type {
  CtMemberRead,
  CtPoolDeletePlan,
  CtReconcileInput,
  CtReconcilePlan,
  CtReconcileStep,
} from './ct/plan-ct-reconcile.js';
export { planCtPoolDelete, planCtReconcile } from './ct/plan-ct-reconcile.js';
export type { ReconcileCtPoolOptions, ReconcileCtPoolResult } from './ct/reconcile-ct-pool.js';
export { reconcileCtPool } from './ct/reconcile-ct-pool.js';
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
export { defaultDesktopKind } from './desktop-backend.js';
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
  rdpTokensAnnotation,
  reclaimNotifiedAnnotation,
  releasedSessionAnnotation,
  releasingAnnotation,
  sessionIdAnnotation,
  sourceAnnotation,
  spareAnnotation,
  uncheckedHolderGroups,
} from './keys.js';
export type { DeletePreconditions, KubeRequestObserver, ListOptions, PowerChange } from './kube/cluster.js';
export { KubeCluster } from './kube/cluster.js';
export type {
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
export { compareNatural, memberNameFor } from './member-names.js';
export type { BrokerMetrics, ReleaseReason } from './metrics/broker-metrics.js';
export type { CountPoolMembersInput, PoolMemberCounts } from './metrics/count-pool-members.js';
export { countPoolMembers } from './metrics/count-pool-members.js';
export type { PoolCreatePlan } from './pools/plan-pool-create.js';
export { planPoolCreate } from './pools/plan-pool-create.js';
export type { PoolDeletePlan } from './pools/plan-pool-delete.js';
export { planPoolDelete } from './pools/plan-pool-delete.js';
export type { ResizeInput, ResizePlan } from './pools/plan-resize.js';
export { planMemberRemoval, planResize } from './pools/plan-resize.js';
export type { MemberOutcome } from './pools/pool-member-factory.js';
export { defaultCloneConcurrency, defaultCloneTimeoutMs } from './pools/pool-member-factory.js';
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
export type { PoolSettings, PoolSettingsContext, ReclaimAction } from './pools/pool-settings.js';
export {
  checkPoolSettings,
  poolSettingsName,
  poolSettingsOf,
  reclaimActionOf,
  reclaimActions,
} from './pools/pool-settings.js';
export type { MemberState, PoolMemberView, PoolView } from './pools/pool-view.js';
export { describePools, isFreeMember } from './pools/pool-view.js';
export type { SessionEnds } from './session-ends/session-ends.js';
export {
  createSessionEnds,
  sessionEndsLabel,
  sessionEndsLeaseName,
  sessionEndsLoginAnnotation,
  sessionsEndedAtAnnotation,
} from './session-ends/session-ends.js';
export type { ConsoleEntry } from './sessions/console-entries.js';
export { readConsoleEntries } from './sessions/console-entries.js';
export { formatDuration, parseDuration } from './sessions/parse-duration.js';
export type { ConsoleOpenPlan } from './sessions/plan-console-open.js';
export { planConsoleOpen } from './sessions/plan-console-open.js';
export type { ConsoleStreamFacts, ConsoleStreamPlan } from './sessions/plan-console-stream.js';
export { planConsoleStream } from './sessions/plan-console-stream.js';
export type { LeftCopy } from './sessions/plan-copy-sweep.js';
export { planCopySweep } from './sessions/plan-copy-sweep.js';
export type {
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
  planIdleWarning,
  planReclaim,
} from './sessions/plan-reclaim.js';
export type {
  ClaimKey,
  ConsoleState,
  ReclaimPassInput,
  ReclaimPassPlan,
  SessionStep,
} from './sessions/plan-reclaim-pass.js';
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
export type { PoolStatus, PoolStatusInput, PoolStatusMember, SessionState } from './spares/pool-status.js';
export { describePoolStatus } from './spares/pool-status.js';
export type { PoolStatusOptions } from './spares/read-pool-status.js';
export { readPoolStatus } from './spares/read-pool-status.js';
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
export type { RecreateMemberOptions } from './vm/recreate-vm-member.js';
export { recreateMember } from './vm/recreate-vm-member.js';
export { createVmBackend } from './vm/vm-backend.js';
export type { WaiterOptions, WaitingClaimOptions, WaitPosition } from './waitlist/claim-or-wait.js';
export { maxWaitTimeoutMs } from './waitlist/claim-or-wait.js';
export type { PlanWaitlistInput, Waiter, WaitlistPlan } from './waitlist/plan-waitlist.js';
export { planWaitlist, splitWaiterLeases } from './waitlist/plan-waitlist.js';
export {
  enqueuedAtAnnotation,
  waiterLabel,
  waiterLeaseName,
  waiterLeaseNamePrefix,
  waiterLeaseSeconds,
  waiterRenewMs,
  waitersSelector,
} from './waitlist/waitlist-keys.js';
export type { WaitlistService } from './waitlist/waitlist-service.js';
