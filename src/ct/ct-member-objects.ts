import { ephemeralLabel, poolLabel, sourceAnnotation } from '../keys.js';
import type {
  ConfigMapObject,
  ObjectMeta,
  PersistentVolumeClaimObject,
  PodObject,
  ServiceObject,
} from '../kube-objects.js';
import { ctMemberLabel, desktopContainer, homeClaimPrefix, homeMountPath, kindLabel } from './ct-keys.js';
import { type CtPoolSpec, isExtendedResource } from './ct-pool-spec.js';

/** What every object of a member is made from: the pool's spec, the member's name and the spec's ConfigMap. */
export interface CtMemberInput {
  spec: CtPoolSpec;
  member: string;
  /** The member's current home volume claim, when the spec has a home volume. */
  homeClaim?: string | undefined;
  /** The pool's ConfigMap as read: every member object names it as owner, so deleting the pool cascades. */
  owner: ConfigMapObject;
}

function metadataOf(
  { spec, member, owner }: CtMemberInput,
  name: { name: string } | { generateName: string },
): ObjectMeta {
  return {
    ...name,
    labels: {
      ...spec.labels,
      [poolLabel]: spec.name,
      [kindLabel]: 'ct',
      [ctMemberLabel]: member,
      [ephemeralLabel]: 'true',
    },
    ownerReferences: [
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        name: owner.metadata.name ?? '',
        uid: owner.metadata.uid ?? '',
        blockOwnerDeletion: true,
      },
    ],
  };
}

/**
 * The member's Pod: one container `desktop` running the spec's image with stdin and a TTY open (a shell
 * entrypoint then waits instead of exiting), `restartPolicy: Never` so a container that ends shows as finished
 * and is replaced from the image, and the home volume at `/home` when the spec has one. Pure.
 */
export function buildCtPod(input: CtMemberInput): PodObject {
  const { spec, member } = input;
  const meta = metadataOf(input, { name: member });
  const extended = Object.entries(spec.resources.limits).filter(([name]) => isExtendedResource(name));
  const requests = { ...spec.resources.requests, ...Object.fromEntries(extended) };
  const resources = {
    ...(Object.keys(requests).length > 0 ? { requests } : {}),
    ...(Object.keys(spec.resources.limits).length > 0 ? { limits: spec.resources.limits } : {}),
  };
  const env = Object.entries(spec.env).map(([name, value]) => ({ name, value }));
  return {
    metadata: { ...meta, annotations: { [sourceAnnotation]: spec.image } },
    spec: {
      hostname: member,
      subdomain: member,
      restartPolicy: 'Never',
      containers: [
        {
          name: desktopContainer,
          image: spec.image,
          ...(spec.command ? { command: spec.command } : {}),
          ...(spec.args ? { args: spec.args } : {}),
          ...(env.length > 0 ? { env } : {}),
          ...(Object.keys(resources).length > 0 ? { resources } : {}),
          ...(spec.home && input.homeClaim
            ? { volumeMounts: [{ name: 'home', mountPath: homeMountPath }] }
            : {}),
          stdin: true,
          tty: true,
        },
      ],
      ...(spec.home && input.homeClaim
        ? { volumes: [{ name: 'home', persistentVolumeClaim: { claimName: input.homeClaim } }] }
        : {}),
    },
  };
}

/** The member's headless Service: a stable DNS name `<member>.<namespace>.svc` for its Pod. Pure. */
export function buildCtService(input: CtMemberInput): ServiceObject {
  return {
    metadata: metadataOf(input, { name: input.member }),
    spec: { clusterIP: 'None', selector: { [ctMemberLabel]: input.member, [kindLabel]: 'ct' } },
  };
}

/** A fresh home volume claim for the member (the apiserver names it `<member>-home-<suffix>`). Pure. */
export function buildCtHomeClaim(input: CtMemberInput): PersistentVolumeClaimObject | undefined {
  const { home } = input.spec;
  if (!home) return undefined;
  return {
    metadata: metadataOf(input, { generateName: homeClaimPrefix(input.member) }),
    spec: {
      accessModes: ['ReadWriteOnce'],
      ...(home.storageClass ? { storageClassName: home.storageClass } : {}),
      resources: { requests: { storage: home.size } },
    },
  };
}
