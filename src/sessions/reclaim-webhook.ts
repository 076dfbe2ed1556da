// The reclaim webhook's client: a due reclaim (a notify pool's) or a warning of one, POSTed as JSON to the pool's URL.

const webhookTimeoutMs = 5_000;

/**
 * POSTs a reclaim's facts to a pool's webhook as `{ "event": <event>, ... }`, giving up after five seconds and
 * following no redirect. Never throws: a failed delivery is told in what it returns.
 */
export async function postReclaimWebhook(
  url: string,
  event: 'reclaim-notified' | 'reclaim-warning',
  facts: Record<string, string>,
): Promise<{ ok: boolean; status?: number; error?: string }> {
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ event, ...facts }),
      signal: AbortSignal.timeout(webhookTimeoutMs),
      redirect: 'error',
    });
    await response.body?.cancel();
    return { ok: response.ok, status: response.status };
  } catch (error) {
    return { ok: false, error: error instanceof Error ? error.message : String(error) };
  }
}
