import type { z } from 'zod/mini';
import type { AuditRecord } from '../audit.js';
import { canUsePool, type PoolEntitlement } from '../claims/access.js';
import type { ClaimResult } from '../claims/claim-desktop.js';
import { claimOutcomeOf } from '../claims/claim-outcome.js';
import { connect } from '../connect-planner/connect.js';
import { type CtPoolView, readCtPoolViews } from '../ct-pools/ct-pool-service.js';
import type { DesktopKind } from '../desktop-backend.js';
import { checkHolderEntitlement } from '../entitlements/pool-entitlement.js';
import { isVdiError, VdiError } from '../errors.js';
import { shortHash } from '../hash.js';
import { formatPoolId } from '../ids.js';
import { sessionIdAnnotation } from '../keys.js';
import { leaseNameFor } from '../lease-name.js';
import type { BrokerMetrics } from '../metrics/broker-metrics.js';
import type { PoolPlans } from '../pool-status/describe-pool-plans.js';
import { newSharedReads } from '../pool-status/read-pool-plans.js';
import { consoleEndFor } from '../sessions/console-tracker.js';
import type { SessionEngine } from '../sessions/session-engine.js';
import type { Vdi } from '../vdi.js';
import type { Caller } from './caller-access.js';
import type { DesktopReader, ReadDesktop } from './desktop-reader.js';
import { defaultBrokerWaitMs } from './input-rules.js';
import { buildOpenApiDocument } from './openapi.js';
import { mintRdpToken, resolveRdpTarget } from './rdp-access.js';
import { readPoolsWithPlans } from './read-pools-with-plans.js';
import { Accepted } from './route-declaration.js';
import type { RouteName, routes } from './routes.js';
import type { ClaimedDesktopBody, PoolBody, WaiterBody } from './schemas.js';
import type { TaskRegistry } from './tasks.js';
import { type WaiterRegistry, type WaiterTarget, waiterIdOf } from './waiters.js';

type Route<Name extends RouteName> = (typeof routes)[Name];

/**
 * The routes answered with JSON by a handler; websocket routes go to the console proxy instead, and the routes
 * anyone may call (probes, metrics) to the operation answers.
 */
export type JsonRouteName = {
  [Name in RouteName]: Route<Name> extends { upgrade: 'websocket' } | { auth: 'none' } ? never : Name;
}[RouteName];

/** What a handler gets: the caller, the checked path parameters and query, and the desktop it may act on. */
export interface RouteInput<Name extends JsonRouteName> {
  caller: Caller;
  params: { [Param in keyof Route<Name>['params']]: string };
  query: Route<Name> extends { query: z.ZodMiniObject } ? z.output<Route<Name>['query']> : undefined;
  /** The body as the route's body rule checked it (`{}` when none was sent). */
  body: Route<Name> extends { body: z.ZodMiniType } ? z.output<Route<Name>['body']> : undefined;
  /** The desktop the path names, for `holder-or-admin` routes, after the access check. */
  desktop: Route<Name>['auth'] extends 'holder-or-admin' ? ReadDesktop : undefined;
}

/** Does a route's work; the router checks the answer against the route's response schema. */
export type RouteHandler<Name extends JsonRouteName> = (
  input: RouteInput<Name>,
) => Promise<
  | z.input<Extract<Route<Name>['response'], { schema: z.ZodMiniType }>['schema']>
  | (Route<Name> extends { accepted: { schema: z.ZodMiniType } }
      ? Accepted<z.input<Route<Name>['accepted']['schema']>>
      : never)
>;

/** One handler per JSON route of the table. */
export type RouteHandlers = { [Name in JsonRouteName]: RouteHandler<Name> };

/** The services the handlers call. */
export interface RouteHandlerDependencies {
  vdi: Vdi;
  desktops: DesktopReader;
  sessions: SessionEngine;
  tasks: TaskRegistry;
  waiters: WaiterRegistry;
  /** The task log records, oldest first. */
  listAudit(): AuditRecord[] | Promise<AuditRecord[]>;
  namespaces: readonly string[];
  /** The broker's limit of desktops per user, for every claim and wait; `undefined` for none. */
  maxDesktopsPerUser: number | undefined;
  /** Counts and times claims and releases. */
  metrics: Pick<BrokerMetrics, 'timeClaim' | 'countRelease'>;
  log: (message: string) => void;
}

const nullable = <T>(value: T | undefined): T | null => (value === undefined ? null : value);

// the route's kind rule admits only the served kinds
const kindOf = (params: { kind: string }): DesktopKind => params.kind as DesktopKind;

// the list shows only the pools a claim by this caller would not refuse
const mayUse = (caller: Caller, pool: PoolEntitlement): boolean =>
  canUsePool({ identity: caller.login, groups: caller.groups, isAdmin: caller.admin, pool }).kind ===
  'allowed';

// a holder whose pool no longer lets them in may still look at the desktop and release it, not use it
async function checkStillEntitled(ctx: Vdi['context'], caller: Caller, desktop: ReadDesktop): Promise<void> {
  const { view, lease } = desktop;
  await checkHolderEntitlement(ctx, {
    kind: view.kind,
    namespace: view.namespace,
    pool: view.pool,
    identity: caller.login,
    groups: caller.groups,
    isAdmin: caller.admin,
    lease,
  });
}

/** A pool's schedule and roll-out as its answer shows them. */
function describePlans(plans: PoolPlans | undefined): Pick<PoolBody, 'schedule' | 'rollOut'> {
  const schedule = plans?.schedule;
  const rollOut = plans?.rollOut;
  return {
    schedule: schedule
      ? {
          timeZone: schedule.timeZone,
          period: schedule.period,
          warmingFor: schedule.warmingFor,
          nextChange: schedule.nextChange,
          targets: schedule.targets,
          scaleToZero: schedule.scaleToZero,
          plainSize: schedule.plainSize,
          // the keeper's error text stays in the operator's views: it may name cluster objects
          failing: schedule.failure && {
            attempts: schedule.failure.attempts,
            retryAt: schedule.failure.retryAt,
          },
        }
      : null,
    rollOut: rollOut
      ? {
          to: rollOut.to,
          onTarget: rollOut.onTarget,
          total: rollOut.total,
          maxUnavailable: rollOut.maxUnavailable,
          paused: rollOut.paused,
          deadline: rollOut.deadline,
          finishedAt: rollOut.finishedAt,
          rebuilding: rollOut.rebuilding.length,
          waiting: rollOut.claimed.length,
        }
      : null,
  };
}

// a member is free while nobody holds it and its Pod exists (one being made again is not handed out)
function describeCtPool(pool: CtPoolView, plans: PoolPlans | undefined) {
  const claimed = pool.members.filter((member) => member.owner !== undefined).length;
  const free = pool.members.filter((member) => member.owner === undefined && member.power !== 'absent');
  return {
    id: pool.id,
    kind: 'ct' as const,
    namespace: pool.namespace,
    name: pool.name,
    members: pool.members.length,
    claimed,
    free: free.length,
    ...describePlans(plans),
  };
}

/** A claim as the API answers it: its Lease as the claim wrote it, not read back. */
export function describeClaim(desktops: DesktopReader, claimed: ClaimResult): ClaimedDesktopBody {
  return {
    ...desktops.describe(claimed, claimed.lease),
    owner: claimed.owner,
    sessionId: claimed.sessionId,
    ...claimOutcomeOf(claimed),
  };
}

type WaiterParams = { kind: string; ns: string; pool: string; waiter: string };

function waiterTarget(
  params: WaiterParams,
  caller: Caller,
  maxDesktopsPerUser: number | undefined,
): WaiterTarget {
  return {
    kind: kindOf(params),
    namespace: params.ns,
    pool: params.pool,
    identity: caller.login,
    groups: [...caller.groups],
    asAdmin: caller.admin,
    maxDesktopsPerUser,
    key: params.waiter,
  };
}

function noWaiter(id: string): VdiError {
  return new VdiError(
    'NOT_FOUND',
    `There is no wait ${id} of yours and no desktop of yours in its pool; claim again.`,
  );
}

// the waiter key is the hash of the identity it queues: a caller reaches only its own waits in the cluster
function ownTarget(target: WaiterTarget, caller: Caller): WaiterTarget {
  if (target.key !== shortHash(caller.login)) throw noWaiter(waiterIdOf(target));
  return target;
}

function claimedWaiter(id: string, target: WaiterTarget, desktop: ClaimedDesktopBody): WaiterBody {
  return {
    id,
    poolId: `${target.kind}/${target.namespace}/${target.pool}`,
    status: 'claimed',
    position: null,
    waiters: null,
    enqueuedAt: null,
    desktop,
    error: null,
  };
}

/** Builds the handlers of the broker's routes. */
export function createRouteHandlers(deps: RouteHandlerDependencies): RouteHandlers {
  const { vdi, desktops, sessions, tasks, waiters, namespaces, metrics, log, maxDesktopsPerUser } = deps;
  const ctx = vdi.context;
  const openApiDocument = buildOpenApiDocument();

  return {
    async listPools({ caller }) {
      // the container pools' specs are read once, for their views and their schedules
      const shared = newSharedReads();
      const [{ pools: vmPools, plans: planned }, ctPools] = await Promise.all([
        readPoolsWithPlans(ctx, namespaces, shared),
        Promise.all(
          namespaces.map((namespace) =>
            readCtPoolViews(ctx, namespace, { cached: ctx.cluster.isCaching(namespace), shared }),
          ),
        ),
      ]);
      const plansOf = new Map(planned.map((plans) => [formatPoolId(plans), plans]));
      return {
        pools: [
          ...vmPools
            .filter((pool) => mayUse(caller, { poolId: pool.id, ...pool.settings }))
            .map((pool) => ({
              id: pool.id,
              kind: 'vm' as const,
              namespace: pool.namespace,
              name: pool.name,
              members: pool.counts.members,
              claimed: pool.counts.claimed,
              free: pool.counts.free,
              ...describePlans(plansOf.get(pool.id)),
            })),
          ...ctPools
            .flat()
            .filter((pool) => mayUse(caller, { poolId: pool.id, ...pool.spec }))
            .map((pool) => describeCtPool(pool, plansOf.get(pool.id))),
        ],
      };
    },
    async claim({ caller, params, body }) {
      const asked = {
        pool: params.pool,
        identity: caller.login,
        groups: [...caller.groups],
        asAdmin: caller.admin,
        maxDesktopsPerUser,
        namespace: params.ns,
        kind: kindOf(params),
      };
      if (body.wait === true) {
        const started = await waiters.start(
          { ...asked, key: shortHash(caller.login) },
          body.waitTimeoutMs ?? defaultBrokerWaitMs,
        );
        if (started.kind === 'waiting') return new Accepted(started.waiter);
        return describeClaim(desktops, started.claimed);
      }
      return describeClaim(desktops, await metrics.timeClaim(vdi.claim(asked)));
    },
    async getWaiter({ caller, params }) {
      const target = waiterTarget(params, caller, maxDesktopsPerUser);
      const id = waiterIdOf(target);
      const known = waiters.get(id);
      if (known && (known.identity === caller.login || caller.admin)) {
        const { identity: _identity, ...waiter } = known;
        return waiter;
      }
      const own = ownTarget(target, caller);
      // a wait this process does not run (a restart, another replica): take it up while its Lease lives
      if (await vdi.waitPosition(own)) {
        const started = await waiters.start(own, defaultBrokerWaitMs);
        if (started.kind === 'waiting') return started.waiter;
        return claimedWaiter(id, own, describeClaim(desktops, started.claimed));
      }
      const [views, leases] = await Promise.all([
        vdi.listDesktops({ namespaces: [own.namespace], identity: caller.login, pool: own.pool }),
        desktops.leasesByName(),
      ]);
      const view = views.find((candidate) => candidate.kind === own.kind);
      if (!view) throw noWaiter(id);
      const lease = leases.get(`${view.namespace}/${leaseNameFor(view.member)}`);
      const desktop = desktops.describe(view, lease);
      return claimedWaiter(id, own, {
        ...desktop,
        owner: caller.login,
        sessionId: desktop.sessionId ?? '',
        retried: true,
        adopted: false,
        // read back after the wait ended: whether it was warm when handed out is not known here
        warm: false,
      });
    },
    async cancelWait({ caller, params }) {
      const target = waiterTarget(params, caller, maxDesktopsPerUser);
      const id = waiterIdOf(target);
      const known = waiters.get(id);
      if (known && (known.identity === caller.login || caller.admin)) {
        // its loop runs here: ending it takes its Lease out of the queue
        return (await waiters.cancel(id)) ?? known;
      }
      const own = ownTarget(target, caller);
      if (!(await vdi.cancelWait(own))) throw noWaiter(id);
      return {
        id,
        poolId: `${own.kind}/${own.namespace}/${own.pool}`,
        status: 'cancelled' as const,
        position: null,
        waiters: null,
        enqueuedAt: null,
        desktop: null,
        error: null,
      };
    },
    async listDesktops({ caller, query }) {
      const all = query.all === '1';
      if (all && !caller.admin) {
        throw new VdiError(
          'FORBIDDEN',
          "Only admins may list every user's desktops; drop ?all=1 to list yours.",
        );
      }
      const [views, leases] = await Promise.all([
        vdi.listDesktops({ namespaces: [...namespaces], ...(all ? {} : { identity: caller.login }) }),
        desktops.leasesByName(),
      ]);
      return {
        desktops: views.map((view) =>
          desktops.describe(view, leases.get(`${view.namespace}/${leaseNameFor(view.member)}`)),
        ),
      };
    },
    async getDesktop({ desktop }) {
      return desktops.describe(desktop.view, desktop.lease);
    },
    async startDesktop({ caller, params, desktop }) {
      await checkStillEntitled(ctx, caller, desktop);
      const started = await vdi.start({
        kind: kindOf(params),
        member: params.member,
        identity: caller.login,
        namespace: params.ns,
        asAdmin: caller.admin,
      });
      return desktops.describe(started, desktop.lease);
    },
    async releaseDesktop({ caller, params, desktop: { view, lease } }) {
      // the access check judged this claim: a newer one of the member is refused, not released
      const expectedSessionId = lease?.metadata.annotations?.[sessionIdAnnotation];
      const suffix = ctx.newSessionId().replaceAll('-', '').slice(0, 12);
      const task = tasks.run(
        {
          id: `vdi-release-${params.ns}-${params.member}-${suffix}`,
          action: view.owner === caller.login ? 'vdi release' : 'vdi force-release',
          desktop: view.id,
          user: caller.login,
        },
        async () => {
          const expectedEnd = sessions.expectConsolesEnd({
            namespace: params.ns,
            member: params.member,
            end: consoleEndFor(),
          });
          try {
            const released = await metrics.countRelease(
              view.owner === caller.login ? 'holder' : 'admin',
              vdi.release({
                kind: kindOf(params),
                member: params.member,
                identity: caller.login,
                namespace: params.ns,
                asAdmin: caller.admin,
                ...(expectedSessionId === undefined ? {} : { expectedSessionId }),
              }),
            );
            // the consoles stay while the guest goes down, and close once it is gone: a failed release kept them
            void sessions
              .endConsolesWhenDown({
                kind: kindOf(params),
                namespace: params.ns,
                member: params.member,
                reset: released.reset,
                end: consoleEndFor(),
              })
              .catch((error: unknown) =>
                log(`broker: ending the consoles of ${view.id} failed: ${String(error)}`),
              );
          } catch (error) {
            if (!isVdiError(error))
              log(`broker: the release of ${view.id} failed unexpectedly: ${String(error)}`);
            throw error;
          } finally {
            // on success the end above took over in the same turn
            expectedEnd();
          }
        },
      );
      return { desktop: view.id, task: task.id };
    },
    async connectDesktop({ caller, params }) {
      return await connect(ctx, {
        kind: kindOf(params),
        member: params.member,
        identity: caller.login,
        namespace: params.ns,
        asAdmin: caller.admin,
        groups: caller.groups,
      });
    },
    async mintRdpToken({ caller, params }) {
      const target = await resolveRdpTarget(ctx, {
        kind: kindOf(params),
        namespace: params.ns,
        member: params.member,
        caller,
      });
      const minted = await mintRdpToken(ctx, target, caller);
      return { ...minted, destination: `${target.host}:${target.port}` };
    },
    async openapi() {
      return openApiDocument;
    },
    async getTask({ caller, params }) {
      const task = tasks.get(params.id);
      if (!task || (task.user !== caller.login && !caller.admin)) {
        throw new VdiError(
          'NOT_FOUND',
          `There is no task ${params.id} of yours; tasks are kept while this broker runs.`,
        );
      }
      return { ...task, finishedAt: nullable(task.finishedAt), error: nullable(task.error) };
    },
    async taskLog({ caller }) {
      const records = await deps.listAudit();
      return { records: caller.admin ? records : records.filter((record) => record.user === caller.login) };
    },
  };
}
