import * as z from 'zod/mini';
import {
  actionBodySchema,
  claimBodySchema,
  consoleProtocolParam,
  desktopListQuerySchema,
  kindParam,
  memberParam,
  namespaceParam,
  poolParam,
  taskIdParam,
  waiterParam,
} from './input-rules.js';
import { defineRoute } from './route-declaration.js';
import {
  claimedDesktopSchema,
  connectAnswerSchema,
  desktopListSchema,
  desktopSchema,
  poolListSchema,
  probeAnswerSchema,
  rdpTokenSchema,
  releaseAcceptedSchema,
  taskLogSchema,
  taskSchema,
  waiterSchema,
} from './schemas.js';

const desktopParams = { kind: kindParam, ns: namespaceParam, member: memberParam };
const waiterParams = { kind: kindParam, ns: namespaceParam, pool: poolParam, waiter: waiterParam };

/**
 * Every broker route, declared once; the key is its OpenAPI `operationId`. The matcher, the dispatch, the OpenAPI
 * document and the handlers' types all come from this table.
 *
 * @category broker
 */
export const routes = {
  listPools: defineRoute({
    method: 'GET',
    path: '/api/vdi/pools',
    auth: 'user',
    summary: 'The served pools with member, claimed and free counts.',
    params: {},
    response: { status: 200, description: 'The pools.', schema: poolListSchema },
  }),
  claim: defineRoute({
    method: 'POST',
    path: '/api/vdi/pools/{kind}/{ns}/{pool}/claim',
    auth: 'user',
    summary:
      'Claims a free member for the caller and starts it; a retry returns the desktop the caller holds. With ' +
      '`{ "wait": true }`, a caller who finds no member free joins the pool\'s queue, first come first served.',
    params: { kind: kindParam, ns: namespaceParam, pool: poolParam },
    body: claimBodySchema,
    response: {
      status: 200,
      description: 'The claimed desktop; `startError` is set when it did not start.',
      schema: claimedDesktopSchema,
    },
    accepted: {
      status: 202,
      description: 'No member was free: the caller waits in the queue. Poll the waiter until it is claimed.',
      schema: waiterSchema,
    },
    errors: {
      409:
        'The pool has no member free for the caller (without wait); `details.waiters` counts the queue ahead. Or ' +
        'the caller holds as many desktops as its limit allows (`USER_LIMIT_REACHED`, naming them), before it waits.',
    },
  }),
  getWaiter: defineRoute({
    method: 'GET',
    path: '/api/vdi/waiters/{kind}/{ns}/{pool}/{waiter}',
    auth: 'user',
    summary:
      "The caller's wait (admins: any this broker runs): its position, or the desktop once claimed. A wait this " +
      'broker does not run (it restarted, or another replica took the claim) is taken up again while its Lease lives.',
    params: waiterParams,
    response: { status: 200, description: 'The waiter.', schema: waiterSchema },
    errors: { 404: 'No such wait of the caller, and no desktop of the caller in the pool.' },
  }),
  cancelWait: defineRoute({
    method: 'DELETE',
    path: '/api/vdi/waiters/{kind}/{ns}/{pool}/{waiter}',
    auth: 'user',
    summary:
      "Cancels the caller's wait: it leaves the queue. A desktop it already claimed stays the caller's.",
    params: waiterParams,
    response: { status: 200, description: 'The waiter as it ended.', schema: waiterSchema },
    errors: { 404: 'No such wait of the caller.' },
  }),
  listDesktops: defineRoute({
    method: 'GET',
    path: '/api/vdi/desktops',
    auth: 'user',
    summary: "The caller's desktops; `?all=1` lists every user's (admins only).",
    params: {},
    query: desktopListQuerySchema,
    response: { status: 200, description: 'The desktops.', schema: desktopListSchema },
    errors: { 403: 'A service identity, or `?all=1` from a caller who is not an admin.' },
  }),
  getDesktop: defineRoute({
    method: 'GET',
    path: '/api/vdi/desktops/{kind}/{ns}/{member}',
    auth: 'holder-or-admin',
    summary: 'One desktop (holder or admin).',
    params: desktopParams,
    response: { status: 200, description: 'The desktop.', schema: desktopSchema },
  }),
  startDesktop: defineRoute({
    method: 'POST',
    path: '/api/vdi/desktops/{kind}/{ns}/{member}/start',
    auth: 'holder-or-admin',
    summary: 'Starts the desktop (holder or admin); a running desktop is left alone.',
    params: desktopParams,
    body: actionBodySchema,
    response: { status: 200, description: 'The desktop after the start.', schema: desktopSchema },
    errors: {
      403: "The desktop's pool no longer lets its holder in (`NOT_ENTITLED`); it may still be read and released.",
      409: 'The claim expired; claim the pool again.',
      502: 'The start failed; the claim stays.',
    },
  }),
  releaseDesktop: defineRoute({
    method: 'POST',
    path: '/api/vdi/desktops/{kind}/{ns}/{member}/release',
    auth: 'holder-or-admin',
    summary:
      'Releases the desktop (holder or admin) in a task: a VM stops and keeps its disks (an ephemeral one is made ' +
      'again), a container is made again from its image.',
    params: desktopParams,
    body: actionBodySchema,
    response: { status: 202, description: 'The release runs; poll the task.', schema: releaseAcceptedSchema },
  }),
  connectDesktop: defineRoute({
    method: 'GET',
    path: '/api/vdi/desktops/{kind}/{ns}/{member}/connect',
    auth: 'holder-or-admin',
    summary: 'The console to use (holder or admin), probed again on every call.',
    params: desktopParams,
    response: {
      status: 200,
      description: 'The target console, the fallbacks and what was skipped.',
      schema: connectAnswerSchema,
    },
    errors: {
      403: "The desktop's pool no longer lets its holder in (`NOT_ENTITLED`).",
      409: 'The claim expired (claim again) or the desktop is stopped (start it first).',
    },
  }),
  mintRdpToken: defineRoute({
    method: 'POST',
    path: '/api/vdi/desktops/{kind}/{ns}/{member}/console/rdp/token',
    auth: 'holder-or-admin',
    summary:
      "Mints the proxy token of the desktop's rdp console (holder or admin): the RDCleanPath request's proxy_auth, " +
      'single use, valid for a minute, for this caller and this claim only.',
    params: desktopParams,
    body: actionBodySchema,
    response: { status: 200, description: 'The token and the guest address.', schema: rdpTokenSchema },
    errors: {
      403: "The desktop's pool no longer lets its holder in (`NOT_ENTITLED`).",
      409: 'The claim expired (claim again) or the desktop is stopped or has no address yet (start it first).',
    },
  }),
  openConsole: defineRoute({
    method: 'GET',
    path: '/api/vdi/desktops/{kind}/{ns}/{member}/console/{protocol}',
    auth: 'holder-or-admin',
    upgrade: 'websocket',
    summary:
      "Opens a console websocket (holder or admin): binary messages carry the desktop's raw console bytes " +
      "(RFB for vnc, the serial line for serial, the shell's terminal for terminal; for rdp one RDCleanPath " +
      'request with a token of `POST …/console/rdp/token`, then plaintext RDP). Every refusal of the caller comes ' +
      'before the upgrade, as an HTTP error; an rdp request the broker refuses is answered with an RDCleanPath error.',
    params: { ...desktopParams, protocol: consoleProtocolParam },
    response: {
      status: 101,
      description:
        'Switched to a websocket; it closes with 4001 when the desktop is released, 4002 when it is reclaimed.',
    },
    errors: {
      400: 'Not a websocket upgrade request.',
      403:
        "A cross-site upgrade (Sec-Fetch-Site or an Origin of another host), or the desktop's pool no longer lets " +
        'its holder in (`NOT_ENTITLED`).',
      409: 'The claim expired (claim again) or the desktop is stopped (start it first).',
      502: "The desktop's console did not open.",
    },
  }),
  openapi: defineRoute({
    method: 'GET',
    path: '/api/vdi/openapi.json',
    auth: 'user',
    summary: 'This document.',
    params: {},
    response: {
      status: 200,
      description: 'The OpenAPI 3.1 document.',
      schema: z.record(z.string(), z.unknown()),
    },
  }),
  getTask: defineRoute({
    method: 'GET',
    path: '/api/tasks/{id}',
    auth: 'user',
    summary: 'A task the caller started (admins: any task).',
    params: { id: taskIdParam },
    response: { status: 200, description: 'The task.', schema: taskSchema },
    errors: {
      404: 'The broker is off, or no task of the caller has this ID (tasks live as long as the broker process).',
    },
  }),
  taskLog: defineRoute({
    method: 'GET',
    path: '/api/tasklog',
    auth: 'user',
    summary: 'The task log: admins see every record, users their own (where they acted).',
    params: {},
    response: { status: 200, description: 'The records, oldest first.', schema: taskLogSchema },
  }),
  healthz: defineRoute({
    method: 'GET',
    path: '/healthz',
    auth: 'none',
    summary: 'Whether the process is alive, for a liveness probe; asks nobody who is calling.',
    params: {},
    response: { status: 200, description: 'The process answers.', schema: probeAnswerSchema },
  }),
  readyz: defineRoute({
    method: 'GET',
    path: '/readyz',
    auth: 'none',
    summary: 'Whether the broker can serve, for a readiness probe; asks nobody who is calling.',
    params: {},
    response: { status: 200, description: 'Ready to serve.', schema: probeAnswerSchema },
    errors: {
      503: 'Not ready (`NOT_READY`): a readiness check has not passed yet or failed, or the broker is shutting down.',
    },
  }),
  metrics: defineRoute({
    method: 'GET',
    path: '/metrics',
    auth: 'none',
    summary:
      "The broker's metrics in the Prometheus text format; served only when turned on (`broker serve --metrics`).",
    params: {},
    response: {
      status: 200,
      description: 'Every metric, read now.',
      contentType: 'text/plain; version=0.0.4; charset=utf-8',
    },
    errors: { 404: 'Metrics are not turned on for this listener.' },
  }),
};

/** The name of a broker route, which is also its OpenAPI `operationId`. @category broker */
export type RouteName = keyof typeof routes;
