import { describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { memberParam, namespaceParam } from '../../../src/broker/input-rules.js';
import { defineRoute, type PathParamNames } from '../../../src/broker/route-declaration.js';
import { routes } from '../../../src/broker/routes.js';

const response = { status: 200, description: 'A test answer.', schema: z.object({}) } as const;

describe('defineRoute', () => {
  it('reads the parameter names of a path', () => {
    expectTypeOf<PathParamNames<'/api/vdi/desktops/{kind}/{ns}/{member}/start'>>().toEqualTypeOf<
      'kind' | 'ns' | 'member'
    >();
    expectTypeOf<PathParamNames<'/api/vdi/pools'>>().toEqualTypeOf<never>();
  });

  it('keeps the literal method, status and auth of a route', () => {
    expectTypeOf(routes.releaseDesktop.response.status).toEqualTypeOf<202>();
    expectTypeOf(routes.getDesktop.auth).toEqualTypeOf<'holder-or-admin'>();
    expect(routes.releaseDesktop).toMatchObject({ method: 'POST', auth: 'holder-or-admin' });
  });

  it('needs a rule for every path parameter', () => {
    const declare = () =>
      defineRoute({
        method: 'GET',
        path: '/x/{ns}/{member}',
        auth: 'user',
        summary: 'x',
        // @ts-expect-error: {member} has no rule
        params: { ns: namespaceParam },
        response,
      });
    expect(declare().params).toEqual({ ns: namespaceParam });
  });

  it('allows holder-or-admin only on a path that names a desktop', () => {
    const declare = () =>
      defineRoute({
        method: 'GET',
        path: '/x/{ns}',
        // @ts-expect-error: a path without {member} names no desktop
        auth: 'holder-or-admin',
        summary: 'x',
        params: { ns: namespaceParam },
        response,
      });
    expect(declare().auth).toBe('holder-or-admin');
    const desktop = defineRoute({
      method: 'GET',
      path: '/x/{ns}/{member}',
      auth: 'holder-or-admin',
      summary: 'x',
      params: { ns: namespaceParam, member: memberParam },
      response,
    });
    expectTypeOf(desktop.auth).toEqualTypeOf<'holder-or-admin'>();
  });
});
