import { ApiException, type KubeConfig } from '@kubernetes/client-node';
import WebSocket from 'ws';
import { toVdiError } from './errors.js';

/** Options of {@link openKubeWebSocket}. */
export interface OpenKubeWebSocketOptions {
  /** The websocket subprotocol to ask for, such as KubeVirt's `plain.kubevirt.io`. */
  protocol: string;
  /** The largest message taken from the apiserver; a larger one closes the socket (1009). */
  maxPayload: number;
  /** The call in words for an error, such as `open the vnc console of VirtualMachineInstance ns/name`. */
  doing: string;
}

// An upgrade the apiserver does not answer in this time failed.
const handshakeTimeoutMs = 15_000;

/**
 * Opens a websocket to a path of the current cluster with the kubeconfig's TLS material and credentials, and
 * resolves once it is open, paused: call `resume()` once its listeners are attached. A refusal arrives as the apiserver's answer translated to a `VdiError`.
 *
 * @throws `VdiError` by the apiserver's status (`FORBIDDEN`, `NOT_FOUND`, `INVALID_INPUT`, …) or
 *   `CLUSTER_UNAVAILABLE` when it does not answer.
 */
export async function openKubeWebSocket(
  kubeConfig: KubeConfig,
  path: string,
  options: OpenKubeWebSocketOptions,
): Promise<WebSocket> {
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig has no current cluster');
  const url = new URL(path, cluster.server);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  const wsOptions: WebSocket.ClientOptions = {
    maxPayload: options.maxPayload,
    handshakeTimeout: handshakeTimeoutMs,
    perMessageDeflate: false,
    headers: { 'User-Agent': 'corral-vdi' },
  };
  await kubeConfig.applyToHTTPSOptions(wsOptions);
  const socket = new WebSocket(url, [options.protocol], wsOptions);
  return await new Promise<WebSocket>((resolve, reject) => {
    socket.once('open', () => {
      socket.off('error', onError);
      // a server that speaks first must not speak before the caller listens
      socket.pause();
      resolve(socket);
    });
    const onError = (error: Error) => reject(toVdiError(error, options.doing));
    socket.once('error', onError);
    socket.once('unexpected-response', (request, response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.once('end', () => {
        request.destroy();
        const status = response.statusCode ?? 500;
        const body = Buffer.concat(chunks).toString('utf8');
        reject(toVdiError(new ApiException(status, `HTTP ${status}`, body, {}), options.doing));
      });
      response.once('error', onError);
    });
  });
}
