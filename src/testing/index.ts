// The test bed: a real local control plane, the KubeVirt simulator, the node agent, a test clock and fixtures.
export {
  type ControlPlaneBinaries,
  controlPlaneCacheDir,
  type EnsureBinariesOptions,
  ensureControlPlaneBinaries,
  ensureKubevirtBinaries,
  type KubevirtBinaries,
  kubevirtCacheDir,
  localKubernetesVersion,
  localKubevirtVersion,
  selectedKubernetesVersion,
  selectedKubevirtVersion,
} from './binaries.js';
export { type FixtureSet, loadFixtures } from './fixtures.js';
export {
  createNamespaceClock,
  createSimulatedNode,
  installKubevirtCrds,
  type KubevirtSimulator,
  type KubevirtSimulatorCluster,
  type KubevirtSimulatorOptions,
  type NamespaceClock,
  type SimulatedNodeOptions,
  setPermittedHostDevices,
  setSimulatorPaused,
  simulatorAnnotations,
  startKubevirtSimulator,
} from './kubevirt/index.js';
export {
  isKubevirtNodePod,
  type RealKubevirt,
  type RealKubevirtCluster,
  type RealKubevirtOptions,
  startRealKubevirt,
} from './kubevirt-real/index.js';
export type { KubevirtWrite } from './kubevirt-writes.js';
export {
  connectLocalCluster,
  defaultKubevirtKind,
  type KubevirtKind,
  type LocalCluster,
  type LocalClusterAccess,
  type LocalClusterCertificates,
  type LocalClusterConnection,
  type StartLocalClusterOptions,
  startLocalCluster,
} from './local-cluster.js';
export {
  type NodeAgent,
  type NodeAgentCluster,
  type NodeAgentOptions,
  nodeAgentAnnotations,
  startNodeAgent,
} from './node-agent/index.js';
export {
  parseRdpGuestKnob,
  type RdpServer,
  type RdpServerOptions,
  type RdpServerSecurity,
  rdpGuestAnnotations,
  startRdpServer,
} from './rdp-guest.js';
export { createTestClock, type TestClock } from './test-clock.js';
export { type WaitForOptions, type WaitUntilOptions, waitFor } from './wait-for.js';
