import { GATEWAY_KEY } from '../../helpers/gateway.js';

/**
 * Sends one request to the gateway at `url` as the static key, with the config `target` and a trace
 * id of its own, and returns its answer and the log entry the gateway stored for it (GET /v1/logs/{id},
 * the price included), once the log store has written it.
 */
export async function sendAndRead(url: string, path: string, target: Record<string, unknown>, body: Record<string, unknown>, trace: string): Promise<{ entry: Record<string, any>; text: string; status: number }> {
  const res = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-trace-id': trace, 'x-gateway-config': JSON.stringify(target) },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  const headers = { 'x-gateway-api-key': GATEWAY_KEY };
  for (let i = 0; i < 400; i++) {
    const list = (await (await fetch(`${url}/v1/logs?trace_id=${trace}`, { headers })).json()) as { data: Array<{ id: string }> };
    if (list.data.length > 0) {
      const entry = (await (await fetch(`${url}/v1/logs/${list.data[0]!.id}`, { headers })).json()) as Record<string, any>;
      return { entry, text, status: res.status };
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`the request ${trace} was never logged`);
}
