import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestProject } from 'vitest/node';
import {
  type KubevirtKind,
  type LocalCluster,
  type LocalClusterConnection,
  startLocalCluster,
} from '../../src/testing/local-cluster.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A loopback URL that answers with the shared control plane's connection once it is ready. */
    sharedClusterUrl: string;
  }
}

/** The answer of the readiness URL: the connection, or why the start failed. */
export type SharedClusterAnswer = { connection: LocalClusterConnection } | { error: string };

interface SharedPlane {
  url: string;
  projects: number;
  close(): Promise<void>;
}

// The projects each run this set-up in the same process; all but the simulator's get the one plane.
const registry = Symbol.for('corral-vdi.test.shared-control-plane');
type Registry = { [registry]?: Map<string, Promise<SharedPlane>> };

// The simulator's own tests run on a plane of their own with the simulator, and the end-to-end tests on one of their
// own: run after the cluster tier on its plane, KubeVirt's controllers left their VMs unstarted (docs/testing.md).
const simulatorProject = 'simulator';
const ownPlaneProjects = new Set([simulatorProject, 'e2e']);

async function startSharedPlane(kubevirt: KubevirtKind | undefined): Promise<SharedPlane> {
  // the chaos storm tells from the audit which client wrote or ended each claim
  // virt-controller's own lines (it leads, it exited and is started again) say whether the plane kept its controllers
  const log = (line: string) => {
    if (line.startsWith('virt-controller')) process.stderr.write(`shared control plane: ${line}\n`);
  };
  const started = startLocalCluster({ auditLeaseWrites: true, log, ...(kubevirt ? { kubevirt } : {}) }).then(
    (cluster): { cluster: LocalCluster } => {
      process.stderr.write(
        `shared control plane${kubevirt ? ` (${kubevirt})` : ''} started in ${cluster.startupMs} ms\n`,
      );
      return { cluster };
    },
    (error: unknown) => ({ error: error instanceof Error ? error.message : String(error) }),
  );
  // Workers ask this URL and get their answer once the plane is up, so the set-up itself returns at once.
  const server: Server = createServer((_, response) => {
    void started.then((outcome) => {
      const answer: SharedClusterAnswer =
        'cluster' in outcome ? { connection: outcome.cluster.connection } : outcome;
      response.writeHead('cluster' in outcome ? 200 : 500, { 'content-type': 'application/json' });
      response.end(JSON.stringify(answer));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    projects: 0,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      const outcome = await started;
      if ('cluster' in outcome) await outcome.cluster.stop();
    },
  };
}

/** Starts the shared control plane in the background and tells the project's workers where to ask for it. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const shared = globalThis as Registry;
  shared[registry] ??= new Map();
  const planes = shared[registry];
  const kubevirt = project.name === simulatorProject ? 'simulated' : undefined;
  const key = ownPlaneProjects.has(project.name) ? project.name : 'default';
  if (!planes.has(key)) planes.set(key, startSharedPlane(kubevirt));
  const plane = await (planes.get(key) as Promise<SharedPlane>);
  plane.projects += 1;
  project.provide('sharedClusterUrl', plane.url);
  return async () => {
    plane.projects -= 1;
    if (plane.projects > 0) return;
    planes.delete(key);
    await plane.close();
  };
}
