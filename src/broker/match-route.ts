import { isValidVmName, maxPoolNameLength } from '../claims/object-names.js';
import type { VdiErrorCode } from '../errors.js';

/**
 * One broker route with its validated parameters.
 *
 * @category broker
 */
export type BrokerRoute =
  | { name: 'list-pools' }
  | { name: 'claim'; namespace: string; pool: string }
  | { name: 'list-desktops' }
  | { name: 'get-desktop'; namespace: string; member: string }
  | { name: 'start'; namespace: string; member: string }
  | { name: 'release'; namespace: string; member: string }
  | { name: 'connect'; namespace: string; member: string }
  | { name: 'openapi' }
  | { name: 'get-task'; id: string }
  | { name: 'task-log' };

/**
 * What {@link matchRoute} decided about a request line.
 *
 * - `route`: a broker route, with parameters that passed validation.
 * - `reject`: a broker path the request may not use as it is; `allow` lists the methods of a 405.
 * - `not-broker`: the path is none of the broker's (another `/api` route of a host application, or none).
 *
 * @category broker
 */
export type RouteMatch =
  | { kind: 'route'; route: BrokerRoute }
  | { kind: 'reject'; code: VdiErrorCode; message: string; allow?: string[] }
  | { kind: 'not-broker' };

/** Input of {@link matchRoute}. @category broker */
export interface RouteRequest {
  method: string;
  /** The path exactly as the client sent it, still percent-encoded, without the query. */
  rawPath: string;
  /** The namespaces the broker serves; any other answers as if absent. */
  servedNamespaces: readonly string[];
}

const dnsLabelPattern = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const taskIdPattern = /^[a-z0-9]([-.a-z0-9]{0,398}[a-z0-9])?$/;

type Shape = {
  method: 'GET' | 'POST';
  segments: readonly string[];
  build: (params: Record<string, string>) => BrokerRoute;
};

// `:kind`, `:ns`, `:pool`, `:member` and `:id` are parameters; everything else is literal.
const shapes: readonly Shape[] = [
  { method: 'GET', segments: ['api', 'vdi', 'pools'], build: () => ({ name: 'list-pools' }) },
  {
    method: 'POST',
    segments: ['api', 'vdi', 'pools', ':kind', ':ns', ':pool', 'claim'],
    build: (p) => ({ name: 'claim', namespace: p.ns ?? '', pool: p.pool ?? '' }),
  },
  { method: 'GET', segments: ['api', 'vdi', 'desktops'], build: () => ({ name: 'list-desktops' }) },
  {
    method: 'GET',
    segments: ['api', 'vdi', 'desktops', ':kind', ':ns', ':member'],
    build: (p) => ({ name: 'get-desktop', namespace: p.ns ?? '', member: p.member ?? '' }),
  },
  {
    method: 'POST',
    segments: ['api', 'vdi', 'desktops', ':kind', ':ns', ':member', 'start'],
    build: (p) => ({ name: 'start', namespace: p.ns ?? '', member: p.member ?? '' }),
  },
  {
    method: 'POST',
    segments: ['api', 'vdi', 'desktops', ':kind', ':ns', ':member', 'release'],
    build: (p) => ({ name: 'release', namespace: p.ns ?? '', member: p.member ?? '' }),
  },
  {
    method: 'GET',
    segments: ['api', 'vdi', 'desktops', ':kind', ':ns', ':member', 'connect'],
    build: (p) => ({ name: 'connect', namespace: p.ns ?? '', member: p.member ?? '' }),
  },
  { method: 'GET', segments: ['api', 'vdi', 'openapi.json'], build: () => ({ name: 'openapi' }) },
  { method: 'GET', segments: ['api', 'tasks', ':id'], build: (p) => ({ name: 'get-task', id: p.id ?? '' }) },
  { method: 'GET', segments: ['api', 'tasklog'], build: () => ({ name: 'task-log' }) },
];

// A desktop ID has the parameters of a desktop path without its prefix.
const desktopIdShape: Shape = {
  method: 'GET',
  segments: [':kind', ':ns', ':member'],
  build: (p) => ({ name: 'get-desktop', namespace: p.ns ?? '', member: p.member ?? '' }),
};

// Under /api/vdi/, or the task routes.
function isBrokerPath(segments: readonly string[]): boolean {
  const [first, second] = segments;
  return first === 'api' && (second === 'vdi' || second === 'tasks' || second === 'tasklog');
}

function reject(code: VdiErrorCode, message: string): RouteMatch {
  return { kind: 'reject', code, message };
}

function fits(shape: Shape, segments: readonly string[]): boolean {
  return (
    shape.segments.length === segments.length &&
    shape.segments.every((part, index) => part.startsWith(':') || part === segments[index])
  );
}

// Checks the parameters in path order, so the first bad one names the problem.
function checkParameters(shape: Shape, segments: readonly string[], served: readonly string[]): RouteMatch {
  const params: Record<string, string> = {};
  for (const [index, part] of shape.segments.entries()) {
    if (!part.startsWith(':')) continue;
    const value = segments[index] ?? '';
    const name = part.slice(1);
    params[name] = value;
    switch (name) {
      case 'kind':
        if (value === 'ct') {
          return reject(
            'UNSUPPORTED_BACKEND',
            'CT pools are not served by this SDK; only VM pools (kind "vm") are. Use an ID such as vm/corral-vms/devpool.',
          );
        }
        if (value !== 'vm')
          return reject(
            'INVALID_INPUT',
            `"${value}" is not a desktop kind; use "vm", as in vm/corral-vms/devpool.`,
          );
        break;
      case 'ns':
        if (value.length > 63 || !dnsLabelPattern.test(value)) {
          return reject(
            'INVALID_INPUT',
            `"${value}" is not a valid namespace name (a DNS-1123 label such as corral-vms).`,
          );
        }
        if (!served.includes(value))
          return reject('NOT_FOUND', `Namespace "${value}" has no pools this broker serves.`);
        break;
      case 'pool':
        if (value.length > maxPoolNameLength || !dnsLabelPattern.test(value)) {
          return reject(
            'INVALID_INPUT',
            `"${value}" is not a valid pool name; use 1 to ${maxPoolNameLength} lowercase letters, digits and "-", such as devpool.`,
          );
        }
        break;
      case 'member':
        if (!isValidVmName(value))
          return reject(
            'INVALID_INPUT',
            `"${value}" is not a valid member name; use a VM name such as devpool-1.`,
          );
        break;
      case 'id':
        if (!taskIdPattern.test(value))
          return reject('INVALID_INPUT', `"${value}" is not a task ID; use the ID a release answered with.`);
        break;
    }
  }
  return { kind: 'route', route: shape.build(params) };
}

/** What {@link parseDesktopId} decided. @category broker */
export type DesktopIdMatch =
  | { kind: 'desktop'; namespace: string; member: string }
  | { kind: 'reject'; code: VdiErrorCode; message: string };

/**
 * Parses and checks a desktop ID `vm/<namespace>/<member>` by the same rules as the routes' path parameters.
 *
 * @example
 * ```ts
 * parseDesktopId('vm/corral-vms/devpool-1', ['corral-vms']); // { kind: 'desktop', namespace: 'corral-vms', member: 'devpool-1' }
 * ```
 * @category broker
 */
export function parseDesktopId(id: string, servedNamespaces: readonly string[]): DesktopIdMatch {
  const segments = id.split('/');
  if (segments.length !== 3 || checkSegments(segments)) {
    return {
      kind: 'reject',
      code: 'INVALID_INPUT',
      message: `"${id}" is not a desktop ID; use vm/<namespace>/<member>, such as vm/corral-vms/devpool-1.`,
    };
  }
  const match = checkParameters(desktopIdShape, segments, servedNamespaces);
  if (match.kind === 'route' && match.route.name === 'get-desktop') {
    return { kind: 'desktop', namespace: match.route.namespace, member: match.route.member };
  }
  return match.kind === 'reject'
    ? { kind: 'reject', code: match.code, message: match.message }
    : { kind: 'reject', code: 'INVALID_INPUT', message: `"${id}" is not a desktop ID.` };
}

// The first segment that no ID may contain, as a rejection.
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
 * Matches a request line to a broker route and validates its IDs, before anything reads the cluster.
 *
 * The raw path is checked first: a `.` or `..` segment (also percent-encoded), an encoded slash or backslash,
 * any other percent-encoding in an ID, or an empty segment is a 400, never normalised into another path. A
 * known path with another method is a 405 with the allowed methods. A `ct` kind is a 422, any other kind but
 * `vm` a 400, and a namespace the broker does not serve a 404, as if it did not exist.
 *
 * @example
 * ```ts
 * matchRoute({ method: 'POST', rawPath: '/api/vdi/pools/vm/corral-vms/devpool/claim', servedNamespaces: ['corral-vms'] });
 * // { kind: 'route', route: { name: 'claim', namespace: 'corral-vms', pool: 'devpool' } }
 * ```
 * @category broker
 */
export function matchRoute(request: RouteRequest): RouteMatch {
  const { method, rawPath, servedNamespaces } = request;
  if (!rawPath.startsWith('/')) return { kind: 'not-broker' };
  const segments = rawPath.slice(1).split('/');
  if (!isBrokerPath(segments)) return { kind: 'not-broker' };
  const malformed = checkSegments(segments);
  if (malformed) return malformed;
  const candidates = shapes.filter((shape) => fits(shape, segments));
  if (candidates.length === 0)
    return reject('NOT_FOUND', `There is no broker route ${rawPath}; see GET /api/vdi/openapi.json.`);
  const shape = candidates.find((candidate) => candidate.method === method);
  if (!shape) {
    const allow = [...new Set(candidates.map((candidate) => candidate.method))];
    return {
      kind: 'reject',
      code: 'METHOD_NOT_ALLOWED',
      message: `${method} is not allowed on ${rawPath}; use ${allow.join(' or ')}.`,
      allow,
    };
  }
  return checkParameters(shape, segments, servedNamespaces);
}
