import { defineConfig } from 'vitest/config';

// Starts one control plane in the background for the cluster and e2e projects together; unit tests never wait.
const sharedControlPlane = ['test/support/global-setup.ts'];

export default defineConfig({
  test: {
    // Two at a time on two cores: a third saved 7 % and pushed waits past their timeouts (docs/testing.md).
    maxWorkers: 2,
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts', 'test/*.test.ts'],
          // pure tests that restore what they change: one module graph for them all spares a second per file
          isolate: false,
        },
      },
      {
        test: {
          name: 'cluster',
          include: ['test/cluster/**/*.test.ts'],
          exclude: ['test/cluster/simulator/**'],
          // each file works in namespaces of its own and stops what it starts: one module graph saves a second a file
          isolate: false,
          globalSetup: sharedControlPlane,
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        // The TypeScript KubeVirt simulator's own tests, on a plane of their own that runs it (docs/simulator.md).
        test: {
          name: 'simulator',
          include: ['test/cluster/simulator/**/*.test.ts'],
          isolate: false,
          globalSetup: sharedControlPlane,
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        // A file that breaks the plane (etcd frozen, the apiserver killed) starts its own; client-kill uses the shared one.
        test: {
          name: 'faults',
          include: ['test/faults/**/*.test.ts'],
          globalSetup: sharedControlPlane,
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: 'chaos',
          include: ['test/chaos/**/*.test.ts'],
          globalSetup: sharedControlPlane,
          // A seeded storm of 30 s, then the rest state and the check.
          testTimeout: 240_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          isolate: false,
          globalSetup: sharedControlPlane,
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
