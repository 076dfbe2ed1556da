import {
  ApiException,
  HttpMethod,
  IsomorphicFetchHttpLibrary,
  type KubeConfig,
  RequestContext,
} from '@kubernetes/client-node';
import { countBodyBytes, shareConnections } from './connections.js';

const httpLibrary = new IsomorphicFetchHttpLibrary();

/**
 * One authenticated request to a path of the current cluster, on kept-alive connections shared by every request of
 * the KubeConfig: a body goes as JSON, a `PATCH` as a merge patch. A non-2xx answer throws an `ApiException` like
 * client-node does.
 */
export async function rawRequest(
  kubeConfig: KubeConfig,
  method: 'GET' | 'PUT' | 'POST' | 'PATCH' | 'DELETE',
  path: string,
  body?: unknown,
  onBytes: (bytes: number) => void = () => {},
): Promise<string> {
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig has no current cluster');
  const context = new RequestContext(new URL(path, cluster.server).toString(), HttpMethod[method]);
  // as client-go asks: virt-api's start, stop and restart routes name no representation and answer 406 to JSON alone
  context.setHeaderParam('Accept', 'application/json, */*');
  context.setHeaderParam('User-Agent', 'corral-vdi');
  if (body !== undefined) {
    context.setHeaderParam(
      'Content-Type',
      method === 'PATCH' ? 'application/merge-patch+json' : 'application/json',
    );
    context.setBody(JSON.stringify(body));
  }
  await kubeConfig.applySecurityAuthentication(context);
  const sent = await httpLibrary.send(await shareConnections(kubeConfig, context)).toPromise();
  const response = countBodyBytes(sent, onBytes);
  const text = await response.body.text();
  const status = response.httpStatusCode;
  if (status >= 200 && status < 300) return text;
  throw new ApiException(status, `HTTP ${status}`, text, response.headers);
}
