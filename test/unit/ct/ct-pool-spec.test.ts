import { describe, expect, it } from 'vitest';
import { extendedResourcesOf, parseCtPoolSpec } from '../../../src/ct/ct-pool-spec.js';
import { isVdiError } from '../../../src/errors.js';

const base = { name: 'devbox', image: 'ghcr.io/acme/devbox:1.4', size: 2 };

function fieldsOf(input: unknown): string[] {
  try {
    parseCtPoolSpec(input);
  } catch (error) {
    if (isVdiError(error, 'INVALID_INPUT')) return error.details.fields as string[];
    throw error;
  }
  return [];
}

describe('parseCtPoolSpec', () => {
  it('fills in the defaults: no env or labels, no resources, /bin/sh, and a home volume wiped on release', () => {
    expect(parseCtPoolSpec({ ...base, home: { size: '5Gi' } })).toEqual({
      ...base,
      env: {},
      resources: { requests: {}, limits: {} },
      home: { size: '5Gi', onRelease: 'wipe' },
      shell: '/bin/sh',
      labels: {},
    });
  });

  it.each([
    'ubuntu',
    'ubuntu:24.04',
    'library/ubuntu',
    'ghcr.io/acme/devbox:1.4',
    'registry.local:5000/team/desk_top-x:v2',
    `ghcr.io/acme/devbox@sha256:${'a'.repeat(64)}`,
    `ghcr.io/acme/devbox:1.4@sha256:${'0'.repeat(64)}`,
    `ghcr.io/acme/devbox@sha512:${'b'.repeat(128)}`,
    'localhost/devbox',
    '[::1]:5000/devbox',
    'Registry.Example.com/acme/devbox',
  ])('accepts the image reference %s', (image) => {
    expect(parseCtPoolSpec({ ...base, image }).image).toBe(image);
  });

  it.each([
    ['an upper-case repository', 'ghcr.io/Acme/devbox'],
    ['an upper-case first part, which runtimes take for a registry host', 'Acme/devbox:1.4'],
    ['an upper-case single name', 'Ubuntu'],
    ['an image ID', 'a'.repeat(64)],
    ['a digest of an unknown algorithm', `acme/devbox@md5:${'a'.repeat(32)}`],
    ['a tag that starts with a dot', 'acme/devbox:.1'],
    ['a registry host that ends in a dash', 'ghcr-.io/acme/devbox'],
    ['a scheme', 'https://ghcr.io/acme/devbox'],
    ['a space', 'acme/dev box'],
    ['an empty tag', 'acme/devbox:'],
    ['a short digest', 'acme/devbox@sha256:abc'],
    ['nothing', ''],
  ])('refuses an image reference with %s, naming the field', (_, image) => {
    expect(fieldsOf({ ...base, image })).toEqual(['image']);
  });

  it.each([
    [-1, ['size']],
    [1001, ['size']],
    [1.5, ['size']],
    ['3', ['size']],
  ])('refuses the size %s', (size, fields) => {
    expect(fieldsOf({ ...base, size })).toEqual(fields);
  });

  it.each([
    ['an unknown field', { ...base, imagePullPolcy: 'Always' }, ['imagePullPolcy']],
    ['two unknown fields', { ...base, replicas: 3, ports: [] }, ['replicas', 'ports']],
    ['an unknown nested field', { ...base, resources: { limit: { cpu: '1' } } }, ['resources.limit']],
    ['an unknown field of the home', { ...base, home: { size: '1Gi', class: 'fast' } }, ['home.class']],
    ['a misspelled resource', { ...base, resources: { limits: { cpus: '2' } } }, ['resources.limits.cpus']],
    ['a command that is no list', { ...base, command: 'bash' }, ['command']],
    ['an env value that is no string', { ...base, env: { PORT: 8080 } }, ['env.PORT']],
    ['a bad env name', { ...base, env: { '1X': 'a' } }, ['env.1X']],
    ['a bad quantity', { ...base, resources: { limits: { memory: 'lots' } } }, ['resources.limits.memory']],
    ['a bad resource name', { ...base, resources: { limits: { 'gpu!': '1' } } }, ['resources.limits.gpu!']],
    [
      'a fractional GPU',
      { ...base, resources: { limits: { 'nvidia.com/gpu': '500m' } } },
      ['resources.limits.nvidia.com/gpu'],
    ],
    [
      'an overcommitted GPU',
      { ...base, resources: { requests: { 'nvidia.com/gpu': '1' } } },
      ['resources.requests.nvidia.com/gpu'],
    ],
    ['a home without a size', { ...base, home: { onRelease: 'keep' } }, ['home.size']],
    ['an unknown release rule', { ...base, home: { size: '1Gi', onRelease: 'archive' } }, ['home.onRelease']],
    ['a relative shell', { ...base, shell: 'bash' }, ['shell']],
    ['a reserved label', { ...base, labels: { 'corral.dev/vdi-pool': 'x' } }, ['labels.corral.dev/vdi-pool']],
    ['a bad label value', { ...base, labels: { team: 'a b' } }, ['labels.team']],
    ['a bad pool name', { ...base, name: 'Dev Box' }, ['name']],
    ['a minReady above the size', { ...base, minReady: 3 }, ['minReady']],
    ['a negative minReady', { ...base, minReady: -1 }, ['minReady']],
    ['a minReady that is not whole', { ...base, minReady: 1.5 }, ['minReady']],
    ['an unknown reclaim action', { ...base, reclaimAction: 'hibernate' }, ['reclaimAction']],
    [
      'a webhook without notify',
      { ...base, reclaimWebhook: 'https://hooks.example.com/vdi' },
      ['reclaimWebhook'],
    ],
    [
      'a webhook that is not https',
      { ...base, reclaimAction: 'notify', reclaimWebhook: 'http://hooks.example.com/vdi' },
      ['reclaimWebhook'],
    ],
    [
      'a webhook with a password',
      { ...base, reclaimAction: 'notify', reclaimWebhook: 'https://u:p@hooks.example.com/vdi' },
      ['reclaimWebhook'],
    ],
    ['a negative idle timeout', { ...base, idleTimeoutMs: -1 }, ['idleTimeoutMs']],
    ['an idle timeout that is not whole', { ...base, idleTimeoutMs: 1.5 }, ['idleTimeoutMs']],
  ])('refuses %s, naming the field', (_, input, fields) => {
    expect(fieldsOf(input)).toEqual(fields);
  });

  it('takes a maxUnavailable from 1 to 100 for an image roll-out, and refuses another naming the field', () => {
    expect(parseCtPoolSpec({ ...base, maxUnavailable: 2 }).maxUnavailable).toBe(2);
    expect(parseCtPoolSpec(base).maxUnavailable).toBeUndefined();
    for (const maxUnavailable of [0, 101, 1.5, '2']) {
      expect(() => parseCtPoolSpec({ ...base, maxUnavailable })).toThrow(
        expect.objectContaining({
          code: 'INVALID_INPUT',
          details: expect.objectContaining({ fields: ['maxUnavailable'] }),
        }),
      );
    }
  });

  it('takes a schedule as a VM pool does, days and buffers written either way, and keeps it checked', () => {
    const spec = parseCtPoolSpec({
      ...base,
      schedule: {
        timeZone: 'Europe/Berlin',
        periods: [
          { name: 'peak', days: 'mon-fri', start: '08:00', end: '18:00', buffer: '20%', min: 2, max: 30 },
        ],
      },
    });
    expect(spec.schedule).toEqual({
      timeZone: 'Europe/Berlin',
      periods: [
        {
          name: 'peak',
          days: ['mon', 'tue', 'wed', 'thu', 'fri'],
          start: '08:00',
          end: '18:00',
          buffer: { percent: 20 },
          min: 2,
          max: 30,
          scaleToZero: false,
        },
      ],
    });
    // as stored and read again, it is the same schedule
    expect(parseCtPoolSpec(JSON.parse(JSON.stringify(spec))).schedule).toEqual(spec.schedule);
  });

  it.each([
    ['no periods', { timeZone: 'Europe/Berlin', periods: [] }, ['schedule.periods']],
    ['an unknown zone', { timeZone: 'Mars/Olympus', periods: [] }, ['schedule.timeZone']],
    [
      'a cap below the floor',
      {
        timeZone: 'UTC',
        periods: [{ name: 'peak', days: 'mon', start: '08:00', end: '09:00', buffer: 1, min: 3, max: 2 }],
      },
      ['schedule.periods[0].max'],
    ],
    ['a list', [], ['schedule']],
  ])('refuses a schedule with %s as INVALID_INPUT, naming the field', (_, schedule, fields) => {
    expect(fieldsOf({ ...base, schedule })).toEqual(fields);
  });

  it('keeps a minReady from 0 to the size', () => {
    expect(parseCtPoolSpec({ ...base, minReady: 2 }).minReady).toBe(2);
    expect(parseCtPoolSpec(base).minReady).toBeUndefined();
  });

  it('refuses stop for a container, saying why', () => {
    expect(fieldsOf({ ...base, reclaimAction: 'stop' })).toEqual(['reclaimAction']);
    expect(() => parseCtPoolSpec({ ...base, reclaimAction: 'stop' })).toThrow(
      /reclaimAction: a container cannot be stopped and kept .*use recreate or notify/,
    );
  });

  it('keeps the reclaim settings, and takes http to a loopback webhook only when allowed', () => {
    const notify = { ...base, reclaimAction: 'notify', reclaimWebhook: 'http://127.0.0.1:8080/hook' };
    expect(fieldsOf(notify)).toEqual(['reclaimWebhook']);
    expect(() => parseCtPoolSpec(notify)).toThrow(/only when allowed/);
    expect(parseCtPoolSpec(notify, { allowLoopbackHttpWebhook: true })).toMatchObject(notify);
    expect(parseCtPoolSpec({ ...base, reclaimAction: 'recreate', idleTimeoutMs: 0 })).toMatchObject({
      reclaimAction: 'recreate',
      idleTimeoutMs: 0,
    });
    expect(parseCtPoolSpec(base).reclaimAction).toBeUndefined();
  });

  it('says what an upper-case first part of an image is taken for, and what to write instead', () => {
    expect(() => parseCtPoolSpec({ ...base, image: 'Acme/devbox:1.4' })).toThrow(
      /image: starts with "Acme", which the container runtimes would take for a registry host .*\(acme\/devbox\)/,
    );
    expect(() => parseCtPoolSpec({ ...base, imagePullPolcy: 'Always' })).toThrow(
      /imagePullPolcy: unknown field/,
    );
  });

  it('says what to do and that nothing was written', () => {
    expect(() => parseCtPoolSpec({ ...base, size: -1 })).toThrow(/size: .*Nothing was written/);
  });

  it('counts extended resources per member, and only those', () => {
    const spec = parseCtPoolSpec({
      ...base,
      resources: { requests: { cpu: '500m' }, limits: { cpu: '2', memory: '4Gi', 'nvidia.com/gpu': '2' } },
    });
    expect(extendedResourcesOf(spec)).toEqual({ 'nvidia.com/gpu': 2 });
  });
});
