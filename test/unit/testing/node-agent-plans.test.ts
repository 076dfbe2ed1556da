import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { planBinding } from '../../../src/testing/node-agent/plan-binding.js';
import { nodeAgentAnnotations, readPodKnobs } from '../../../src/testing/node-agent/pod-knobs.js';
import { type ContainerView, planPodStatus } from '../../../src/testing/node-agent/pod-status.js';
import { endStatus, readTerminalSize } from '../../../src/testing/node-agent/stream-protocol.js';

function node(
  name: string,
  allocatable: Record<string, string> = {},
  labels: Record<string, string> = {},
): V1Node {
  return {
    metadata: { name, labels },
    status: { allocatable, conditions: [{ type: 'Ready', status: 'True' }] },
  };
}

function pod(
  name: string,
  limits: Record<string, string> = {},
  nodeSelector?: Record<string, string>,
): V1Pod {
  return {
    metadata: { name, namespace: 'n' },
    spec: { nodeSelector, containers: [{ name: 'main', resources: { limits } }] },
  };
}

describe('planBinding', () => {
  it('picks the node with the fewest Pods among those that fit, by name on a tie', () => {
    const nodes = [node('b'), node('a'), node('c')];
    expect(planBinding(pod('p'), nodes, [])).toEqual({ kind: 'bind', nodeName: 'a' });
    expect(planBinding(pod('p'), nodes, [{ pod: pod('q'), nodeName: 'a' }])).toEqual({
      kind: 'bind',
      nodeName: 'b',
    });
  });

  it('counts extended resources against allocatable, less what unfinished Pods on the node ask for', () => {
    const nodes = [node('gpu', { 'example.com/gpu': '2' }), node('plain')];
    const wants = pod('p', { 'example.com/gpu': '1' });
    const holder = pod('h', { 'example.com/gpu': '1' });
    expect(planBinding(wants, nodes, [{ pod: holder, nodeName: 'gpu' }])).toEqual({
      kind: 'bind',
      nodeName: 'gpu',
    });
    const full = [
      { pod: holder, nodeName: 'gpu' },
      { pod: pod('h2', { 'example.com/gpu': '1' }), nodeName: 'gpu' },
    ];
    expect(planBinding(wants, nodes, full)).toEqual({
      kind: 'unschedulable',
      message: '0/2 nodes are available: 2 Insufficient example.com/gpu.',
    });
    const finished = { ...pod('h2', { 'example.com/gpu': '1' }), status: { phase: 'Succeeded' } };
    expect(
      planBinding(wants, nodes, [
        { pod: holder, nodeName: 'gpu' },
        { pod: finished, nodeName: 'gpu' },
      ]),
    ).toMatchObject({
      kind: 'bind',
    });
  });

  it('ignores cpu and memory, which the machine itself provides', () => {
    expect(planBinding(pod('p', { cpu: '64', memory: '1Ti' }), [node('a')], [])).toEqual({
      kind: 'bind',
      nodeName: 'a',
    });
  });

  it('says why no node fits: selector, readiness, schedulability', () => {
    const notReady: V1Node = { metadata: { name: 'x' }, status: { conditions: [] } };
    const cordoned: V1Node = { ...node('y'), spec: { unschedulable: true } };
    expect(planBinding(pod('p', {}, { zone: 'a' }), [node('a'), notReady, cordoned], [])).toEqual({
      kind: 'unschedulable',
      message:
        "0/3 nodes are available: 1 node(s) didn't match node selector, 1 node(s) were not ready, 1 node(s) were unschedulable.",
    });
  });
});

describe('planPodStatus', () => {
  const base = { podIp: '127.2.0.1', startTime: new Date('2026-01-01T00:00:00Z'), neverReady: false };
  const view = (state: ContainerView['state'], extra: Partial<ContainerView> = {}): ContainerView => ({
    name: 'main',
    image: 'img',
    state,
    lastTerminated: undefined,
    restartCount: 0,
    everStarted: true,
    ...extra,
  });
  const ended = (exitCode: number) =>
    ({ kind: 'terminated', exitCode, reason: 'x', finishedAt: new Date(0) }) as const;

  it.each([
    ['Pending while containers are being created', 'Always', undefined, 'Pending'],
    [
      'Running with a running container',
      'Always',
      [view({ kind: 'running', startedAt: new Date(0) })],
      'Running',
    ],
    [
      'Running while a crashed container backs off under Always',
      'Always',
      [view({ kind: 'waiting', reason: 'CrashLoopBackOff' }, { lastTerminated: ended(1) })],
      'Running',
    ],
    ['Succeeded when every container ended with 0 under Never', 'Never', [view(ended(0))], 'Succeeded'],
    ['Failed when one ended otherwise under Never', 'Never', [view(ended(2))], 'Failed'],
    ['Running after a failure under OnFailure', 'OnFailure', [view(ended(2))], 'Running'],
  ] as const)('is %s', (_, restartPolicy, containers, phase) => {
    const input: V1Pod = {
      metadata: { uid: 'u' },
      spec: { restartPolicy, containers: [{ name: 'main', image: 'img' }] },
    };
    expect(
      planPodStatus({ ...base, pod: input, containers: containers ? [...containers] : undefined }).phase,
    ).toBe(phase);
  });

  it('reports a running container ready unless the Pod is never to be ready', () => {
    const input: V1Pod = { metadata: { uid: 'u' }, spec: { containers: [{ name: 'main', image: 'img' }] } };
    const containers = [view({ kind: 'running', startedAt: new Date(0) })];
    const ready = planPodStatus({ ...base, pod: input, containers });
    expect(ready.conditions.find((c) => c.type === 'Ready')).toEqual({ type: 'Ready', status: 'True' });
    expect(ready.containerStatuses[0]).toMatchObject({
      ready: true,
      started: true,
      containerID: 'sim://u/main/0',
    });
    const unready = planPodStatus({ ...base, pod: input, containers, neverReady: true });
    expect(unready.conditions.find((c) => c.type === 'ContainersReady')).toMatchObject({
      status: 'False',
      message: 'containers with unready status: [main]',
    });
  });
});

describe('the stream protocol', () => {
  it('reports an exit code as the kubelet does, in the Status cause client-node reads', () => {
    expect(endStatus({ kind: 'exit-code', exitCode: 3 })).toMatchObject({
      status: 'Failure',
      reason: 'NonZeroExitCode',
      details: { causes: [{ reason: 'ExitCode', message: '3' }] },
    });
    expect(endStatus({ kind: 'success' })).toEqual({ metadata: {}, status: 'Success' });
  });

  it('reads a resize in either case of its field names and refuses anything else', () => {
    expect(readTerminalSize(Buffer.from('{"Width":80,"Height":24}'))).toEqual({ Width: 80, Height: 24 });
    expect(readTerminalSize(Buffer.from('{"width":80,"height":24}'))).toEqual({ Width: 80, Height: 24 });
    expect(readTerminalSize(Buffer.from('{"width":0,"height":24}'))).toBeUndefined();
    expect(readTerminalSize(Buffer.from('not json'))).toBeUndefined();
  });
});

describe('readPodKnobs', () => {
  it('reads each knob and names the values it cannot read', () => {
    expect(
      readPodKnobs({
        [nodeAgentAnnotations.failStart]: ' ',
        [nodeAgentAnnotations.startDelayMs]: '250',
        [nodeAgentAnnotations.dropStreamAfterBytes]: 'many',
        [nodeAgentAnnotations.neverReady]: 'true',
      }),
    ).toEqual({
      knobs: {
        failStart: 'injected start failure',
        startDelayMs: 250,
        dropStreamAfterBytes: undefined,
        neverReady: true,
      },
      problems: [`${nodeAgentAnnotations.dropStreamAfterBytes}=many is not a number of bytes`],
    });
  });
});
