import {
  type ApiConstructor,
  type ApiType,
  createConfiguration,
  type KubeConfig,
  type RequestContext,
  type ResponseContext,
  ServerConfiguration,
  setHeaderMiddleware,
} from '@kubernetes/client-node';

type Dispatcher = NonNullable<ReturnType<RequestContext['getDispatcher']>>;

// client-node 2.x builds a new undici Agent, so a new TLS connection, for every request; one per KubeConfig is kept.
const sharedDispatchers = new WeakMap<KubeConfig, Dispatcher>();

/**
 * Sends a request that client-node prepared for `kubeConfig` (TLS, credentials, proxy) through the one
 * dispatcher of that KubeConfig, whose kept-alive connections every request of the SDK shares.
 */
export async function shareConnections(
  kubeConfig: KubeConfig,
  context: RequestContext,
): Promise<RequestContext> {
  const own = context.getDispatcher();
  // none for a cluster without TLS settings: fetch's global dispatcher keeps connections alive already
  if (own === undefined) return context;
  const shared = sharedDispatchers.get(kubeConfig) ?? own;
  sharedDispatchers.set(kubeConfig, shared);
  context.setDispatcher(shared);
  return context;
}

/** Tells `count` the size in bytes of a response's body once it is read as text. */
export function countBodyBytes(response: ResponseContext, count: (bytes: number) => void): ResponseContext {
  const { body } = response;
  response.body = {
    text: async () => {
      const text = await body.text();
      count(Buffer.byteLength(text));
      return text;
    },
    binary: () => body.binary(),
    stream: () => body.stream(),
  };
  return response;
}

/**
 * Like `kubeConfig.makeApiClient`, but its requests reuse the KubeConfig's kept-alive connections; `onBytes`
 * hears the size of each response body read.
 */
export function makeKeepAliveClient<T extends ApiType>(
  kubeConfig: KubeConfig,
  api: ApiConstructor<T>,
  onBytes: (bytes: number) => void = () => {},
): T {
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig has no current cluster');
  return new api(
    createConfiguration({
      baseServer: new ServerConfiguration(cluster.server, {}),
      authMethods: { default: kubeConfig },
      middleware: [setHeaderMiddleware('User-Agent', 'corral-vdi')],
      promiseMiddleware: [
        {
          pre: (context) => shareConnections(kubeConfig, context),
          post: async (response) => countBodyBytes(response, onBytes),
        },
      ],
    }),
  );
}
