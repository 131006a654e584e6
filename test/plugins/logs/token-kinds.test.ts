import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { anthropic } from '../../../plugins/providers/anthropic/index.js';
import { serveGateway } from '../../helpers/serve.js';
import { ADMIN_KEY, logGatewayPlugins, metricValue, parsePrometheus, tempFile, waitFor } from './helpers.js';

/*
 * Reasoning and prompt-cache writes from a provider's answer to the log entry, the analytics routes (a groups
 * column under both paths, the time series) and /metrics: the same numbers everywhere. An upstream of this test's
 * own answers both an OpenAI chat (cache writes in `prompt_tokens_details.cache_write_tokens`) and Anthropic's
 * Messages API (`cache_creation_input_tokens`, with the part written for an hour).
 */

const OPENAI_USAGE = {
  prompt_tokens: 100,
  completion_tokens: 20,
  total_tokens: 120,
  prompt_tokens_details: { cached_tokens: 10, cache_write_tokens: 30 },
  completion_tokens_details: { reasoning_tokens: 7 },
};
/** Prompt = 5 + 40 written + 6 read = 51. */
const ANTHROPIC_USAGE = {
  input_tokens: 5,
  output_tokens: 9,
  cache_creation_input_tokens: 40,
  cache_read_input_tokens: 6,
  cache_creation: { ephemeral_5m_input_tokens: 15, ephemeral_1h_input_tokens: 25 },
};

let upstream: Server;
let upstreamUrl: string;
let gw: Awaited<ReturnType<typeof serveGateway>>;

beforeAll(async () => {
  upstream = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString('utf8')));
    req.on('end', () => {
      const body = JSON.parse(raw) as { model: string };
      res.setHeader('content-type', 'application/json');
      if (req.url === '/v1/messages') {
        res.end(JSON.stringify({ id: 'msg_1', type: 'message', role: 'assistant', model: body.model, content: [{ type: 'text', text: 'Hi' }], stop_reason: 'end_turn', stop_sequence: null, usage: ANTHROPIC_USAGE }));
        return;
      }
      res.end(
        JSON.stringify({
          id: 'chatcmpl-1',
          object: 'chat.completion',
          created: 1,
          model: body.model,
          choices: [{ index: 0, message: { role: 'assistant', content: 'Hi' }, finish_reason: 'stop' }],
          usage: OPENAI_USAGE,
        }),
      );
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  gw = await serveGateway({ plugins: logGatewayPlugins({ file: await tempFile('token-kinds.db'), extra: [anthropic()] }) });
});

afterAll(async () => {
  await gw?.close();
  await new Promise<void>((resolve) => upstream?.close(() => resolve()));
});

const get = async (path: string): Promise<any> => {
  const res = await fetch(`${gw.url}${path}`, { headers: { 'x-gateway-api-key': ADMIN_KEY } });
  expect(res.status, path).toBe(200);
  return path.startsWith('/metrics') ? res.text() : res.json();
};

async function call(provider: 'openai' | 'anthropic', model: string, trace: string): Promise<void> {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-gateway-api-key': ADMIN_KEY,
      'x-gateway-provider': provider,
      'x-gateway-custom-host': provider === 'openai' ? `${upstreamUrl}/v1` : upstreamUrl,
      'x-gateway-trace-id': trace,
      authorization: 'Bearer sk-upstream-key-0001',
    },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hello' }], max_tokens: 16 }),
  });
  expect(res.status).toBe(200);
  await res.text();
}

describe('reasoning and cache-write tokens', () => {
  test('stored per entry, summed by the groups (both paths) and the time series, counted in /metrics', async () => {
    const from = Date.now() - 1;
    await call('openai', 'o-reasoner', 'kinds-openai-1');
    await call('openai', 'o-reasoner', 'kinds-openai-2');
    await call('anthropic', 'claude-cacher', 'kinds-anthropic');

    const entry = async (trace: string) => {
      const listed = await waitFor(async () => ((await get(`/v1/logs?trace_id=${trace}`)) as { data: { id: string }[] }).data[0], 5000, trace);
      return (await get(`/v1/logs/${listed.id}`)) as Record<string, unknown>;
    };
    expect(await entry('kinds-openai-1')).toMatchObject({ prompt_tokens: 100, cached_tokens: 10, cache_write_tokens: 30, cache_write_1h_tokens: 0, reasoning_tokens: 7 });
    expect(await entry('kinds-anthropic')).toMatchObject({ prompt_tokens: 51, completion_tokens: 9, cached_tokens: 6, cache_write_tokens: 40, cache_write_1h_tokens: 25, reasoning_tokens: 0 });
    await entry('kinds-openai-2');
    // A list item carries them too.
    const listed = (await get('/v1/logs?trace_id=kinds-anthropic')) as { data: Record<string, unknown>[] };
    expect(listed.data[0]).toMatchObject({ cache_write_tokens: 40, cache_write_1h_tokens: 25 });

    for (const path of ['/v1/analytics/groups/model', '/v1/logs/groups/model']) {
      const groups = (await get(`${path}?columns=cached_tokens,reasoning_tokens,cache_write_tokens&from=${from}`)) as { columns: string[]; data: Record<string, unknown>[] };
      expect(groups.columns).toEqual(['requests', 'cached_tokens', 'reasoning_tokens', 'cache_write_tokens']);
      expect(groups.data).toEqual([
        { model: 'o-reasoner', requests: 2, cached_tokens: 20, reasoning_tokens: 14, cache_write_tokens: 60 },
        { model: 'claude-cacher', requests: 1, cached_tokens: 6, reasoning_tokens: 0, cache_write_tokens: 40 },
      ]);
    }

    const series = (await get(`/v1/analytics/timeseries?from=${from}&to=${Date.now() + 1}&interval=minute`)) as { totals: Record<string, number>; data: Record<string, number>[] };
    expect(series.totals).toMatchObject({ requests: 3, cached_tokens: 26, reasoning_tokens: 14, cache_write_tokens: 100 });
    expect(series.data.reduce((a, b) => a + b.reasoning_tokens!, 0)).toBe(14);
    expect(series.data.reduce((a, b) => a + b.cache_write_tokens!, 0)).toBe(100);

    const metrics = parsePrometheus((await get('/metrics')) as string);
    expect(metricValue(metrics, 'gateway_tokens_total', { model: 'o-reasoner', kind: 'reasoning' })).toBe(14);
    expect(metricValue(metrics, 'gateway_tokens_total', { model: 'o-reasoner', kind: 'cache_write' })).toBe(60);
    expect(metricValue(metrics, 'gateway_tokens_total', { model: 'claude-cacher', kind: 'cache_write' })).toBe(40);
    expect(metricValue(metrics, 'gateway_tokens_total', { model: 'claude-cacher', kind: 'cached' })).toBe(6);
    expect(metricValue(metrics, 'gateway_tokens_total', { model: 'claude-cacher', kind: 'reasoning' })).toBe(0);
  });

  test('an unknown column is still a 400 naming it; the new ones are listed among the known', async () => {
    const res = await fetch(`${gw.url}/v1/analytics/groups/model?columns=reasoning_tokens,thinking_tokens`, { headers: { 'x-gateway-api-key': ADMIN_KEY } });
    expect(res.status).toBe(400);
    const error = ((await res.json()) as { error: { param: string; message: string } }).error;
    expect(error.param).toBe('columns');
    expect(error.message).toContain('thinking_tokens');
    expect(error.message).toContain('reasoning_tokens, cache_write_tokens');
  });
});
