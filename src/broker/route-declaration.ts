import type { z } from 'zod/mini';

/** The HTTP methods of the broker's routes. @category broker */
export type RouteMethod = 'GET' | 'POST' | 'DELETE';

/**
 * Who may call a route. Every route but a `none` one refuses anonymous callers (401) and service identities (403)
 * first.
 *
 * - `none`: anyone, without asking who: the probes and metrics scrapes of the platform the broker runs on.
 * - `user`: any signed-in user.
 * - `holder-or-admin`: the holder of the desktop its `{ns}` and `{member}` name, or an admin; others get 403
 *   `NOT_HOLDER`, or 404 `CLAIM_ENDED` when nobody holds it.
 *
 * @category broker
 */
export type RouteAuth = 'none' | 'user' | 'holder-or-admin';

/** The names of the `{placeholders}` of a route path, such as `'ns' | 'member'`. @category broker */
export type PathParamNames<Path extends string> = Path extends `${string}{${infer Name}}${infer Rest}`
  ? Name | PathParamNames<Rest>
  : never;

/** The statuses a route declares beyond those every broker route can answer. @category broker */
export type DeclaredErrorStatus = 400 | 403 | 404 | 409 | 502 | 503;

/**
 * One broker route: what it takes and answers, and who may call it. Pure data, so the matcher, the OpenAPI
 * document and clients can all be derived from it.
 *
 * @category broker
 */
export interface RouteDeclaration<Path extends string = string> {
  method: RouteMethod;
  /** The path, with `{name}` for each path parameter. */
  path: Path;
  /** Only a path naming a desktop (`{ns}` and `{member}`) can be `holder-or-admin`. */
  auth: string extends Path
    ? RouteAuth
    : 'ns' | 'member' extends PathParamNames<Path>
      ? RouteAuth
      : 'none' | 'user';
  /** One line for the OpenAPI document. */
  summary: string;
  /** The rule of each path parameter. */
  params: { [Name in PathParamNames<Path>]: z.ZodMiniType<string, string> };
  /** The query parameters read; any others are ignored. */
  query?: z.ZodMiniObject;
  /** The body a POST accepts; the handler gets it as checked. */
  body?: z.ZodMiniType;
  /**
   * `websocket`: a GET that upgrades to a websocket (`101 Switching Protocols`) once every check passed; its
   * refusals are plain HTTP error answers. Such a route has no handler in the table of JSON handlers.
   */
  upgrade?: 'websocket';
  /** The success answer: JSON, plain text of a `contentType` (the metrics), or the switch to a websocket. */
  response:
    | { status: 200 | 202; description: string; schema: z.ZodMiniType }
    | { status: 200; description: string; contentType: string }
    | { status: 101; description: string };
  /** A second success answer: the request was accepted and finishes later (a claim that waits). */
  accepted?: { status: 202; description: string; schema: z.ZodMiniType };
  /** What the route's own work can answer besides success, by status. */
  errors?: Partial<Record<DeclaredErrorStatus, string>>;
}

/**
 * Declares a route, keeping its literal types so handlers see typed parameters and answers.
 *
 * @example
 * ```ts
 * const getTask = defineRoute({
 *   method: 'GET',
 *   path: '/api/tasks/{id}',
 *   auth: 'user',
 *   summary: 'A task the caller started.',
 *   params: { id: taskIdParam },
 *   response: { status: 200, description: 'The task.', schema: taskSchema },
 * });
 * ```
 * @category broker
 */
export function defineRoute<const Path extends string, const Route extends RouteDeclaration<Path>>(
  route: Route & { path: Path },
): Route {
  return route;
}

/**
 * What a handler returns for a route's `accepted` answer (202) instead of its usual one.
 *
 * @category broker
 */
export class Accepted<Body> {
  constructor(readonly body: Body) {}
}
