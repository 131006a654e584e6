import { afterEach, describe, expect, test } from 'vitest';
import { GATEWAY_KEY, startTestServer } from '../../helpers/gateway.js';
import { startBatchAnthropicMock } from '../../mocks/batch-anthropic.js';
import { batchConfig, batchLogs, fileLines, json, upload, waitForBatch } from './helpers.js';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

const line = (id: string, text: string) =>
  JSON.stringify({ custom_id: id, method: 'POST', url: '/v1/chat/completions', body: { model: 'claude-3-5-haiku', max_tokens: 16, messages: [{ role: 'user', content: text }] } });

async function run(url: string, headers: Record<string, string>, lines: string[]): Promise<string> {
  const file = await json(await upload(url, lines.join('\n'), 'batch', { 'x-gateway-api-key': GATEWAY_KEY }));
  const batch = await json(
    await fetch(`${url}/v1/batches`, {
      method: 'POST',
      headers: { ...headers, 'x-gateway-api-key': GATEWAY_KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' }),
    }),
  );
  return batch.id as string;
}

describe('each line goes through the whole lifecycle of its batch’s config', () => {
  test('fallback past a dead target, retries, an input guardrail, the cache, and logs with cost', async () => {
    const mock = await startBatchAnthropicMock(0);
    open.push(mock);
    const gw = await startTestServer({ config: batchConfig({ pollMs: 20, concurrency: 1 }, { retry: { name: 'retry', options: { baseDelayMs: 5 } } }) });
    open.push(gw);
    const config = {
      strategy: { mode: 'fallback' },
      retry: { attempts: 1 },
      cache: { mode: 'simple' },
      input_guardrails: [{ id: 'no-forbidden', deny: true, 'default.contains': { words: ['forbidden'], operator: 'none' } }],
      targets: [
        { provider: 'anthropic', api_key: 'k-dead', custom_host: 'http://127.0.0.1:1' },
        { provider: 'anthropic', api_key: 'k-live', custom_host: mock.url },
      ],
    };
    const headers = { 'x-gateway-config': JSON.stringify(config) };
    const id = await run(gw.url, headers, [line('a', 'line-a'), line('b', 'line-b'), line('c', 'forbidden words'), line('d', 'line-a')]);
    const { batch } = await waitForBatch(gw.url, id, { 'x-gateway-api-key': GATEWAY_KEY }, (b) => b.status === 'completed');
    expect(batch.request_counts).toEqual({ total: 4, completed: 3, failed: 1 });
    // The denied line never reached a provider; the repeated one was answered from the cache.
    expect(mock.started).toEqual(['line-a', 'line-b']);
    const output = await fileLines(gw.url, batch.output_file_id, { 'x-gateway-api-key': GATEWAY_KEY });
    const errors = await fileLines(gw.url, batch.error_file_id, { 'x-gateway-api-key': GATEWAY_KEY });
    expect(output.map((l) => l.custom_id)).toEqual(['a', 'b', 'd']);
    expect(output[2].response.body.choices[0].message.content).toBe('echo line-a');
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ custom_id: 'c', response: { status_code: 446 } });

    const logs = await batchLogs(gw.url, id, { 'x-gateway-api-key': GATEWAY_KEY }, 4);
    expect(logs).toHaveLength(4);
    const byLine = Object.fromEntries(logs.map((e: Record<string, any>) => [e.metadata.batch_custom_id, e]));
    // The dead target was tried twice (its retry), then the fallback answered.
    expect(byLine.a.attempt_count).toBe(3);
    expect(byLine.a.retry_count).toBeGreaterThanOrEqual(1);
    expect(byLine.a.target_path).toBe('1');
    expect(byLine.a.cost).toBeGreaterThan(0);
    expect(byLine.d.cache_status).toBe('HIT');
    expect(byLine.c.status).toBe(446);
  });

  test('a rate-limit policy defers lines instead of failing them; they run when the window opens (fake clock)', async () => {
    const mock = await startBatchAnthropicMock(0);
    open.push(mock);
    const clock = { now: Date.now() };
    const now = () => clock.now;
    const gw = await startTestServer({
      config: batchConfig({ pollMs: 20, concurrency: 2, now }, { limits: { name: 'limits', options: { now, rateLimits: [{ id: 'batch-rpm', type: 'requests', unit: 'rpm', value: 3 }] } } }),
    });
    open.push(gw);
    const headers = { 'x-gateway-provider': 'anthropic', authorization: 'Bearer k', 'x-gateway-custom-host': mock.url };
    const id = await run(gw.url, headers, Array.from({ length: 6 }, (_, i) => line(`r${i}`, `line-${i}`)));
    await waitForBatch(gw.url, id, { 'x-gateway-api-key': GATEWAY_KEY }, (b) => b.request_counts.completed === 3);
    await new Promise((r) => setTimeout(r, 300));
    const waiting = await json(await fetch(`${gw.url}/v1/batches/${id}`, { headers: { 'x-gateway-api-key': GATEWAY_KEY } }));
    expect(waiting).toMatchObject({ status: 'in_progress', request_counts: { completed: 3, failed: 0 } });
    expect(mock.started).toHaveLength(3);
    clock.now += 61_000;
    const { batch } = await waitForBatch(gw.url, id, { 'x-gateway-api-key': GATEWAY_KEY }, (b) => b.status === 'completed');
    expect(batch.request_counts).toEqual({ total: 6, completed: 6, failed: 0 });
    expect(mock.started).toHaveLength(6);
  });
});
