import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../../../src/broker/openapi.js';

const committed = resolve(import.meta.dirname, '../../../docs/openapi.json');
const generated = `${JSON.stringify(buildOpenApiDocument(), null, 2)}\n`;

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
      'GET /api/vdi/desktops',
      'GET /api/vdi/desktops/{kind}/{ns}/{member}',
      'POST /api/vdi/desktops/{kind}/{ns}/{member}/start',
      'POST /api/vdi/desktops/{kind}/{ns}/{member}/release',
      'GET /api/vdi/desktops/{kind}/{ns}/{member}/connect',
      'GET /api/vdi/openapi.json',
      'GET /api/tasks/{id}',
      'GET /api/tasklog',
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

  // Regenerate with: UPDATE_OPENAPI=1 npx vitest run --project unit test/unit/broker/openapi.test.ts
  it('matches docs/openapi.json', () => {
    if (process.env.UPDATE_OPENAPI === '1') writeFileSync(committed, generated);
    expect(
      readFileSync(committed, 'utf8'),
      'docs/openapi.json is stale: regenerate it with UPDATE_OPENAPI=1',
    ).toBe(generated);
  });
});
