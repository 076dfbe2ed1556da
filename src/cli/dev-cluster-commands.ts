import { type CommandSpec, stringFlag } from './command-spec.js';
import { UsageError } from './usage-error.js';

const kubeconfigTarget = {
  kubeconfig: {
    type: 'string',
    value: 'PATH',
    help: 'Where to write the kubeconfig of the local control plane. Default: in ~/.cache/corral-vdi/dev-cluster.',
  },
} as const;

const up: CommandSpec = {
  words: ['dev-cluster', 'up'],
  summary: 'Start a local control plane (etcd, kube-apiserver, KubeVirt simulator) in the background.',
  args: [],
  options: kubeconfigTarget,
  notes: [
    "It is for trying the CLI and for tests: a real apiserver on 127.0.0.1 with KubeVirt's own virt-api and " +
      'virt-controller, whose node is simulated. The first start builds the control plane and KubeVirt into ' +
      '~/.cache/corral-vdi with Go (about fifteen minutes, once). A running one is reused.',
    'With CORRAL_KUBEVIRT=simulated it runs a KubeVirt simulator instead, which needs no KubeVirt build.',
  ],
  examples: [
    '$ corral-vdi dev-cluster up --kubeconfig ./dev.kubeconfig',
    '$ export KUBECONFIG=./dev.kubeconfig',
  ],
  async run(input) {
    const { devClusterUp } = await import('./dev-cluster.js');
    // the bundle is split into chunks, so only argv names the CLI's entry point
    const state = await devClusterUp(stringFlag(input, 'kubeconfig'), process.argv[1] ?? '');
    const { terminal } = input;
    if (terminal.json) {
      terminal.printJson({ running: true, ...state });
      return 0;
    }
    terminal.print(
      `${state.reused ? 'local control plane already running' : 'local control plane started'} at ${state.server} (pid ${state.pid})`,
      `kubeconfig: ${state.kubeconfig}`,
      `use it:     export KUBECONFIG=${state.kubeconfig}`,
    );
    return 0;
  },
};

const down: CommandSpec = {
  words: ['dev-cluster', 'down'],
  summary: 'Stop the local control plane and delete everything in it.',
  args: [],
  options: {},
  examples: ['$ corral-vdi dev-cluster down'],
  async run(input) {
    const { devClusterDown, devClusterStatus } = await import('./dev-cluster.js');
    const state = devClusterStatus();
    const stopped = await devClusterDown();
    const { terminal } = input;
    if (terminal.json) terminal.printJson({ stopped, pid: state?.pid ?? null });
    else
      terminal.print(
        stopped
          ? `local control plane stopped (pid ${state?.pid ?? '?'})`
          : 'no local control plane was running',
      );
    return 0;
  },
};

const status: CommandSpec = {
  words: ['dev-cluster', 'status'],
  summary: 'Show whether the local control plane runs, and its kubeconfig.',
  args: [],
  options: {},
  notes: ['It exits 0 either way; -o json gives "running": true or false.'],
  examples: ['$ corral-vdi dev-cluster status'],
  async run(input) {
    const { devClusterStatus } = await import('./dev-cluster.js');
    const state = devClusterStatus();
    const { terminal } = input;
    if (terminal.json) {
      terminal.printJson(state ? { running: true, ...state } : { running: false });
      return 0;
    }
    if (!state) {
      terminal.print('no local control plane is running; start one with: corral-vdi dev-cluster up');
      return 0;
    }
    terminal.print(
      `local control plane running at ${state.server} (pid ${state.pid}, since ${state.startedAt})`,
      `kubeconfig: ${state.kubeconfig}`,
    );
    return 0;
  },
};

/** The background half of `up`: runs the control plane in this process until SIGTERM. */
const serve: CommandSpec = {
  words: ['dev-cluster', 'serve'],
  summary: 'Run the local control plane in the foreground (what dev-cluster up starts).',
  args: [],
  options: kubeconfigTarget,
  hidden: true,
  examples: ['$ corral-vdi dev-cluster serve --kubeconfig ./dev.kubeconfig'],
  async run(input) {
    const kubeconfig = stringFlag(input, 'kubeconfig');
    if (kubeconfig === undefined)
      throw new UsageError('"dev-cluster serve" needs --kubeconfig PATH', serve.words);
    const { serveDevCluster } = await import('./dev-cluster.js');
    await serveDevCluster(kubeconfig);
    return undefined;
  },
};

/** `dev-cluster up`, `down`, `status`, and the hidden `serve`. */
export const devClusterCommands: readonly CommandSpec[] = [up, down, status, serve];
