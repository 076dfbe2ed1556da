// Plain Kubernetes objects as the SDK reads them, shared by every backend; KubeVirt's are in kubevirt-types.ts.

/** The fields of Kubernetes object metadata the SDK reads and writes. @category objects */
export interface ObjectMeta {
  name?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: Array<{
    apiVersion: string;
    kind: string;
    name: string;
    uid: string;
    controller?: boolean;
  }>;
}

/** A `coordination.k8s.io/v1` Lease as the SDK reads it (times are RFC 3339 strings). @category objects */
export interface LeaseObject {
  metadata: ObjectMeta;
  spec: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
  };
}

/** A Node as capacity admission reads it. @category objects */
export interface NodeObject {
  metadata: ObjectMeta;
  spec?: { unschedulable?: boolean };
  status?: { allocatable?: Record<string, string>; capacity?: Record<string, string> };
}
