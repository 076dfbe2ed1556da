import type { AdmitPoolInput } from '../capacity/admit-pool.js';
import { isPodFinished } from '../ct/ct-member-facts.js';
import { type CtPoolSpec, extendedResourcesOf, isExtendedResource } from '../ct/ct-pool-spec.js';
import type { NodeObject, PodObject } from '../kube-objects.js';
import type { PermittedHostDevices, VirtualMachine, VirtualMachineInstance } from '../kubevirt-types.js';

function deviceEntries(resources: Record<string, number>) {
  return Object.entries(resources).flatMap(([resource, count]) =>
    Array.from({ length: count }, (_, index) => ({ name: `${resource}-${index + 1}`, deviceName: resource })),
  );
}

// a Pod holds its extended resources on its node as a VMI holds its devices, so admission counts it as one
function asInstance(pod: PodObject): VirtualMachineInstance {
  const limits = pod.spec?.containers.flatMap((container) =>
    Object.entries(container.resources?.limits ?? {}),
  );
  const resources = Object.fromEntries(
    (limits ?? [])
      .filter(([name]) => isExtendedResource(name))
      .map(([name, value]) => [name, Number(value) || 0]),
  );
  return {
    metadata: { name: pod.metadata.name ?? '', namespace: pod.metadata.namespace ?? '' },
    spec: { domain: { devices: { hostDevices: deviceEntries(resources) } } },
    status: {
      phase: isPodFinished(pod) ? 'Succeeded' : 'Running',
      ...(pod.spec?.nodeName ? { nodeName: pod.spec.nodeName } : {}),
    },
  };
}

/**
 * The capacity admission of `size` new members of a container pool, in the terms {@link admitPool} decides on:
 * each extended resource the spec asks for is a device a device plugin provides, the Pods that hold extended
 * resources count as instances on their nodes (or, unscheduled, wherever they land), beside the VMIs. Pure.
 *
 * @example
 * ```ts
 * const plan = admitPool(toCtAdmissionInput({ spec, size: 2, nodes, pods, vmis }));
 * ```
 * @category ct-pools
 */
export function toCtAdmissionInput(input: {
  spec: Pick<CtPoolSpec, 'name' | 'resources'>;
  size: number;
  nodes: readonly NodeObject[];
  pods: readonly PodObject[];
  vmis: readonly VirtualMachineInstance[];
}): AdmitPoolInput {
  const { spec, size, nodes, pods, vmis } = input;
  const needs = extendedResourcesOf(spec);
  const permittedHostDevices: PermittedHostDevices = {
    pciHostDevices: Object.keys(needs).map((resourceName) => ({
      resourceName,
      externalResourceProvider: true,
    })),
  };
  const golden: VirtualMachine = {
    metadata: { name: `container pool ${spec.name}` },
    spec: { template: { spec: { domain: { devices: { hostDevices: deviceEntries(needs) } } } } },
  };
  return { golden, size, permittedHostDevices, nodes, vmis: [...vmis, ...pods.map(asInstance)] };
}
