import { connect, createServer, type Socket } from 'node:net';

/**
 * A TCP load balancer on loopback, as a Service or an ingress sits in front of broker replicas: each new
 * connection goes to the next backend in turn, and a backend taken out leaves the list only after a delay, as an
 * endpoint removal reaches kube-proxy and ingress controllers some time after the Pod began to terminate. A
 * backend that refuses a connection resets the client's, as a refused request looks through a real one.
 */
export interface DelayedLoadBalancer {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** Takes `backend` (`host:port`) out of the list after `delayMs`. */
  removeAfter(backend: string, delayMs: number): void;
  /** How many connections went to `backend` so far. */
  connectionsTo(backend: string): number;
  /** The backend a client connection from this local port went to. */
  backendOf(clientPort: number): string | undefined;
  close(): Promise<void>;
}

export async function startDelayedLoadBalancer(backends: readonly string[]): Promise<DelayedLoadBalancer> {
  const list = [...backends];
  const backendByPort = new Map<number, string>();
  const connections = new Map<string, number>();
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let turn = 0;
  const server = createServer((client) => {
    const backend = list[turn++ % list.length] ?? '';
    connections.set(backend, (connections.get(backend) ?? 0) + 1);
    if (client.remotePort !== undefined) backendByPort.set(client.remotePort, backend);
    const [host, port] = [
      backend.slice(0, backend.lastIndexOf(':')),
      backend.slice(backend.lastIndexOf(':') + 1),
    ];
    const upstream = connect(Number(port), host);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
    }
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.resetAndDestroy());
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    removeAfter(backend, delayMs) {
      const timer = setTimeout(() => {
        timers.delete(timer);
        const index = list.indexOf(backend);
        if (index >= 0) list.splice(index, 1);
      }, delayMs);
      timers.add(timer);
    },
    connectionsTo: (backend) => connections.get(backend) ?? 0,
    backendOf: (clientPort) => backendByPort.get(clientPort),
    close() {
      for (const timer of timers) clearTimeout(timer);
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
