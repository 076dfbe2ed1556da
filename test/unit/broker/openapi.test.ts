import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../../../src/broker/openapi.js';

describe('the OpenAPI document', () => {
  it('is an OpenAPI 3.1 document of every broker route', () => {
    const document = buildOpenApiDocument() as {
      openapi: string;
      paths: Record<string, Record<string, unknown>>;
    };
    expect(document.openapi).toBe('3.1.0');
    expect(
      Object.entries(document.paths).flatMap(([path, methods]) =>
        Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`),
      ),
    ).toEqual([
      'GET /api/vdi/pools',
      'POST /api/vdi/pools/{kind}/{ns}/{pool}/claim',
      'GET /api/vdi/waiters/{kind}/{ns}/{pool}/{waiter}',
      'DELETE /api/vdi/waiters/{kind}/{ns}/{pool}/{waiter}',
      'GET /api/vdi/desktops',
      'GET /api/vdi/desktops/{kind}/{ns}/{member}',
      'POST /api/vdi/desktops/{kind}/{ns}/{member}/start',
      'POST /api/vdi/desktops/{kind}/{ns}/{member}/release',
      'GET /api/vdi/desktops/{kind}/{ns}/{member}/connect',
      'POST /api/vdi/desktops/{kind}/{ns}/{member}/console/rdp/token',
      'GET /api/vdi/desktops/{kind}/{ns}/{member}/console/{protocol}',
      'GET /api/vdi/openapi.json',
      'GET /api/tasks/{id}',
      'GET /api/tasklog',
      'GET /healthz',
      'GET /readyz',
      'GET /metrics',
    ]);
  });

  it('asks no identity of the probes and the metrics, and answers the metrics as text', () => {
    const { paths } = buildOpenApiDocument() as {
      paths: Record<string, { get: { responses: Record<string, { content?: object }> } }>;
    };
    for (const path of ['/healthz', '/readyz', '/metrics']) {
      expect(Object.keys(paths[path]?.get.responses ?? {})).not.toContain('401');
    }
    expect(paths['/readyz']?.get.responses['503']).toBeDefined();
    expect(Object.keys(paths['/metrics']?.get.responses['200']?.content ?? {})).toEqual([
      'text/plain; version=0.0.4; charset=utf-8',
    ]);
  });

  it('refers only to components it defines', () => {
    const text = JSON.stringify(buildOpenApiDocument());
    const defined = Object.keys(
      (buildOpenApiDocument() as { components: { schemas: object } }).components.schemas,
    );
    const referred = [...text.matchAll(/"#\/components\/schemas\/([^"]+)"/g)].map((found) => found[1]);
    expect(referred.filter((id) => !defined.includes(id as string))).toEqual([]);
    expect(defined).toEqual(
      expect.arrayContaining(['Desktop', 'ClaimedDesktop', 'Pool', 'Task', 'Error', 'ConnectAnswer']),
    );
  });

  // `npm run openapi` rewrites the file; without it, a difference fails here.
  it('matches docs/openapi.json', async () => {
    await expect(`${JSON.stringify(buildOpenApiDocument(), null, 2)}\n`).toMatchFileSnapshot(
      '../../../docs/openapi.json',
    );
  });
});
