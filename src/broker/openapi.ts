import * as z from 'zod/mini';
import { kindParam, maxBodyBytes } from './input-rules.js';
import type { RouteDeclaration } from './route-declaration.js';
import { routes } from './routes.js';
import { componentRegistry } from './schemas.js';

type Json = Record<string, unknown>;

type Paths = Record<string, Record<string, Json>>;

const ref = (id: string): Json => ({ $ref: `#/components/schemas/${id}` });

// A registered schema is a component; any other is written in place, without its own $schema.
function schemaOf(schema: z.core.$ZodType, io: 'input' | 'output'): Json {
  const id = componentRegistry.get(schema)?.id;
  if (id !== undefined) return ref(id);
  const { $schema: _schema, ...inline } = z.toJSONSchema(schema, { target: 'draft-2020-12', io }) as Json;
  return inline;
}

const json = (description: string, schema: Json): Json => ({
  description,
  content: { 'application/json': { schema } },
});

// A parameter's description belongs on the parameter, not inside its schema.
function parameter(name: string, where: 'path' | 'query', schema: z.core.$ZodType, required: boolean): Json {
  // Parameter rules never transform; their output (a `vm` kind, not any string) is what a client may send.
  const { description, ...rest } = schemaOf(schema, 'output');
  return { name, in: where, required, ...(description === undefined ? {} : { description }), schema: rest };
}

// What the router itself can answer, before or around the route's own work; a route anyone may call skips the identity.
function routerErrors(route: RouteDeclaration): Partial<Record<number, string>> {
  if (route.auth === 'none') return { 405: 'Another method than the route takes; see the Allow header.' };
  const params = Object.values<z.core.$ZodType>(route.params);
  const malformed = [
    params.length > 0 ? 'a malformed ID' : undefined,
    params.includes(kindParam) ? 'an unknown kind' : undefined,
    route.query ? 'a bad query value' : undefined,
    route.body ? 'a body that is not a JSON object' : undefined,
  ].filter((part) => part !== undefined);
  return {
    ...(malformed.length > 0 ? { 400: `Bad input: ${malformed.join(', ')}.` } : {}),
    401: 'No identity: the request did not come through a trusted identity provider.',
    ...(route.upgrade ? { 400: 'Not a websocket upgrade request, or a malformed ID or console.' } : {}),
    403:
      route.auth === 'holder-or-admin'
        ? 'A service identity, or a caller who is neither the holder nor an admin.'
        : 'A service identity.',
    404: 'The broker is off, or the namespace is not served, or the object does not exist.',
    405: 'Another method than the route takes; see the Allow header.',
    ...(route.body ? { 413: `A body over ${maxBodyBytes / 1024} KiB.` } : {}),
    ...(params.includes(kindParam) ? { 422: 'A CT desktop or pool: this SDK serves VM pools only.' } : {}),
  };
}

function operation(operationId: string, route: RouteDeclaration): Json {
  const parameters = [
    ...Object.entries<z.core.$ZodType>(route.params).map(([name, schema]) =>
      parameter(name, 'path', schema, true),
    ),
    ...Object.entries(route.query?.shape ?? {}).map(([name, schema]) =>
      parameter(name, 'query', schema, !z.safeParse(schema, undefined).success),
    ),
  ];
  const errors = { ...routerErrors(route), ...route.errors };
  return {
    operationId,
    summary: route.summary,
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(route.body
      ? {
          requestBody: {
            required: false,
            content: { 'application/json': { schema: schemaOf(route.body, 'input') } },
          },
        }
      : {}),
    responses: {
      [route.response.status]:
        'schema' in route.response
          ? json(route.response.description, schemaOf(route.response.schema, 'output'))
          : 'contentType' in route.response
            ? {
                description: route.response.description,
                content: { [route.response.contentType]: { schema: { type: 'string' } } },
              }
            : { description: route.response.description },
      ...(route.accepted
        ? {
            [route.accepted.status]: json(
              route.accepted.description,
              schemaOf(route.accepted.schema, 'output'),
            ),
          }
        : {}),
      ...Object.fromEntries(
        Object.entries(errors).map(([status, description]) => [status, json(description, ref('Error'))]),
      ),
    },
  };
}

function paths(): Paths {
  const paths: Paths = {};
  for (const [operationId, route] of Object.entries<RouteDeclaration>(routes)) {
    paths[route.path] = { ...paths[route.path], [route.method.toLowerCase()]: operation(operationId, route) };
  }
  return paths;
}

function components(): { schemas: Record<string, Json> } {
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
 * The OpenAPI 3.1 document of the broker, derived from its route table and the zod schemas the broker checks
 * requests and answers with. The broker serves it at `GET /api/vdi/openapi.json`; `npm run openapi` writes it
 * to `docs/openapi.json`.
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
        'pipeline (a trusted proxy header), never by a body or a query. Errors are `{ error: { code, message } }`. ' +
        'The probes and the metrics ask nobody who is calling. Every answer carries `X-Request-Id`: the one sent ' +
        'when it is a plain token of at most 128 characters, else a new one.',
    },
    paths: paths(),
    components: components(),
  };
}
