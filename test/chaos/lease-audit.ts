import { readFileSync } from 'node:fs';
import { leaseMemberLabel, releasingAnnotation, sessionIdAnnotation } from '../../src/keys.js';
import type { LeaseWrite } from './history.js';

interface AuditEvent {
  verb?: string;
  user?: { username?: string };
  objectRef?: { resource?: string; namespace?: string; name?: string };
  responseStatus?: { code?: number };
  requestObject?: {
    metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
    spec?: { holderIdentity?: string };
    preconditions?: { uid?: string };
  };
  requestReceivedTimestamp?: string;
  stageTimestamp?: string;
}

const writeVerbs = new Set(['create', 'update', 'delete']);

function leaseWriteOf(event: AuditEvent): LeaseWrite | undefined {
  const { verb, objectRef, requestObject } = event;
  if (verb === undefined || !writeVerbs.has(verb) || objectRef?.resource !== 'leases') return undefined;
  const code = event.responseStatus?.code ?? 0;
  const written = verb === 'delete' ? undefined : requestObject;
  const optional = {
    member: written?.metadata?.labels?.[leaseMemberLabel],
    holder: written?.spec?.holderIdentity,
    sessionId: written?.metadata?.annotations?.[sessionIdAnnotation],
    releasing: written?.metadata?.annotations?.[releasingAnnotation],
    preconditionUid: verb === 'delete' ? requestObject?.preconditions?.uid : undefined,
  };
  return {
    kind: 'lease-write',
    verb: verb as LeaseWrite['verb'],
    name: objectRef.name ?? '',
    user: event.user?.username ?? '',
    ok: code >= 200 && code < 300,
    receivedAt: Date.parse(event.requestReceivedTimestamp ?? ''),
    at: Date.parse(event.stageTimestamp ?? ''),
    ...Object.fromEntries(Object.entries(optional).filter(([, value]) => value !== undefined)),
  };
}

/** The Lease writes of one namespace in a local cluster's Lease audit log, in the order the apiserver logged them. */
export function readLeaseWrites(logPath: string, namespace: string): LeaseWrite[] {
  const writes: LeaseWrite[] = [];
  for (const line of readFileSync(logPath, 'utf8').split('\n')) {
    // the log holds every namespace's writes: a cheap look first, the parse only for this one's
    if (!line.includes(`"namespace":"${namespace}"`)) continue;
    const event = JSON.parse(line) as AuditEvent;
    if (event.objectRef?.namespace !== namespace) continue;
    const write = leaseWriteOf(event);
    if (write) writes.push(write);
  }
  return writes;
}
