import type { BrokerMetrics } from '../metrics/broker-metrics.js';
import { answerFailure, answerJson } from './answers.js';
import type { BrokerResponse } from './http-io.js';
import type { RouteName, routes } from './routes.js';

/** The routes anyone may call without an identity: the probes and the metrics. */
export type OperationRouteName = {
  [Name in RouteName]: (typeof routes)[Name]['auth'] extends 'none' ? Name : never;
}[RouteName];

/** Where the broker is on its way to serving, and out of it. */
export type ReadinessState = 'starting' | 'ready' | 'failed' | 'stopping';

/** The broker's readiness: ready once every check resolved, until it begins to stop. */
export interface Readiness {
  state(): ReadinessState;
  /** Marks the broker as shutting down; readiness fails from now on. */
  stop(): void;
}

/** Tracks `checks` (such as caches that must sync first); a check that rejects is logged and keeps it unready. */
export function createReadiness(
  checks: readonly Promise<unknown>[],
  log: (message: string) => void,
): Readiness {
  let state: ReadinessState = checks.length === 0 ? 'ready' : 'starting';
  Promise.all(checks).then(
    () => {
      if (state === 'starting') state = 'ready';
    },
    (error: unknown) => {
      if (state === 'starting') state = 'failed';
      log(
        `broker: a readiness check failed, so /readyz stays 503: ${error instanceof Error ? error.message : String(error)}`,
      );
    },
  );
  return {
    state: () => state,
    stop() {
      state = 'stopping';
    },
  };
}

/** The answer of each operation route; `metrics` is absent where metrics are not served, so its path is not the broker's. */
export type OperationAnswers = {
  [Name in OperationRouteName]: (() => Promise<BrokerResponse>) | undefined;
};

const notReady: Record<Exclude<ReadinessState, 'ready'>, string> = {
  starting: 'The broker is starting: a readiness check (such as a cache sync) has not passed yet.',
  failed: 'A readiness check of the broker failed; its log says which. Restart it once the cause is fixed.',
  stopping: 'The broker is shutting down; send requests to another replica.',
};

/** Builds the answers of `/healthz`, `/readyz` and, when `metrics` is given, `/metrics`. */
export function createOperationAnswers(
  readiness: Readiness,
  metrics: BrokerMetrics | undefined,
): OperationAnswers {
  return {
    healthz: async () => answerJson(200, { status: 'alive' }),
    async readyz() {
      const state = readiness.state();
      return state === 'ready'
        ? answerJson(200, { status: 'ready' })
        : answerFailure('NOT_READY', notReady[state]);
    },
    metrics:
      metrics &&
      (async () => ({
        status: 200,
        headers: { 'content-type': metrics.contentType, 'cache-control': 'no-store' },
        body: await metrics.render(),
      })),
  };
}
