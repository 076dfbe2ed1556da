// Plain Kubernetes objects as the SDK reads them, shared by every backend; KubeVirt's are in kubevirt-types.ts.

/** The fields of Kubernetes object metadata the SDK reads and writes. @category objects */
export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  /** What must let go of the object before a delete removes it (KubeVirt's controller keeps one on every VM). */
  finalizers?: string[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: Array<{
    apiVersion: string;
    kind: string;
    name: string;
    uid: string;
    controller?: boolean;
    blockOwnerDeletion?: boolean;
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

/** A ConfigMap as the SDK reads it. @category objects */
export interface ConfigMapObject {
  metadata: ObjectMeta;
  data?: Record<string, string>;
}

/** One container of a Pod, in the fields the SDK writes and reads. @category objects */
export interface ContainerObject {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  env?: Array<{ name: string; value: string }>;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  volumeMounts?: Array<{ name: string; mountPath: string }>;
  stdin?: boolean;
  tty?: boolean;
}

/** A Pod as the SDK reads it. @category objects */
export interface PodObject {
  metadata: ObjectMeta;
  spec?: {
    containers: ContainerObject[];
    hostname?: string;
    subdomain?: string;
    nodeName?: string;
    restartPolicy?: string;
    volumes?: Array<{ name: string; persistentVolumeClaim?: { claimName: string } }>;
  };
  status?: {
    phase?: string;
    podIP?: string;
    reason?: string;
    message?: string;
    conditions?: Array<{ type: string; status: string }>;
    containerStatuses?: Array<{
      name: string;
      ready?: boolean;
      restartCount?: number;
      state?: { waiting?: { reason?: string }; running?: object; terminated?: { exitCode?: number } };
    }>;
  };
}

/** A Service as the SDK reads it. @category objects */
export interface ServiceObject {
  metadata: ObjectMeta;
  spec?: {
    clusterIP?: string;
    selector?: Record<string, string>;
    ports?: Array<{ name?: string; port: number }>;
  };
}

/** A PersistentVolumeClaim as the SDK reads it. @category objects */
export interface PersistentVolumeClaimObject {
  metadata: ObjectMeta;
  spec?: {
    accessModes?: string[];
    storageClassName?: string;
    resources?: { requests?: Record<string, string> };
  };
  status?: { phase?: string };
}
