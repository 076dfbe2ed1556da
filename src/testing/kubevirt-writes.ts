import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** One create, update or patch of an object in KubeVirt's API groups, as the apiserver's audit log holds it. @category testing */
export interface KubevirtWrite {
  verb: 'create' | 'update' | 'patch';
  /** Who wrote it: the SDK's user, or the simulator's. */
  user: string;
  /** `kubevirt.io` or `clone.kubevirt.io`. */
  group: string;
  /** The version the request was sent to. */
  version: string;
  /** The plural, such as `virtualmachines`. */
  resource: string;
  /** `status` for a status-subresource write. */
  subresource: string | undefined;
  namespace: string;
  name: string;
  /** The HTTP status of the answer. */
  code: number;
  /** What was sent: the object, or for a patch the patch (an array for a JSON patch). */
  request: unknown;
  /** The object as the apiserver stored it and answered (absent when the write was refused). */
  stored: unknown;
}

interface AuditEvent {
  verb: string;
  user?: { username?: string };
  objectRef?: {
    apiGroup?: string;
    apiVersion?: string;
    resource?: string;
    subresource?: string;
    namespace?: string;
    name?: string;
  };
  responseStatus?: { code?: number };
  requestObject?: unknown;
  responseObject?: unknown;
}

const kubevirtGroups = ['kubevirt.io', 'clone.kubevirt.io'];

// Request and response bodies of writes to KubeVirt's groups, nothing else: the log stays small in a busy test.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: RequestResponse
    verbs: [create, update, patch]
    resources:
${kubevirtGroups.map((group) => `      - group: ${group}`).join('\n')}
  - level: None
`;

/** The kube-apiserver flags that record KubeVirt writes into the cluster's data folder. */
export function kubevirtWriteAuditFlags(dataDir: string): string[] {
  const policyPath = join(dataDir, 'kubevirt-audit-policy.yaml');
  writeFileSync(policyPath, auditPolicy);
  return [
    `--audit-policy-file=${policyPath}`,
    `--audit-log-path=${kubevirtAuditLogPath(dataDir)}`,
    '--audit-log-format=json',
    '--audit-log-mode=blocking',
  ];
}

function kubevirtAuditLogPath(dataDir: string): string {
  return join(dataDir, 'kubevirt-audit.log');
}

/** Reads the writes recorded so far, oldest first. */
export function readKubevirtWrites(dataDir: string): KubevirtWrite[] {
  const path = kubevirtAuditLogPath(dataDir);
  if (!existsSync(path)) return [];
  const writes: KubevirtWrite[] = [];
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    // the apiserver may be half-way through its last line
    if (!line.endsWith('}')) continue;
    const event = JSON.parse(line) as AuditEvent;
    const ref = event.objectRef ?? {};
    if (!kubevirtGroups.includes(ref.apiGroup ?? '')) continue;
    if (event.verb !== 'create' && event.verb !== 'update' && event.verb !== 'patch') continue;
    writes.push({
      verb: event.verb,
      user: event.user?.username ?? '',
      group: ref.apiGroup ?? '',
      version: ref.apiVersion ?? '',
      resource: ref.resource ?? '',
      subresource: ref.subresource,
      namespace: ref.namespace ?? '',
      name: ref.name ?? '',
      code: event.responseStatus?.code ?? 0,
      request: event.requestObject,
      stored: event.responseObject,
    });
  }
  return writes;
}
