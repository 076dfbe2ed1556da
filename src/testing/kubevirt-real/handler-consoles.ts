import { createServer, type Server } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import type { VirtualMachineInstance } from '../../kubevirt-types.js';
import { type ConsoleSubresource, createConsoleServer } from '../kubevirt/console-server.js';
import type { KubevirtCertificates } from './install.js';

const consolePath = /^\/v1\/namespaces\/([^/]+)\/virtualmachineinstances\/([^/]+)\/(vnc|console|usbredir)$/;

/** The consoles a handler stand-in serves to virt-api. */
export interface HandlerConsoles {
  /**
   * The port the consoles listen on, which virt-api is told with `--console-server-port` (virt-handler's is 8186):
   * one the system picked, so that the handlers of two local clusters never meet on a shared Pod address.
   */
  port: number;
  /** Closes the consoles of a VMI that stopped or went away. */
  vmiChanged(key: string, vmi: VirtualMachineInstance | undefined): void;
  close(): Promise<void>;
}

/**
 * Serves the guest side of a VMI's `vnc`, `console` and `usbredir` to virt-api, as virt-handler does: websockets
 * at `wss://<handler Pod IP>:<port>/v1/namespaces/<ns>/virtualmachineinstances/<name>/<console>`, over mutual TLS
 * with KubeVirt's handler certificates (only a client whose certificate KubeVirt's CA signed gets in). The guest
 * is the simulator's: an RFB screen, a serial line that echoes, a usbredir guest (docs/simulator.md).
 */
export async function startHandlerConsoles(options: {
  kubeConfig: KubeConfig;
  address: string;
  certificates: KubevirtCertificates;
  log: (line: string) => void;
}): Promise<HandlerConsoles> {
  const { certificates, log } = options;
  const consoles = createConsoleServer({ kubeConfig: options.kubeConfig, log });
  const server: Server = createServer(
    {
      cert: certificates.handlerServer.certPem,
      key: certificates.handlerServer.keyPem,
      ca: certificates.caPem,
      requestCert: true,
      rejectUnauthorized: true,
    },
    (_, response) => {
      response.writeHead(404).end();
    },
  );
  server.on('upgrade', (request, socket, head: Buffer) => {
    const match = consolePath.exec(new URL(request.url ?? '/', 'https://handler').pathname);
    if (!match) {
      socket.end('HTTP/1.1 404 Not Found\r\nconnection: close\r\n\r\n');
      return;
    }
    const [, namespace = '', name = '', subresource = ''] = match;
    consoles
      .upgrade(request, socket, head, { namespace, name, subresource: subresource as ConsoleSubresource })
      .catch((error: Error) => {
        log(`${subresource} ${namespace}/${name}: ${error.message}`);
        socket.destroy();
      });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, options.address, () => resolve());
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : 0,
    vmiChanged: consoles.vmiChanged,
    close: async () => {
      consoles.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
