// The test bed: a real local control plane, the KubeVirt simulator, a test clock and fixtures.
export {
  type ControlPlaneBinaries,
  controlPlaneCacheDir,
  type EnsureBinariesOptions,
  ensureControlPlaneBinaries,
  localKubernetesVersion,
} from './binaries.js';
export { type FixtureSet, loadFixtures } from './fixtures.js';
export {
  createSimulatedNode,
  installKubevirtCrds,
  type KubevirtSimulator,
  type KubevirtSimulatorCluster,
  type KubevirtSimulatorOptions,
  type SimulatedNodeOptions,
  setPermittedHostDevices,
  simulatorAnnotations,
  startKubevirtSimulator,
} from './kubevirt/index.js';
export {
  type LocalCluster,
  type LocalClusterCertificates,
  type StartLocalClusterOptions,
  startLocalCluster,
} from './local-cluster.js';
export { createTestClock, type TestClock } from './test-clock.js';
