import { z } from 'zod';
import { componentRegistry } from './schemas.js';

type Json = Record<string, unknown>;

const ref = (id: string): Json => ({ $ref: `#/components/schemas/${id}` });

const json = (id: string, description: string): Json => ({
  description,
  content: { 'application/json': { schema: ref(id) } },
});

const errorAnswers = (entries: Record<number, string>): Json =>
  Object.fromEntries(
    Object.entries(entries).map(([status, description]) => [status, json('Error', description)]),
  );

const common = {
  401: 'No identity: the request did not come through a trusted identity provider.',
  403: 'A service identity, or a caller who is neither the holder nor an admin.',
  404: 'The broker is off, or the namespace is not served, or the object does not exist.',
};

const pathParameter = (name: string, description: string, schema: Json): Json => ({
  name,
  in: 'path',
  required: true,
  description,
  schema,
});

const kindParameter = pathParameter('kind', 'The backend; only `vm` is served (`ct` answers 422).', {
  type: 'string',
  enum: ['vm'],
});
const namespaceParameter = pathParameter('ns', 'A namespace the broker serves.', {
  type: 'string',
  pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
  maxLength: 63,
});
const memberParameter = pathParameter('member', 'The member VM, such as devpool-1.', {
  type: 'string',
  maxLength: 253,
});
const desktopParameters = [kindParameter, namespaceParameter, memberParameter];

const actionBody: Json = {
  required: false,
  content: { 'application/json': { schema: ref('ActionBody') } },
};

const desktopErrors = errorAnswers({
  400: 'A malformed ID, an unknown kind or invalid JSON.',
  ...common,
  405: 'Another method than the route takes; see the Allow header.',
  413: 'A body over 16 KiB.',
  422: 'A CT desktop: this SDK serves VM pools only.',
});

function paths(): Json {
  return {
    '/api/vdi/pools': {
      get: {
        operationId: 'listPools',
        summary: 'The served pools with member, claimed and free counts.',
        responses: { 200: json('PoolList', 'The pools.'), ...errorAnswers(common) },
      },
    },
    '/api/vdi/pools/{kind}/{ns}/{pool}/claim': {
      post: {
        operationId: 'claim',
        summary:
          'Claims a free member for the caller and starts it; a retry returns the desktop the caller holds.',
        parameters: [
          kindParameter,
          namespaceParameter,
          pathParameter('pool', 'The pool name.', { type: 'string', maxLength: 50 }),
        ],
        requestBody: actionBody,
        responses: {
          200: json('ClaimedDesktop', 'The claimed desktop; `startError` is set when it did not start.'),
          ...desktopErrors,
          ...errorAnswers({ 409: 'The pool has no free member.' }),
        },
      },
    },
    '/api/vdi/desktops': {
      get: {
        operationId: 'listDesktops',
        summary: "The caller's desktops; `?all=1` lists every user's (admins only).",
        parameters: [
          { name: 'all', in: 'query', required: false, schema: { type: 'string', enum: ['0', '1'] } },
        ],
        responses: {
          200: json('DesktopList', 'The desktops.'),
          ...errorAnswers({ 400: 'A bad query value.', ...common }),
        },
      },
    },
    '/api/vdi/desktops/{kind}/{ns}/{member}': {
      get: {
        operationId: 'getDesktop',
        summary: 'One desktop (holder or admin).',
        parameters: desktopParameters,
        responses: { 200: json('Desktop', 'The desktop.'), ...desktopErrors },
      },
    },
    '/api/vdi/desktops/{kind}/{ns}/{member}/start': {
      post: {
        operationId: 'startDesktop',
        summary: 'Starts the desktop (holder or admin); a running desktop is left alone.',
        parameters: desktopParameters,
        requestBody: actionBody,
        responses: {
          200: json('Desktop', 'The desktop after the start.'),
          ...desktopErrors,
          ...errorAnswers({
            409: 'The claim expired; claim the pool again.',
            502: 'The start failed; the claim stays.',
          }),
        },
      },
    },
    '/api/vdi/desktops/{kind}/{ns}/{member}/release': {
      post: {
        operationId: 'releaseDesktop',
        summary: 'Releases the desktop (holder or admin) in a task: the VM stops and keeps its disks.',
        parameters: desktopParameters,
        requestBody: actionBody,
        responses: { 202: json('ReleaseAccepted', 'The release runs; poll the task.'), ...desktopErrors },
      },
    },
    '/api/vdi/desktops/{kind}/{ns}/{member}/connect': {
      get: {
        operationId: 'connectDesktop',
        summary: 'The console to use (holder or admin), probed again on every call.',
        parameters: desktopParameters,
        responses: {
          200: json('ConnectAnswer', 'The target console, the fallbacks and what was skipped.'),
          ...desktopErrors,
          ...errorAnswers({
            409: 'The claim expired (claim again) or the desktop is stopped (start it first).',
          }),
        },
      },
    },
    '/api/vdi/openapi.json': {
      get: {
        operationId: 'openapi',
        summary: 'This document.',
        responses: {
          200: { description: 'The OpenAPI 3.1 document.', content: { 'application/json': {} } },
          ...errorAnswers(common),
        },
      },
    },
    '/api/tasks/{id}': {
      get: {
        operationId: 'getTask',
        summary: 'A task the caller started (admins: any task).',
        parameters: [pathParameter('id', 'The task ID a release answered with.', { type: 'string' })],
        responses: {
          200: json('Task', 'The task.'),
          ...errorAnswers({ 400: 'A malformed task ID.', ...common }),
        },
      },
    },
    '/api/tasklog': {
      get: {
        operationId: 'taskLog',
        summary: 'The task log: admins see every record, users their own (where they acted).',
        responses: { 200: json('TaskLog', 'The records, oldest first.'), ...errorAnswers(common) },
      },
    },
  };
}

function components(): Json {
  const { schemas } = z.toJSONSchema(componentRegistry, {
    target: 'draft-2020-12',
    uri: (id) => `#/components/schemas/${id}`,
  }) as { schemas: Record<string, Json> };
  // Inside an OpenAPI document the components are plain schemas, without their own $schema and $id.
  const plain = Object.entries(schemas).map(([id, { $schema: _schema, $id: _id, ...schema }]) => [
    id,
    schema,
  ]);
  return { schemas: Object.fromEntries(plain.sort(([a], [b]) => String(a).localeCompare(String(b)))) };
}

/**
 * The OpenAPI 3.1 document of the broker's routes, generated from the zod schemas the broker answers with.
 * The broker serves it at `GET /api/vdi/openapi.json`.
 *
 * @example
 * ```ts
 * writeFileSync('openapi.json', `${JSON.stringify(buildOpenApiDocument(), null, 2)}\n`);
 * ```
 * @category broker
 */
export function buildOpenApiDocument(): Record<string, unknown> {
  return {
    openapi: '3.1.0',
    info: {
      title: '@corral/vdi self-service broker',
      version: '1',
      description:
        'Claim, start, connect to and release desktops of VM pools. The caller is identified by the request ' +
        'pipeline (a trusted proxy header), never by a body or a query. Errors are `{ error: { code, message } }`.',
    },
    paths: paths(),
    components: components(),
  };
}
