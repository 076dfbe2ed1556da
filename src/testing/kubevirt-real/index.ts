export { isKubevirtNodePod } from './handler-stand-in.js';
export {
  type RealKubevirt,
  type RealKubevirtCluster,
  type RealKubevirtOptions,
  startRealKubevirt,
} from './real-kubevirt.js';
