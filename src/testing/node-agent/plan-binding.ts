import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { parseDeviceCount } from '../../capacity/parse-quantity.js';

/** Where an unscheduled Pod goes: a node, or nowhere and why (in the scheduler's words). */
export type BindingPlan = { kind: 'bind'; nodeName: string } | { kind: 'unschedulable'; message: string };

// The machine itself is the node's CPU and memory, so only extended resources are counted.
const uncountedResources = new Set(['cpu', 'memory', 'ephemeral-storage', 'pods']);

function isCounted(resource: string): boolean {
  return !uncountedResources.has(resource) && !resource.startsWith('hugepages-');
}

/** The extended resources a Pod asks for: requests, or limits where a request is missing (as for devices). */
export function extendedRequestsOf(pod: V1Pod): Map<string, number> {
  const wanted = new Map<string, number>();
  for (const container of pod.spec?.containers ?? []) {
    const amounts = { ...container.resources?.limits, ...container.resources?.requests };
    for (const [resource, quantity] of Object.entries(amounts)) {
      if (!isCounted(resource)) continue;
      wanted.set(resource, (wanted.get(resource) ?? 0) + parseDeviceCount(String(quantity)));
    }
  }
  return wanted;
}

function isReady(node: V1Node): boolean {
  return (
    node.status?.conditions?.some((condition) => condition.type === 'Ready' && condition.status === 'True') ??
    false
  );
}

function isFinished(pod: V1Pod): boolean {
  return pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';
}

/**
 * Picks a node for an unscheduled Pod as the scheduler would on this cluster: a Ready, schedulable node whose
 * labels match the Pod's `nodeSelector` and whose allocatable extended resources, less what the unfinished Pods
 * bound to it ask for, cover the Pod's requests. Among those it prefers the node with the fewest Pods, then by name.
 * `bound` holds every other Pod with its node (assumed bindings included).
 */
export function planBinding(
  pod: V1Pod,
  nodes: readonly V1Node[],
  bound: ReadonlyArray<{ pod: V1Pod; nodeName: string }>,
): BindingPlan {
  const wanted = extendedRequestsOf(pod);
  const selector = pod.spec?.nodeSelector ?? {};
  const reasons = new Map<string, number>();
  const note = (reason: string) => reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
  const candidates: Array<{ name: string; pods: number }> = [];
  for (const node of nodes) {
    const name = node.metadata?.name ?? '';
    if (!isReady(node)) {
      note('node(s) were not ready');
      continue;
    }
    if (node.spec?.unschedulable) {
      note('node(s) were unschedulable');
      continue;
    }
    const labels = node.metadata?.labels ?? {};
    if (Object.entries(selector).some(([key, value]) => labels[key] !== value)) {
      note("node(s) didn't match node selector");
      continue;
    }
    const onNode = bound.filter((entry) => entry.nodeName === name && !isFinished(entry.pod));
    const short = [...wanted].filter(([resource, count]) => {
      const allocatable = parseDeviceCount(node.status?.allocatable?.[resource]);
      const used = onNode.reduce((sum, entry) => sum + (extendedRequestsOf(entry.pod).get(resource) ?? 0), 0);
      return allocatable - used < count;
    });
    if (short.length > 0) {
      for (const [resource] of short) note(`Insufficient ${resource}`);
      continue;
    }
    candidates.push({ name, pods: onNode.length });
  }
  candidates.sort((left, right) => left.pods - right.pods || (left.name < right.name ? -1 : 1));
  const chosen = candidates[0];
  if (chosen) return { kind: 'bind', nodeName: chosen.name };
  const why = [...reasons].map(([reason, count]) => `${count} ${reason}`).join(', ');
  return { kind: 'unschedulable', message: `0/${nodes.length} nodes are available${why ? `: ${why}` : ''}.` };
}
