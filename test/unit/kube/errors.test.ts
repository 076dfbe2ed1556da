import { ApiException } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { isVdiError, VdiError } from '../../../src/errors.js';
import { apiFailureOf, isConflictReason, toVdiError } from '../../../src/kube/errors.js';

function statusBody(code: number, reason: string, message: string): string {
  return JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message });
}

function apiError(code: number, body: string, headers: Record<string, string> = {}): ApiException<string> {
  return new ApiException(code, `HTTP ${code}`, body, headers);
}

const doing = 'start VirtualMachine corral-vms/devpool-1';

describe('apiFailureOf', () => {
  it('reads the status, reason and message from the JSON text of the body', () => {
    const failure = apiFailureOf(apiError(409, statusBody(409, 'Conflict', 'the object has been modified')));
    expect(failure).toEqual({
      status: 409,
      reason: 'Conflict',
      message: 'the object has been modified',
      retryAfterSeconds: undefined,
      isStatus: true,
    });
  });

  it('reads a Retry-After header in seconds', () => {
    const failure = apiFailureOf(
      apiError(429, statusBody(429, 'TooManyRequests', 'slow down'), { 'retry-after': '3' }),
    );
    expect(failure?.retryAfterSeconds).toBe(3);
  });

  it('keeps the start of a body that is not JSON as the message', () => {
    expect(apiFailureOf(apiError(404, '404 page not found\n'))).toMatchObject({
      status: 404,
      reason: '',
      message: '404 page not found\n',
      isStatus: false,
    });
  });

  it('is undefined for anything that is not an apiserver answer', () => {
    expect(apiFailureOf(new Error('boom'))).toBeUndefined();
    expect(apiFailureOf('boom')).toBeUndefined();
  });
});

describe('toVdiError', () => {
  it.each([
    [401, 'Unauthorized', 'UNAUTHENTICATED', false],
    [403, 'Forbidden', 'FORBIDDEN', false],
    [404, 'NotFound', 'NOT_FOUND', false],
    [409, 'AlreadyExists', 'CONFLICT', false],
    [409, 'Conflict', 'CONFLICT', false],
    [400, 'BadRequest', 'INVALID_INPUT', false],
    [422, 'Invalid', 'INVALID_INPUT', false],
    [429, 'TooManyRequests', 'CLUSTER_UNAVAILABLE', true],
    [500, 'InternalError', 'CLUSTER_UNAVAILABLE', true],
    [503, 'ServiceUnavailable', 'CLUSTER_UNAVAILABLE', true],
    [504, 'Timeout', 'CLUSTER_UNAVAILABLE', true],
    [418, 'Teapot', 'INTERNAL', false],
  ] as const)('translates a %i %s into %s (retryable: %s)', (status, reason, code, retryable) => {
    const cause = apiError(status, statusBody(status, reason, 'the apiserver said so'));
    const error = toVdiError(cause, doing);
    expect(error).toBeInstanceOf(VdiError);
    expect(error.code).toBe(code);
    expect(error.retryable).toBe(retryable);
    expect(error.details).toMatchObject({ status, reason });
    expect(error.cause).toBe(cause);
    expect(error.message).toMatch(
      /^Could not start VirtualMachine corral-vms\/devpool-1: the apiserver said so\./,
    );
  });

  it('ends a message that already ends in a full stop, as KubeVirt refusals do, without a second one', () => {
    const said =
      'admission webhook "virtualmachine-validator.kubevirt.io" denied the request: spec.template.spec.networks[0].name \'default\' not found.';
    const error = toVdiError(
      apiError(422, statusBody(422, 'Invalid', said)),
      'create VirtualMachine corral-vms/desk-1',
    );
    expect(error.message).toBe(`Could not create VirtualMachine corral-vms/desk-1: ${said}`);
  });

  it('says to grant the permission on a 403', () => {
    const error = toVdiError(apiError(403, statusBody(403, 'Forbidden', 'no')), doing);
    expect(error.message).toContain('Grant the caller that permission');
  });

  it('carries the Retry-After of a 429 in the details', () => {
    const error = toVdiError(
      apiError(429, statusBody(429, 'TooManyRequests', 'slow down'), { 'retry-after': '2' }),
      doing,
    );
    expect(error.details.retryAfterSeconds).toBe(2);
  });

  it('reads the bare "404 page not found" of an API group that is not served as a cluster outage, not a missing object', () => {
    const error = toVdiError(apiError(404, '404 page not found\n'), doing);
    expect(error.code).toBe('CLUSTER_UNAVAILABLE');
    expect(error.retryable).toBe(true);
    expect(error.message).toMatch(/does not serve this API right now/);
    expect(error.message).toMatch(/try again/);
    expect(error.details).toMatchObject({ status: 404 });
  });

  it("reads the aggregator's plain-text 503 as a cluster outage that says to wait and try again", () => {
    const error = toVdiError(apiError(503, 'service unavailable\n'), doing);
    expect(error.code).toBe('CLUSTER_UNAVAILABLE');
    expect(error.retryable).toBe(true);
    expect(error.message).toContain('service unavailable');
    expect(error.message).toMatch(/restarting.*try again/);
  });

  it('keeps a 404 with a NotFound status as a missing object', () => {
    const error = toVdiError(
      apiError(404, statusBody(404, 'NotFound', 'virtualmachines "x" not found')),
      doing,
    );
    expect(error.code).toBe('NOT_FOUND');
    expect(error.retryable).toBe(false);
  });

  it.each(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EAI_AGAIN', 'UND_ERR_SOCKET'])(
    'reads a %s anywhere in the cause chain as an apiserver that did not answer',
    (code) => {
      const cause = new Error('request failed', { cause: Object.assign(new Error('socket'), { code }) });
      const error = toVdiError(cause, doing);
      expect(error.code).toBe('CLUSTER_UNAVAILABLE');
      expect(error.retryable).toBe(true);
      expect(error.message).toContain('did not answer');
    },
  );

  it('reads a bare "fetch failed" and a FetchError as an apiserver that did not answer', () => {
    expect(toVdiError(new TypeError('fetch failed'), doing).code).toBe('CLUSTER_UNAVAILABLE');
    expect(toVdiError(Object.assign(new Error('x'), { name: 'FetchError' }), doing).code).toBe(
      'CLUSTER_UNAVAILABLE',
    );
  });

  it('turns anything else into INTERNAL with its message', () => {
    const error = toVdiError(new RangeError('bad length'), doing);
    expect(error.code).toBe('INTERNAL');
    expect(error.retryable).toBe(false);
    expect(error.message).toBe(`Could not ${doing}: bad length`);
    expect(toVdiError('text', doing).message).toBe(`Could not ${doing}: text`);
  });

  it('returns a VdiError as it is', () => {
    const original = new VdiError('NOT_HOLDER', 'not yours');
    expect(toVdiError(original, doing)).toBe(original);
  });

  it('never puts a bearer token from the request into the message or details', () => {
    const cause = apiError(401, statusBody(401, 'Unauthorized', 'Unauthorized'), {
      authorization: 'Bearer secret-token',
    });
    const error = toVdiError(cause, doing);
    expect(error.message).not.toContain('secret-token');
    expect(JSON.stringify(error.details)).not.toContain('secret-token');
  });
});

describe('isConflictReason', () => {
  it('matches a translated 409 by its reason', () => {
    const exists = toVdiError(apiError(409, statusBody(409, 'AlreadyExists', 'exists')), doing);
    const stale = toVdiError(apiError(409, statusBody(409, 'Conflict', 'modified')), doing);
    expect(isConflictReason(exists, 'AlreadyExists')).toBe(true);
    expect(isConflictReason(exists, 'Conflict')).toBe(false);
    expect(isConflictReason(stale, 'Conflict')).toBe(true);
    expect(isConflictReason(new VdiError('NOT_HOLDER', 'x'), 'Conflict')).toBe(false);
    expect(isVdiError(stale, 'CONFLICT')).toBe(true);
  });
});
