export { installKubevirtCrds } from './crds.js';
export { simulatorAnnotations } from './fault-knobs.js';
export { createNamespaceClock, type NamespaceClock, setSimulatorPaused } from './namespace-clock.js';
export { createSimulatedNode, type SimulatedNodeOptions, setPermittedHostDevices } from './nodes.js';
export {
  type KubevirtSimulator,
  type KubevirtSimulatorCluster,
  type KubevirtSimulatorOptions,
  startKubevirtSimulator,
} from './simulator.js';
