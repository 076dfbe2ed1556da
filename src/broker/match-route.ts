import type { VdiErrorCode } from '../errors.js';
import { checkParams } from './input-rules.js';
import type { RouteMethod } from './route-declaration.js';
import { type RouteName, routes } from './routes.js';

/**
 * What {@link matchRoute} decided about a request line.
 *
 * - `route`: a broker route, with path parameters that passed its rules.
 * - `reject`: a broker path the request may not use as it is; `allow` lists the methods of a 405.
 * - `not-broker`: the path is none of the broker's (another `/api` route of a host application, or none).
 *
 * @category broker
 */
export type RouteMatch =
  | { kind: 'route'; name: RouteName; params: Record<string, string> }
  | { kind: 'reject'; code: VdiErrorCode; message: string; allow?: RouteMethod[] }
  | { kind: 'not-broker' };

/** Input of {@link matchRoute}. @category broker */
export interface RouteRequest {
  method: string;
  /** The path exactly as the client sent it, still percent-encoded, without the query. */
  rawPath: string;
  /** The namespaces the broker serves; any other answers as if absent. */
  servedNamespaces: readonly string[];
}

const table = Object.entries(routes).map(([name, route]) => ({
  name: name as RouteName,
  method: route.method,
  params: route.params,
  segments: route.path.slice(1).split('/'),
}));

// The broker owns every path under the first two segments of one of its routes: /api/vdi, /api/tasks, /api/tasklog.
const brokerPrefixes = new Set(table.map(({ segments }) => segments.slice(0, 2).join('/')));

const parameterName = (segment: string) =>
  segment.startsWith('{') && segment.endsWith('}') ? segment.slice(1, -1) : undefined;

function reject(code: VdiErrorCode, message: string): RouteMatch {
  return { kind: 'reject', code, message };
}

function fits(pattern: readonly string[], segments: readonly string[]): boolean {
  return (
    pattern.length === segments.length &&
    pattern.every((part, index) => parameterName(part) !== undefined || part === segments[index])
  );
}

// The first segment that no broker path may contain, as a rejection.
function checkSegments(segments: readonly string[]): RouteMatch | undefined {
  for (const segment of segments) {
    const lower = segment.toLowerCase();
    if (/^(\.|%2e)+$/.test(lower)) {
      return reject(
        'INVALID_INPUT',
        'The path contains a "." or ".." segment; path traversal is not allowed. Use a plain ID.',
      );
    }
    if (/%(2f|5c)/.test(lower) || segment.includes('\\')) {
      return reject('INVALID_INPUT', 'The path contains an encoded slash or a backslash; an ID never does.');
    }
    if (segment.includes('%'))
      return reject(
        'INVALID_INPUT',
        `Path segment "${segment}" is percent-encoded; IDs are plain lowercase names.`,
      );
    if (segment === '')
      return reject('INVALID_INPUT', 'The path has an empty segment (a double or trailing slash).');
  }
  return undefined;
}

/**
 * Matches a request line to a route of the table and checks its path parameters, before anything reads the
 * cluster.
 *
 * The raw path is checked first: a `.` or `..` segment (also percent-encoded), an encoded slash or backslash,
 * any other percent-encoding, or an empty segment is a 400, never normalised into another path. A known path
 * with another method is a 405 with the allowed methods. A `ct` kind is a 422, any other kind but `vm` a 400, and
 * a namespace the broker does not serve a 404, as if it did not exist.
 *
 * @example
 * ```ts
 * matchRoute({ method: 'POST', rawPath: '/api/vdi/pools/vm/corral-vms/devpool/claim', servedNamespaces: ['corral-vms'] });
 * // { kind: 'route', name: 'claim', params: { kind: 'vm', ns: 'corral-vms', pool: 'devpool' } }
 * ```
 * @category broker
 */
export function matchRoute(request: RouteRequest): RouteMatch {
  const { method, rawPath, servedNamespaces } = request;
  if (!rawPath.startsWith('/')) return { kind: 'not-broker' };
  const segments = rawPath.slice(1).split('/');
  if (!brokerPrefixes.has(segments.slice(0, 2).join('/'))) return { kind: 'not-broker' };
  const malformed = checkSegments(segments);
  if (malformed) return malformed;
  const candidates = table.filter((route) => fits(route.segments, segments));
  if (candidates.length === 0)
    return reject('NOT_FOUND', `There is no broker route ${rawPath}; see GET /api/vdi/openapi.json.`);
  const route = candidates.find((candidate) => candidate.method === method);
  if (!route) {
    const allow = [...new Set(candidates.map((candidate) => candidate.method))];
    return {
      kind: 'reject',
      code: 'METHOD_NOT_ALLOWED',
      message: `${method} is not allowed on ${rawPath}; use ${allow.join(' or ')}.`,
      allow,
    };
  }
  const values = Object.fromEntries(
    route.segments.flatMap((part, index) => {
      const name = parameterName(part);
      return name === undefined ? [] : [[name, segments[index] ?? '']];
    }),
  );
  const checked = checkParams(route.params, values, servedNamespaces);
  return checked.ok
    ? { kind: 'route', name: route.name, params: checked.params }
    : reject(checked.code, checked.message);
}
