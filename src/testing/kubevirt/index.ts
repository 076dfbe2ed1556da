export { installKubevirtCrds } from './crds.js';
export { simulatorAnnotations } from './fault-knobs.js';
export { createSimulatedNode, type SimulatedNodeOptions, setPermittedHostDevices } from './nodes.js';
export {
  type KubevirtSimulator,
  type KubevirtSimulatorCluster,
  type KubevirtSimulatorOptions,
  startKubevirtSimulator,
} from './simulator.js';
