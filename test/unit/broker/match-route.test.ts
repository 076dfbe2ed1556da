import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { matchRoute } from '../../../src/broker/match-route.js';

const served = ['corral-vms', 'team-a'];
const match = (method: string, rawPath: string) => matchRoute({ method, rawPath, servedNamespaces: served });

describe('matchRoute', () => {
  it.each([
    ['GET', '/api/vdi/pools', 'listPools', {}],
    [
      'POST',
      '/api/vdi/pools/vm/corral-vms/devpool/claim',
      'claim',
      { kind: 'vm', ns: 'corral-vms', pool: 'devpool' },
    ],
    ['GET', '/api/vdi/desktops', 'listDesktops', {}],
    [
      'GET',
      '/api/vdi/desktops/vm/team-a/devpool-1',
      'getDesktop',
      { kind: 'vm', ns: 'team-a', member: 'devpool-1' },
    ],
    [
      'POST',
      '/api/vdi/desktops/vm/corral-vms/devpool-1/start',
      'startDesktop',
      { kind: 'vm', ns: 'corral-vms', member: 'devpool-1' },
    ],
    [
      'POST',
      '/api/vdi/desktops/vm/corral-vms/devpool-1/release',
      'releaseDesktop',
      { kind: 'vm', ns: 'corral-vms', member: 'devpool-1' },
    ],
    [
      'GET',
      '/api/vdi/desktops/vm/corral-vms/devpool-1/connect',
      'connectDesktop',
      { kind: 'vm', ns: 'corral-vms', member: 'devpool-1' },
    ],
    ['GET', '/api/vdi/openapi.json', 'openapi', {}],
    [
      'GET',
      '/api/tasks/vdi-release-corral-vms-devpool-1-0a1b2c',
      'getTask',
      { id: 'vdi-release-corral-vms-devpool-1-0a1b2c' },
    ],
    ['GET', '/api/tasklog', 'taskLog', {}],
  ])('routes %s %s to %s', (method, rawPath, name, params) => {
    expect(match(method, rawPath)).toEqual({ kind: 'route', name, params });
  });

  it.each([
    ['DELETE', '/api/vdi/pools', ['GET']],
    ['GET', '/api/vdi/pools/vm/corral-vms/devpool/claim', ['POST']],
    ['PUT', '/api/vdi/desktops/vm/corral-vms/devpool-1/release', ['POST']],
    ['POST', '/api/vdi/desktops/vm/corral-vms/devpool-1', ['GET']],
    ['POST', '/api/tasklog', ['GET']],
  ])('answers %s %s with 405 and the allowed methods', (method, rawPath, allow) => {
    expect(match(method, rawPath)).toMatchObject({ kind: 'reject', code: 'METHOD_NOT_ALLOWED', allow });
  });

  it.each([
    ['/api/vdi/desktops/vm/corral-vms/../devpool-1', 'path traversal'],
    ['/api/vdi/desktops/vm/corral-vms/%2e%2e/devpool-1', 'path traversal'],
    ['/api/vdi/desktops/vm/corral-vms/.', 'path traversal'],
    ['/api/vdi/desktops/vm/corral-vms%2Fother/devpool-1', 'encoded slash'],
    ['/api/vdi/desktops/vm/corral-vms/devpool%5c1', 'encoded slash'],
    ['/api/vdi/desktops/vm/corral-vms/devpool%2D1', 'percent-encoded'],
    ['/api/vdi/desktops/vm//devpool-1', 'empty segment'],
    ['/api/vdi/pools/', 'empty segment'],
    ['/api/vdi/desktops/vm/Corral_VMs/devpool-1', 'namespace name'],
    ['/api/vdi/desktops/vm/corral-vms/DevPool-1', 'member name'],
    ['/api/vdi/desktops/vm/corral-vms/-devpool', 'member name'],
    [`/api/vdi/pools/vm/corral-vms/${'p'.repeat(51)}/claim`, 'pool name'],
    ['/api/vdi/desktops/pod/corral-vms/devpool-1', 'not a desktop kind'],
    ['/api/tasks/Not_A_Task', 'not a task ID'],
  ])('rejects %s as malformed (%s)', (rawPath, reason) => {
    const method = rawPath.endsWith('/claim') ? 'POST' : 'GET';
    const result = match(method, rawPath);
    expect(result).toMatchObject({ kind: 'reject', code: 'INVALID_INPUT' });
    expect(result.kind === 'reject' && result.message).toContain(reason);
  });

  it('routes the ct kind beside vm, and refuses any other kind as invalid', () => {
    expect(match('POST', '/api/vdi/pools/ct/corral-vms/devbox/claim')).toEqual({
      kind: 'route',
      name: 'claim',
      params: { kind: 'ct', ns: 'corral-vms', pool: 'devbox' },
    });
    const result = match('POST', '/api/vdi/pools/pod/corral-vms/devbox/claim');
    expect(result).toMatchObject({ kind: 'reject', code: 'INVALID_INPUT' });
    expect(result.kind === 'reject' && result.message).toContain('"pod" is not a desktop kind');
  });

  it('answers a namespace it does not serve as absent', () => {
    expect(match('GET', '/api/vdi/desktops/vm/kube-system/devpool-1')).toMatchObject({
      kind: 'reject',
      code: 'NOT_FOUND',
    });
  });

  it('answers an unknown broker path with 404 and other paths as not the broker', () => {
    expect(match('GET', '/api/vdi/nothing')).toMatchObject({ kind: 'reject', code: 'NOT_FOUND' });
    expect(match('GET', '/api/vms')).toEqual({ kind: 'not-broker' });
    expect(match('GET', '/index.html')).toEqual({ kind: 'not-broker' });
  });

  it('never routes a path with a dot segment, whatever surrounds it', () => {
    const segment = fc.stringMatching(/^[a-z0-9-]{1,12}$/);
    fc.assert(
      fc.property(
        fc.array(segment, { maxLength: 6 }),
        fc.constantFrom('..', '.', '%2e%2e', '%2E.', '.%2e'),
        fc.nat(6),
        (parts, dots, at) => {
          const segments = ['api', 'vdi', ...parts];
          segments.splice(2 + Math.min(at, parts.length), 0, dots);
          const result = match('GET', `/${segments.join('/')}`);
          expect(result.kind).toBe('reject');
        },
      ),
    );
  });

  it('routes only valid names to desktop routes', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 20 }), (member) => {
        const result = match('GET', `/api/vdi/desktops/vm/corral-vms/${member}`);
        if (result.kind === 'route')
          expect(result).toEqual({
            kind: 'route',
            name: 'getDesktop',
            params: { kind: 'vm', ns: 'corral-vms', member },
          });
        if (result.kind === 'route') expect(member).toMatch(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/);
      }),
    );
  });
});
