import { z } from 'zod';
import { defaultTerminalShell } from '../connect-facts.js';
import { isVdiError, VdiError } from '../errors.js';
import { maxPoolSize } from '../pool-options.js';
import { type PoolSchedule, parsePoolSchedule } from '../pool-schedule.js';
import { checkPoolSettings, type PoolSettings, type ReclaimAction } from '../pool-settings.js';
import { poolNameSchema } from '../validate.js';
import { imageReferenceProblem } from './image-reference.js';

/**
 * What a kept home volume does on release: `wipe` deletes it and makes it again empty, `keep` hands it to the
 * member's next holder as it is.
 *
 * @category ct-pools
 */
export type HomeOnRelease = 'keep' | 'wipe';

/** The home volume of each member, mounted at `/home`. @category ct-pools */
export interface CtHomeVolume {
  /** The PersistentVolumeClaim's request, such as `10Gi`. */
  size: string;
  /** The StorageClass; the cluster's default when absent. */
  storageClass?: string | undefined;
  /** What a release does with it. @defaultValue `'wipe'` */
  onRelease: HomeOnRelease;
}

/** A container pool's definition, as `ct-pool apply` validates and stores it. @category ct-pools */
export interface CtPoolSpec {
  /** The pool's name: a DNS-1123 label; members are `<name>-<n>`. */
  name: string;
  /** The image every member runs, such as `ghcr.io/acme/devbox:1.4` or one pinned by `@sha256:…`. */
  image: string;
  /** How many members the reconciler keeps, 0 to 1000; with a `schedule`, the size outside every period. */
  size: number;
  /**
   * How many free members must be running, 0 to `size`. The reconciler runs a Pod for every free member, so this
   * is the floor `pool status` checks: fewer running free members (Pods pending, say) show as spares short.
   */
  minReady?: number | undefined;
  /** Replaces the image's entrypoint; the image's own when absent. */
  command?: string[] | undefined;
  /** Replaces the image's arguments. */
  args?: string[] | undefined;
  /** Environment variables of the container. */
  env: Record<string, string>;
  /** Requests and limits, with extended resources (such as `nvidia.com/gpu`) as whole numbers in `limits`. */
  resources: { requests: Record<string, string>; limits: Record<string, string> };
  home?: CtHomeVolume | undefined;
  /** The shell a terminal runs. @defaultValue `'/bin/sh'` */
  shell: string;
  /** Extra labels on every member's objects. */
  labels: Record<string, string>;
  /**
   * What the reclaim policy does with a desktop it takes back: `recreate` (the default: a fresh Pod from the image)
   * or `notify` (report it and keep the claim). `stop` is refused: a container cannot be stopped and kept.
   */
  reclaimAction?: Exclude<ReclaimAction, 'stop'> | undefined;
  /** Where `notify` POSTs its JSON body: an https URL (http only for a loopback host, when allowed). */
  reclaimWebhook?: string | undefined;
  /** The pool's idle timeout in ms, overriding the broker's; `0` turns idle reclaim off for the pool. */
  idleTimeoutMs?: number | undefined;
  /** Groups whose members may claim; with no allowed users either, everyone may. */
  allowedGroups?: string[] | undefined;
  /** Logins that may claim; with no allowed groups either, everyone may. */
  allowedUsers?: string[] | undefined;
  /** How many desktops a user may hold, in all pools of the namespace, and still claim from this one; `0`: no limit. */
  maxDesktopsPerUser?: number | undefined;
  /**
   * When and how the pool's size follows the working day, as a VM pool's schedule (see `parsePoolSchedule`): in a
   * period the reconciler keeps the period's free members within its floor and cap; outside every period `size`.
   */
  schedule?: PoolSchedule | undefined;
  /**
   * How many free members an image change replaces at once (1 to 100), the extra members it makes to keep the buffer
   * included. @defaultValue 1
   */
  maxUnavailable?: number | undefined;
}

/** What {@link parseCtPoolSpec} needs to know besides the spec. @category ct-pools */
export interface ParseCtPoolSpecOptions {
  /** Accept an http `reclaimWebhook` on localhost, 127.0.0.1 or ::1. @defaultValue false */
  allowLoopbackHttpWebhook?: boolean;
}

const quantityPattern = /^[0-9]+(?:\.[0-9]+)?(?:m|k|Ki|Mi|Gi|Ti|Pi|Ei|M|G|T|P|E)?$/;
const envNamePattern = /^[A-Za-z_][A-Za-z0-9_.-]*$/;
const labelNamePattern = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const labelValuePattern = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;
const dnsSubdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const standardResources = new Set(['cpu', 'memory', 'ephemeral-storage']);

/** Whether a resource name is an extended resource (a device plugin's, such as `nvidia.com/gpu`). @category ct-pools */
export function isExtendedResource(name: string): boolean {
  return !standardResources.has(name) && !name.startsWith('hugepages-');
}

// Pure, so a page that imports another function of ./core bundles none of these schemas and no zod.
const resourceName = /* @__PURE__ */ z.string().refine((name) => {
  if (standardResources.has(name) || name.startsWith('hugepages-')) return true;
  const [domain, resource, ...rest] = name.split('/');
  return (
    rest.length === 0 &&
    resource !== undefined &&
    dnsSubdomain.test(domain ?? '') &&
    !(domain ?? '').endsWith('kubernetes.io') &&
    labelNamePattern.test(resource)
  );
}, 'is not a resource name; use cpu, memory, ephemeral-storage, or an extended resource such as nvidia.com/gpu');

const quantity = /* @__PURE__ */ z
  .string()
  .regex(quantityPattern, 'is not a quantity; write it as Kubernetes does, such as 500m, 2, 4Gi');

const resourceList = /* @__PURE__ */ z.record(resourceName, quantity);

const labelKey = /* @__PURE__ */ z.string().refine((key) => {
  const slash = key.lastIndexOf('/');
  const prefix = slash === -1 ? undefined : key.slice(0, slash);
  const name = slash === -1 ? key : key.slice(slash + 1);
  return (prefix === undefined || dnsSubdomain.test(prefix)) && labelNamePattern.test(name);
}, 'is not a label key');

function schemaFor(options: ParseCtPoolSpecOptions) {
  return z
    .object({
      name: poolNameSchema,
      image: z
        .string()
        .max(4096)
        .superRefine((image, ctx) => {
          const problem = imageReferenceProblem(image);
          if (problem) ctx.addIssue({ code: 'custom', message: problem });
        }),
      size: z.number().int('must be a whole number').min(0).max(maxPoolSize),
      minReady: z.number().int('must be a whole number').min(0).optional(),
      maxUnavailable: z.number().int('must be a whole number').min(1).max(100).optional(),
      command: z.array(z.string()).min(1).optional(),
      args: z.array(z.string()).optional(),
      env: z
        .record(z.string().regex(envNamePattern, 'is not an environment variable name'), z.string())
        .default({}),
      resources: z
        .object({ requests: resourceList.default({}), limits: resourceList.default({}) })
        .strict()
        .default({ requests: {}, limits: {} }),
      home: z
        .object({
          size: quantity,
          storageClass: z.string().regex(dnsSubdomain, 'is not a StorageClass name').optional(),
          onRelease: z.enum(['keep', 'wipe']).default('wipe'),
        })
        .strict()
        .optional(),
      shell: z
        .string()
        .regex(/^\/\S*$/, 'must be an absolute path such as /bin/bash')
        .default(defaultTerminalShell),
      labels: z
        .record(
          labelKey.refine(
            (key) => !key.startsWith('corral.dev/'),
            'uses the corral.dev/ prefix the pool keeps for itself',
          ),
          z.string().regex(labelValuePattern, 'is not a label value'),
        )
        .default({}),
      reclaimAction: z.string().optional(),
      reclaimWebhook: z.string().optional(),
      idleTimeoutMs: z.number().optional(),
      allowedGroups: z.array(z.string()).optional(),
      allowedUsers: z.array(z.string()).optional(),
      maxDesktopsPerUser: z.number().optional(),
      schedule: z
        .unknown()
        .optional()
        .transform((raw, ctx) => {
          if (raw === undefined) return undefined;
          try {
            return parsePoolSchedule(raw);
          } catch (error) {
            if (!isVdiError(error, 'INVALID_INPUT')) throw error;
            const field = String(error.details.field ?? '');
            ctx.addIssue({
              code: 'custom',
              path: field === 'schedule' ? [] : [field],
              message: error.message.replace(/ Nothing was written\.$/, ''),
            });
            return z.NEVER;
          }
        }),
    })
    .strict()
    .superRefine((spec, ctx) => {
      checkSettings(spec, options, ctx);
      if (spec.minReady !== undefined && spec.minReady > spec.size) {
        ctx.addIssue({
          code: 'custom',
          path: ['minReady'],
          message: `must be at most the size, ${spec.size}`,
        });
      }
      for (const [name, value] of Object.entries(spec.resources.limits)) {
        if (isExtendedResource(name) && !/^[0-9]+$/.test(value)) {
          ctx.addIssue({
            code: 'custom',
            path: ['resources', 'limits', name],
            message: 'an extended resource is counted in whole units, such as 1',
          });
        }
      }
      for (const [name, value] of Object.entries(spec.resources.requests)) {
        if (isExtendedResource(name) && spec.resources.limits[name] !== value) {
          ctx.addIssue({
            code: 'custom',
            path: ['resources', 'requests', name],
            message: 'an extended resource cannot be overcommitted; put it in limits (its request follows)',
          });
        }
      }
    });
}

/** The pool settings' rules, those of a VM pool's settings, as issues of the spec. */
function checkSettings(
  spec: { name: string; reclaimAction?: string | undefined } & Omit<PoolSettings, 'reclaimAction'>,
  options: ParseCtPoolSpecOptions,
  ctx: z.RefinementCtx,
): void {
  const action = spec.reclaimAction;
  if (action !== undefined && action !== 'recreate' && action !== 'notify') {
    ctx.addIssue({
      code: 'custom',
      path: ['reclaimAction'],
      message:
        action === 'stop'
          ? 'a container cannot be stopped and kept (its Pod ends and the reconciler makes a fresh one); use recreate or notify'
          : `"${action}" is not a reclaim action of a container pool; use recreate or notify`,
    });
    return;
  }
  try {
    checkPoolSettings(ctPoolSettingsOf({ ...spec, reclaimAction: action }), {
      pool: spec.name,
      ephemeral: true,
      allowLoopbackHttp: options.allowLoopbackHttpWebhook ?? false,
    });
  } catch (error) {
    if (!isVdiError(error, 'INVALID_INPUT')) throw error;
    const { details } = error;
    const field =
      ['idleTimeoutMs', 'allowedGroups', 'allowedUsers', 'maxDesktopsPerUser', 'reclaimAction'].find(
        (name) => name in details,
      ) ?? 'reclaimWebhook';
    ctx.addIssue({ code: 'custom', path: [field], message: error.message });
  }
}

/** A container pool's own reclaim settings, in the shape the session engine reads for every pool. */
export function ctPoolSettingsOf(spec: PoolSettings): PoolSettings {
  return {
    ...(spec.reclaimAction === undefined ? {} : { reclaimAction: spec.reclaimAction }),
    ...(spec.reclaimWebhook === undefined ? {} : { reclaimWebhook: spec.reclaimWebhook }),
    ...(spec.idleTimeoutMs === undefined ? {} : { idleTimeoutMs: spec.idleTimeoutMs }),
    ...(spec.allowedGroups === undefined ? {} : { allowedGroups: spec.allowedGroups }),
    ...(spec.allowedUsers === undefined ? {} : { allowedUsers: spec.allowedUsers }),
    ...(spec.maxDesktopsPerUser ? { maxDesktopsPerUser: spec.maxDesktopsPerUser } : {}),
  };
}

/**
 * Checks a container pool's definition and fills in its defaults. Pure: nothing is read or written.
 *
 * @example
 * ```ts
 * const spec = parseCtPoolSpec({ name: 'devbox', image: 'ghcr.io/acme/devbox:1.4', size: 3 });
 * spec.shell; // '/bin/sh'
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` naming each bad field (`details.fields`) and what to write instead.
 * @category ct-pools
 */
export function parseCtPoolSpec(input: unknown, options: ParseCtPoolSpecOptions = {}): CtPoolSpec {
  const parsed = schemaFor(options).safeParse(input);
  if (parsed.success) return parsed.data as CtPoolSpec;
  const refused = parsed.error.issues.flatMap((issue) =>
    // an unknown field is named itself, not the object that holds it
    issue.code === 'unrecognized_keys'
      ? issue.keys.map((key) => ({
          field: [...issue.path, key].join('.'),
          message: 'unknown field, not one a container pool spec takes',
        }))
      : [
          {
            field: issue.path.join('.') || 'spec',
            // a record's key names its own problem inside the issue
            message:
              issue.code === 'invalid_key'
                ? issue.issues.map((inner) => inner.message).join('; ')
                : issue.message,
          },
        ],
  );
  throwInvalidSpec(refused);
}

/** Refuses a spec, naming each field and what is wrong with it: `details.fields` and `details.issues`. */
export function throwInvalidSpec(refused: Array<{ field: string; message: string }>): never {
  const fields = [...new Set(refused.map(({ field }) => field))];
  const issues = refused.map(({ field, message }) => `${field}: ${message}`);
  throw new VdiError(
    'INVALID_INPUT',
    `The container pool spec is not valid (${issues.join('; ')}); fix these fields and apply it again. Nothing was written.`,
    { details: { fields, issues } },
  );
}

/** Extended resources one member takes, such as `{ 'nvidia.com/gpu': 1 }`. @category ct-pools */
export function extendedResourcesOf(spec: Pick<CtPoolSpec, 'resources'>): Record<string, number> {
  return Object.fromEntries(
    Object.entries(spec.resources.limits)
      .filter(([name]) => isExtendedResource(name))
      .map(([name, value]) => [name, Number(value)]),
  );
}
