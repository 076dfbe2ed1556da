export {
  type NodeAgent,
  type NodeAgentCluster,
  type NodeAgentOptions,
  startNodeAgent,
} from './node-agent.js';
export { nodeAgentAnnotations } from './pod-knobs.js';
