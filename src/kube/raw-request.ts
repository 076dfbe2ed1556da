import { request } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { ApiException } from '@kubernetes/client-node';

/**
 * One authenticated request to a path of the current cluster, for endpoints client-node has no API for
 * (KubeVirt's start/stop subresources). A non-2xx answer throws an `ApiException` like client-node does.
 */
export async function rawRequest(
  kubeConfig: KubeConfig,
  method: 'GET' | 'PUT' | 'POST',
  path: string,
  body?: unknown,
): Promise<string> {
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig has no current cluster');
  const url = new URL(path, cluster.server);
  const options: import('node:https').RequestOptions = { method, headers: {} };
  await kubeConfig.applyToHTTPSOptions(options);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return await new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        ...options,
        headers: {
          ...options.headers,
          accept: 'application/json',
          ...(payload === undefined
            ? {}
            : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) resolve(text);
          else {
            const headers = Object.fromEntries(
              Object.entries(res.headers).map(([key, value]) => [key, String(value)]),
            );
            reject(new ApiException(status, `HTTP ${status}`, text, headers));
          }
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}
