import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import type { VirtualMachineInstance } from '../kubevirt-types.js';
import { kubevirtResources, mergePatch } from './kubevirt/kube-calls.js';
import { exitDescription, stopProcess, waitUntilUp } from './process-supervision.js';

/**
 * The test-kit knobs of a simulated guest's RDP server, on the VMI (put them in the VM template's annotations, which
 * KubeVirt copies to the VMI, in the simulator and on KubeVirt's own controllers alike).
 *
 * @category testing
 */
export const rdpGuestAnnotations = {
  /**
   * VMI, set by a test: while the VMI runs, its guest runs a real RDP server (FreeRDP's shadow server on an Xvfb
   * display) on the VMI's address, port 3389. `tls`: TLS security, no login. `nla <user> <password>`: NLA, with
   * that one account.
   */
  server: 'sim.kubevirt.corral.dev/rdp-server',
  /** VMI, written by the test kit: the X display the guest's RDP server shows (`:12`), once it listens. */
  display: 'sim.kubevirt.corral.dev/rdp-display',
} as const;

/** How a test RDP server lets clients in. @category testing */
export type RdpServerSecurity = { kind: 'tls' } | { kind: 'nla'; user: string; password: string };

/** Options of {@link startRdpServer}. @category testing */
export interface RdpServerOptions {
  /** The address it listens on, such as a VMI's. */
  host: string;
  /** @defaultValue 3389 */
  port?: number;
  security: RdpServerSecurity;
  /** The size of the X screen it serves (FreeRDP's shadow server ignores the size a client asks for). @defaultValue 1024×768 */
  width?: number;
  height?: number;
}

/** A running test RDP server. @category testing */
export interface RdpServer {
  host: string;
  port: number;
  /** The X display it shows, such as `:12`: draw on it or read its pointer with `DISPLAY=:12 xdotool …`. */
  display: string;
  /** Ends the RDP server and its display, and removes their files. */
  stop(): Promise<void>;
}

const run = promisify(execFile);
// how long Xvfb and the shadow server may take to come up; the shadow server makes its certificate at first start
const startTimeoutMs = 20_000;

function listens(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Starts Xvfb on a free display and reads the display number it took; `state` says how it runs or ended. */
async function startXvfb(
  width: number,
  height: number,
): Promise<{ xvfb: ChildProcess; display: string; state: () => string }> {
  // -noreset: a client of another process that reaches this display number (a leftover from an earlier server
  // there) must not make the server reset under the RDP server as it connects
  const xvfb = spawn(
    'Xvfb',
    ['-displayfd', '3', '-screen', '0', `${width}x${height}x24`, '-nolisten', 'tcp', '-noreset'],
    {
      stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
    },
  );
  let stderr = '';
  xvfb.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-2000);
  });
  const display = await new Promise<string>((resolve, reject) => {
    let written = '';
    const fd = xvfb.stdio[3];
    fd?.on('data', (chunk: Buffer) => {
      written += chunk.toString();
      if (written.includes('\n')) resolve(`:${written.trim()}`);
    });
    xvfb.once('error', (error) =>
      reject(new Error(`Xvfb did not start (${error.message}); install the Debian package xvfb`)),
    );
    xvfb.once('exit', () => reject(new Error(`Xvfb exited (${exitDescription(xvfb)}): ${stderr.trim()}`)));
  });
  const state = () => {
    const how = exitDescription(xvfb);
    return how ? `Xvfb on ${display} exited (${how}): ${stderr.trim()}` : `Xvfb on ${display} runs`;
  };
  return { xvfb, display, state };
}

/**
 * Starts a real RDP server for tests: FreeRDP's shadow server (Debian's `freerdp2-shadow-x11`) showing a new Xvfb
 * display, bound to `host:port`, with TLS security and no login, or NLA with one account (its SAM file made by
 * `winpr-hash`). Resolves once it accepts connections; `stop()` ends both processes and removes their files. An
 * address and port that another process already listens on is refused rather than shared.
 *
 * @example
 * ```ts
 * const server = await startRdpServer({ host: '127.1.0.5', security: { kind: 'nla', user: 'alice', password: 's3cret' } });
 * await server.stop();
 * ```
 * @category testing
 */
export async function startRdpServer(options: RdpServerOptions): Promise<RdpServer> {
  const { host, port = 3389, security, width = 1024, height = 768 } = options;
  // a server that cannot bind exits only after a moment, while the other process's listener already answers
  if (await listens(host, port))
    throw new Error(
      `${host}:${port} already answers: another process listens there (another control plane handing out the same addresses?)`,
    );
  // the shadow server keeps its certificate under $HOME/.config/freerdp
  const home = await mkdtemp(join(tmpdir(), 'corral-rdp-guest-'));
  const processes: ChildProcess[] = [];
  const stop = async () => {
    await Promise.all(processes.map(stopProcess));
    await rm(home, { recursive: true, force: true });
  };
  try {
    const { xvfb, display, state: xvfbState } = await startXvfb(width, height);
    processes.push(xvfb);
    const args = [`/bind-address:${host}`, `/port:${port}`];
    if (security.kind === 'tls') {
      // the X11 build checks logins against the machine's accounts unless told not to
      args.push('-auth', '/sec:tls');
    } else {
      const { stdout } = await run('winpr-hash', ['-u', security.user, '-p', security.password, '-f', 'sam']);
      const samFile = join(home, 'sam');
      await writeFile(samFile, stdout, { mode: 0o600 });
      args.push('/sec:nla', `/sam-file:${samFile}`);
    }
    const shadow = spawn('freerdp-shadow-cli', args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, DISPLAY: display },
    });
    processes.push(shadow);
    // FreeRDP logs its errors on standard output: the last of them say why it exited
    let printed = '';
    const keep = (chunk: Buffer) => {
      printed = (printed + chunk.toString()).slice(-1000);
    };
    shadow.stdout?.on('data', keep);
    shadow.stderr?.on('data', keep);
    const shadowExit = () => {
      const how = exitDescription(shadow);
      const said = printed.trim().split('\n').slice(-2).join(' / ');
      return how && `${how}: ${said}; ${xvfbState()}`;
    };
    const failed = new Promise<string>((resolve) =>
      shadow.once('error', (error) =>
        resolve(`${error.message}; install the Debian package freerdp2-shadow-x11`),
      ),
    );
    let spawnError: string | undefined;
    void failed.then((message) => {
      spawnError = message;
    });
    await waitUntilUp(
      `the RDP server on ${host}:${port}`,
      () => listens(host, port),
      () => spawnError ?? shadowExit() ?? exitDescription(xvfb),
      startTimeoutMs,
    );
    return { host, port, display, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Reads the {@link rdpGuestAnnotations.server} knob: `undefined` when absent or unreadable. */
export function parseRdpGuestKnob(value: string | undefined): RdpServerSecurity | undefined {
  const words = value?.trim().split(/\s+/) ?? [];
  if (words.length === 1 && words[0] === 'tls') return { kind: 'tls' };
  const [kind, user, password] = words;
  if (words.length === 3 && kind === 'nla' && user && password) return { kind: 'nla', user, password };
  return undefined;
}

// A display or a port another process took a moment ago is not the guest's fault: it starts again, a few times.
async function startWithRetries(
  start: () => Promise<RdpServer>,
  key: string,
  log: (line: string) => void,
): Promise<RdpServer> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await start();
    } catch (error) {
      if (attempt === 3) throw error;
      log(`${key}: the guest's RDP server did not start (${(error as Error).message}); starting it again`);
    }
  }
}

/** The RDP servers of the simulated guests, kept in step with their VMIs. */
export interface RdpGuests {
  /** Starts, restarts or stops the VMI's RDP server to match its phase, address and knob. */
  vmiChanged(key: string, vmi: VirtualMachineInstance | undefined): void;
  stopAll(): Promise<void>;
}

interface RunningGuest {
  wanted: string;
  server: Promise<RdpServer | undefined>;
}

/**
 * Runs the {@link rdpGuestAnnotations.server} knob: while a VMI that carries it runs with an address, its guest runs
 * a real RDP server there ({@link startRdpServer}); it stops with the VMI, and the display is written on the VMI.
 */
export function createRdpGuests(options: { kubeConfig: KubeConfig; log: (line: string) => void }): RdpGuests {
  const { log } = options;
  const api = options.kubeConfig.makeApiClient(CustomObjectsApi);
  const guests = new Map<string, RunningGuest>();

  const stopGuest = (key: string) => {
    const guest = guests.get(key);
    guests.delete(key);
    return guest?.server.then((server) => server?.stop());
  };

  return {
    vmiChanged(key, vmi) {
      const knob = vmi?.metadata.annotations?.[rdpGuestAnnotations.server];
      const security = parseRdpGuestKnob(knob);
      if (knob !== undefined && security === undefined)
        log(`${key}: ${rdpGuestAnnotations.server}="${knob}" is neither "tls" nor "nla <user> <password>"`);
      const host = vmi?.status?.interfaces?.[0]?.ipAddress;
      const running = vmi?.status?.phase === 'Running' && !vmi.metadata.deletionTimestamp;
      const wanted = running && host && security ? `${host} ${knob}` : undefined;
      const current = guests.get(key);
      if (current?.wanted === wanted) return;
      const stopped = current ? stopGuest(key) : undefined;
      if (!wanted || !host || !security) return;
      const [namespace = '', name = ''] = key.split('/');
      // a new address or knob: the old server leaves its port first
      const server = Promise.resolve(stopped)
        .then(() => startWithRetries(() => startRdpServer({ host, security }), key, log))
        .then(async (started) => {
          log(
            `${key}: the guest's RDP server (${security.kind}) listens on ${host}:3389, display ${started.display}`,
          );
          const body = { metadata: { annotations: { [rdpGuestAnnotations.display]: started.display } } };
          await api
            .patchNamespacedCustomObject({ ...kubevirtResources.vmi, namespace, name, body }, mergePatch)
            .catch((error: unknown) =>
              log(`${key}: writing the RDP display failed: ${(error as Error).message}`),
            );
          return started;
        })
        .catch((error: unknown) => {
          log(`${key}: the guest's RDP server did not start: ${(error as Error).message}`);
          return undefined;
        });
      guests.set(key, { wanted, server });
    },
    async stopAll() {
      await Promise.all([...guests.keys()].map(stopGuest));
    },
  };
}
