import type { VdiContext } from '../context.js';
import { homeClaimPrefix, specConfigMapName } from '../ct/ct-keys.js';
import { buildCtHomeClaim, buildCtPod, buildCtService } from '../ct/ct-member-objects.js';
import { type CtPoolSpec, throwInvalidSpec } from '../ct/ct-pool-spec.js';
import { type DryRunResult, dryRunCreate } from '../kube/dry-run-create.js';
import type { ConfigMapObject } from '../kube-objects.js';
import { memberNameFor } from '../member-names.js';

type MemberKind = 'Pod' | 'Service' | 'PersistentVolumeClaim';

const container = /^spec\.containers\[0\]\./;
const resourceKey = /^resources\.(requests|limits)\[(.+)\]$/;

/**
 * The pool spec's field that the apiserver's `field` of a member object comes from, such as `image` for a Pod's
 * `spec.containers[0].image`; the object's own field, after its kind, where no spec field makes it. Pure.
 */
export function specFieldOf(kind: MemberKind, field: string, spec: CtPoolSpec): string {
  if (field.startsWith('metadata.labels')) return 'labels';
  if (field === 'metadata.name' || field === 'metadata.generateName') return 'name';
  if (kind === 'PersistentVolumeClaim') {
    if (field.startsWith('spec.resources')) return 'home.size';
    if (field.startsWith('spec.storageClassName')) return 'home.storageClass';
  }
  if (kind === 'Pod' && container.test(field)) {
    const own = field.replace(container, '');
    const resource = resourceKey.exec(own);
    if (resource) return `resources.${resource[1]}.${resource[2]}`;
    if (/^resources\.(requests|limits)$/.test(own) || own === 'resources') return own;
    const env = /^env\[(\d+)\]/.exec(own);
    if (env) return `env.${Object.keys(spec.env)[Number(env[1])] ?? ''}`;
    for (const name of ['image', 'command', 'args'] as const) if (own.startsWith(name)) return name;
    if (own.startsWith('volumeMounts')) return 'home';
  }
  if (kind === 'Pod' && (field === 'spec.hostname' || field === 'spec.subdomain')) return 'name';
  if (kind === 'Pod' && field.startsWith('spec.volumes')) return 'home';
  return field ? `${kind}.${field}` : kind;
}

/**
 * Sends the objects of the pool's first member, built as the reconciler builds them, to the apiserver as
 * server-side dry runs (`dryRun=All`), so a value it or its admission would refuse is refused at apply, before
 * anything is written, instead of failing each member later. `owner` is the pool's ConfigMap when it exists.
 *
 * @throws `VdiError` `INVALID_INPUT` naming the spec fields the apiserver refused (`details.fields`); `FORBIDDEN`
 *   without `create` on pods, services (and persistentvolumeclaims with a home), which a dry run needs as a create.
 */
export async function checkMemberObjects(
  ctx: VdiContext,
  namespace: string,
  spec: CtPoolSpec,
  owner: ConfigMapObject | undefined,
): Promise<void> {
  const member = memberNameFor(spec.name, 1);
  // a new pool's ConfigMap has no uid yet; the apiserver checks only that an owner reference has one
  const input = {
    spec,
    member,
    owner: owner ?? { metadata: { name: specConfigMapName(spec.name), uid: 'uid-of-the-new-spec' } },
  };
  const claim = buildCtHomeClaim(input);
  const refusedOf = async (kind: MemberKind, result: Promise<DryRunResult>) => {
    const answer = await result;
    return answer.kind === 'accepted'
      ? []
      : answer.fields.map(({ field, message }) => ({
          field: specFieldOf(kind, field, spec),
          message: `the apiserver refuses the member's ${kind}: ${message}`,
        }));
  };
  // the claim's name is the apiserver's to pick; the Pod only refers to it
  const pod = buildCtPod({ ...input, homeClaim: claim && `${homeClaimPrefix(member)}check` });
  const refused = (
    await Promise.all([
      refusedOf('Pod', dryRunCreate(ctx.cluster, 'Pod', namespace, pod)),
      refusedOf('Service', dryRunCreate(ctx.cluster, 'Service', namespace, buildCtService(input))),
      ...(claim
        ? [
            refusedOf(
              'PersistentVolumeClaim',
              dryRunCreate(ctx.cluster, 'PersistentVolumeClaim', namespace, claim),
            ),
          ]
        : []),
    ])
  ).flat();
  if (refused.length > 0) throwInvalidSpec(refused);
}
