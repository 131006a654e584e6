import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import * as v from 'valibot';
import { GatewayError, type GatewayPlugin } from '../../../core/index.js';
import { config } from '../../../plugins/config/index.js';
import { defineCheck, guardrails } from '../../../plugins/guardrails/index.js';
import type { LogEntry } from '../../../plugins/logs/entry.js';
import { GROUP_COLUMNS } from '../../../plugins/logs/store/repository.js';
import { providerRegistry } from '../../../plugins/provider-registry/index.js';
import { bundledPricing } from '../../../sdk/pricing/table.js';
import { w3cTraceId } from '../../../plugins/traceparent/index.js';
import { serveGateway } from '../../helpers/serve.js';
import { startMockOpenAI, type MockUpstream } from '../../mocks/openai-upstream.js';
import { ADMIN_KEY, bruteGroups, expectSketched, logGatewayPlugins, metricValue, parsePrometheus, SKETCHED, tempFile, waitFor } from './helpers.js';

/** A guardrail check of this test's own: passes unless the text contains `word`. */
const noWordCheck: GatewayPlugin = {
  name: 'test-no-word-check',
  apply(api) {
    api.checks.add(
      'test.noWord',
      defineCheck({
        parameters: v.object({ word: v.string() }),
        run: (p, input) => ({ verdict: !input.text.includes(p.word), explanation: `looked for ${p.word}` }),
      }),
    );
  },
};

/** A limit of this test's own: `x-test-limit: 1` is refused with 429 before any upstream call. */
const testLimit: GatewayPlugin = {
  name: 'test-limit',
  apply(api) {
    api.hooks.request.tap('test-limit', (ctx) => {
      if (ctx.header('x-test-limit') === '1') throw new GatewayError('rate_limited', 'Test limit reached.');
    });
  },
};

let mock: MockUpstream;
let gw: Awaited<ReturnType<typeof serveGateway>>;

const KEYS = {
  [ADMIN_KEY]: { workspace: null, scopes: ['*'] },
  'ws-a-key-0001': { workspace: 'ws-a', scopes: ['logs.read', 'completions.write'] },
  'ws-b-key-0001': { workspace: 'ws-b', scopes: ['logs.read'] },
  'no-scope-key-01': { workspace: 'ws-a', scopes: ['completions.write'] },
  'metrics-key-001': { workspace: null, scopes: ['metrics.read'] },
};
const PROVIDER_KEY = 'sk-provider-secret-abcdefghijklmnop';

beforeAll(async () => {
  mock = await startMockOpenAI();
  const file = await tempFile('e2e.db');
  gw = await serveGateway({
    plugins: logGatewayPlugins({
      file,
      keys: KEYS,
      extra: [
        config({ configs: { 'saved-prod': { provider: 'openai', api_key: 'sk-config-key-abcdefghijkl', custom_host: mock.baseURL } } }),
        noWordCheck,
        guardrails(),
        testLimit,
        providerRegistry({ providers: { priced: { provider: 'openai', api_key: 'sk-slug-key-abcdefghijklmn', custom_host: mock.baseURL, pricing_multiplier: 2 } } }),
      ],
    }),
  });
});

afterAll(async () => {
  await gw.close();
  await mock.close();
});

const chat = (body: Record<string, unknown>, headers: Record<string, string> = {}, key = ADMIN_KEY) =>
  fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-gateway-api-key': key,
      'x-gateway-provider': 'openai',
      'x-gateway-custom-host': mock.baseURL,
      authorization: `Bearer ${PROVIDER_KEY}`,
      ...headers,
    },
    body: JSON.stringify(body),
  });

const get = (path: string, key = ADMIN_KEY) => fetch(`${gw.url}${path}`, { headers: { 'x-gateway-api-key': key } });

/** The stored entry of a trace id, once written. */
async function entryOf(traceId: string): Promise<Record<string, any>> {
  const listed = await waitFor(async () => {
    const res = await get(`/v1/logs?trace_id=${encodeURIComponent(traceId)}`);
    const body = (await res.json()) as { data: Record<string, any>[] };
    return body.data.length > 0 ? body.data[0] : undefined;
  }, 5000, `the log entry of ${traceId}`);
  const res = await get(`/v1/logs/${listed.id}`);
  expect(res.status).toBe(200);
  return (await res.json()) as Record<string, any>;
}

/** gpt-4o-mini's list prices per million tokens (openai.com/api/pricing), written here rather than read from the table under test. */
const gpt4oMini = { input: 0.15, cached_input: 0.075, output: 0.6 };

describe('entries', () => {
  test('a non-stream chat: every field, tokens, cost, bodies redacted', async () => {
    const res = await chat(
      { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello, my key is sk-live-abcdefghijklmnopqrstuvwxyz' }], user: 'u-1', api_key: 'in-body-secret' },
      { 'x-gateway-trace-id': 'e2e-nonstream', 'x-gateway-span-id': 'aaaaaaaaaaaaaaaa', 'x-gateway-span-name': 'step-1', 'x-gateway-metadata': '{"user":"u-1","tier":2}' },
    );
    expect(res.status).toBe(200);
    await res.text();
    const e = await entryOf('e2e-nonstream');
    expect(e).toMatchObject({
      object: 'log',
      trace_id: 'e2e-nonstream',
      span_id: 'aaaaaaaaaaaaaaaa',
      span_name: 'step-1',
      workspace_id: null,
      api_key_id: `key:${ADMIN_KEY}`,
      config_id: null,
      route: 'chat.completions',
      method: 'POST',
      path: '/v1/chat/completions',
      provider: 'openai',
      provider_requested: 'openai',
      model_requested: 'gpt-4o-mini',
      model: 'gpt-4o-mini',
      target_path: '0',
      status: 200,
      stream: false,
      internal: false,
      aborted: false,
      prompt_tokens: 9,
      completion_tokens: 2,
      total_tokens: 11,
      cached_tokens: 3,
      reasoning_tokens: 1,
      tokens_estimated: false,
      cost_status: 'priced',
      pricing_multiplier: 1,
      retry_count: 0,
      attempt_count: 1,
      fallback_count: 0,
      metadata: { user: 'u-1', tier: 2 },
      error_code: null,
      request_body_truncated: false,
      response_body_truncated: false,
      ttft_ms: null,
    });
    expect(e.cost).toBeCloseTo(((9 - 3) * gpt4oMini.input + 3 * gpt4oMini.cached_input! + 2 * gpt4oMini.output) / 1e6, 12);
    expect(e.latency_ms).toBeGreaterThan(0);
    expect(e.upstream_latency_ms).toBeGreaterThan(0);
    expect(Date.parse(e.created_at)).toBeLessThanOrEqual(Date.parse(e.ended_at));
    expect(e.attempts).toHaveLength(1);
    expect(e.attempts[0]).toMatchObject({ target: '0', provider: 'openai', status: 200 });
    expect(JSON.parse(e.response_body).choices[0].message.content).toBe('Hello from the mock!');
    const request = JSON.parse(e.request_body);
    expect(request.api_key).toBe('[REDACTED]');
    expect(request.messages[0].content).toBe('hello, my key is [REDACTED]');
    // No credential anywhere in the entry: not the provider key, not the gateway key, not the body secrets.
    const text = JSON.stringify(e);
    for (const secret of [PROVIDER_KEY, 'in-body-secret', 'sk-live-abcdefghijklmnopqrstuvwxyz']) expect(text).not.toContain(secret);
    expect(text).not.toContain(`"${ADMIN_KEY}"`);
  });

  test('a stream with a usage chunk: tokens from the chunk, TTFT, assembled text', async () => {
    const res = await chat({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true } }, { 'x-gateway-trace-id': 'e2e-stream-usage' });
    expect((await res.text()).trimEnd().endsWith('data: [DONE]')).toBe(true);
    const e = await entryOf('e2e-stream-usage');
    expect(e).toMatchObject({ stream: true, prompt_tokens: 9, completion_tokens: 2, total_tokens: 11, cached_tokens: 3, reasoning_tokens: 1, tokens_estimated: false, response_body: 'Hello!', cost_status: 'priced' });
    expect(e.ttft_ms).toBeGreaterThan(0);
    expect(e.ttft_ms).toBe(e.first_byte_ms);
  });

  test('a stream whose provider sends no usage, even when asked: tokens counted (chars / 4, rounded up) and flagged', async () => {
    const content = 'Say hello to the logs please';
    mock.withholdUsage = true;
    const res = await chat({ model: 'gpt-4o-mini', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content }], stream: true }, { 'x-gateway-trace-id': 'e2e-stream-count' });
    await res.text();
    mock.withholdUsage = false;
    const e = await entryOf('e2e-stream-count');
    const prompt = Math.ceil(('Be brief.'.length + content.length) / 4);
    const completion = Math.ceil('Hello!'.length / 4);
    expect(e).toMatchObject({ stream: true, tokens_estimated: true, prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion, cached_tokens: 0, response_body: 'Hello!' });
    expect(e.cost).toBeCloseTo((prompt * gpt4oMini.input + completion * gpt4oMini.output) / 1e6, 12);
  });

  test('an unpriced model has a null cost, and the groups count it as unpriced', async () => {
    const res = await chat({ model: 'my-private-model', messages: [{ role: 'user', content: 'hi' }] }, { 'x-gateway-trace-id': 'e2e-unpriced' });
    await res.text();
    const e = await entryOf('e2e-unpriced');
    expect(e).toMatchObject({ model: 'my-private-model', prompt_tokens: 9, cost: null, cost_status: 'unpriced' });
    const groups = (await (await get('/v1/analytics/groups/model?columns=cost')).json()) as { data: Record<string, any>[] };
    const row = groups.data.find((g) => g.model === 'my-private-model');
    expect(row).toMatchObject({ requests: 1, cost: null, unpriced_requests: 1 });
  });

  test('a slug with a pricing multiplier: the requested provider and the multiplied cost', async () => {
    const res = await chat({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, { 'x-gateway-trace-id': 'e2e-multiplier', 'x-gateway-provider': '@priced', 'x-gateway-custom-host': '' });
    expect(res.status).toBe(200);
    await res.text();
    const e = await entryOf('e2e-multiplier');
    expect(e).toMatchObject({ provider: 'openai', provider_requested: '@priced', pricing_multiplier: 2, cost_status: 'priced' });
    expect(e.cost).toBeCloseTo((2 * ((9 - 3) * gpt4oMini.input + 3 * gpt4oMini.cached_input! + 2 * gpt4oMini.output)) / 1e6, 12);
  });

  test('a saved config id is recorded; an inline config is not an id', async () => {
    const a = await chat({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, { 'x-gateway-trace-id': 'e2e-config-saved', 'x-gateway-config': 'saved-prod' });
    await a.text();
    const b = await chat(
      { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
      { 'x-gateway-trace-id': 'e2e-config-inline', 'x-gateway-config': JSON.stringify({ provider: 'openai', api_key: 'sk-inline-key-abcdefghijk', custom_host: mock.baseURL }) },
    );
    await b.text();
    expect((await entryOf('e2e-config-saved')).config_id).toBe('saved-prod');
    expect((await entryOf('e2e-config-inline')).config_id).toBeNull();
    const listed = (await (await get('/v1/logs?config=saved-prod')).json()) as { data: Record<string, any>[] };
    expect(listed.data.map((d) => d.trace_id)).toEqual(['e2e-config-saved']);
  });

  test('the generic proxy is logged', async () => {
    const res = await fetch(`${gw.url}/v1/models`, {
      headers: { 'x-gateway-api-key': ADMIN_KEY, 'x-gateway-provider': 'openai', 'x-gateway-custom-host': mock.baseURL, authorization: `Bearer ${PROVIDER_KEY}`, 'x-gateway-trace-id': 'e2e-proxy' },
    });
    expect(res.status).toBe(200);
    await res.text();
    const e = await entryOf('e2e-proxy');
    expect(e).toMatchObject({ route: 'proxy', method: 'GET', path: '/v1/models', provider: 'openai', status: 200, cost: null, cost_status: 'no_usage' });
    // The mock echoes the request it saw: the provider key is in it, so the stored copy must be scrubbed.
    expect(e.response_body).not.toContain(PROVIDER_KEY);
    expect(e.response_body).toContain('[REDACTED]');
  });

  test('upstream errors and gateway errors are logged with their status and error', async () => {
    const up = await chat({ model: 'error-500', messages: [{ role: 'user', content: 'hi' }] }, { 'x-gateway-trace-id': 'e2e-upstream-500' });
    expect(up.status).toBe(500);
    await up.text();
    const own = await chat({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, { 'x-gateway-trace-id': 'e2e-unknown-provider', 'x-gateway-provider': 'nope' });
    expect(own.status).toBe(400);
    await own.text();
    const e1 = await entryOf('e2e-upstream-500');
    expect(e1).toMatchObject({ status: 500, error_code: null, cost_status: 'no_usage' });
    expect(JSON.parse(e1.response_body).error.message).toBe('Mock error 500');
    const e2 = await entryOf('e2e-unknown-provider');
    expect(e2).toMatchObject({ status: 400, error_code: 'unknown_provider', provider: null });
    expect(JSON.parse(e2.response_body).error.code).toBe('unknown_provider');
  });
});

describe('hook results', () => {
  test('guardrail and hook results are stored with the entry (a denied request too)', async () => {
    const hooks = (deny: boolean) =>
      JSON.stringify({
        provider: 'openai',
        api_key: 'sk-hook-key-abcdefghijklmn',
        custom_host: mock.baseURL,
        before_request_hooks: [{ id: 'no-banana', checks: [{ id: 'test.noWord', parameters: { word: 'banana' } }], on_fail: { deny } }],
      });
    const denied = await chat({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'a banana' }] }, { 'x-gateway-trace-id': 'e2e-hook-deny', 'x-gateway-config': hooks(true) });
    expect(denied.status).toBe(446);
    await denied.text();
    const passed = await chat({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'an apple' }] }, { 'x-gateway-trace-id': 'e2e-hook-pass', 'x-gateway-config': hooks(true) });
    expect(passed.status).toBe(200);
    await passed.text();
    const d = await entryOf('e2e-hook-deny');
    expect(d.status).toBe(446);
    expect(d.hook_results.before_request_hooks[0]).toMatchObject({ id: 'no-banana', verdict: false });
    const p = await entryOf('e2e-hook-pass');
    expect(p.hook_results.before_request_hooks[0]).toMatchObject({ id: 'no-banana', verdict: true });
  });
});

describe('routes', () => {
  test('filters: status, provider, model, metadata, cache status, time range; unknown parameters are refused', async () => {
    const m1 = await chat({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, { 'x-gateway-trace-id': 'e2e-meta-1', 'x-gateway-metadata': '{"team":"blue","n":7}' });
    await m1.text();
    const m2 = await chat({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, { 'x-gateway-trace-id': 'e2e-meta-2', 'x-gateway-metadata': '{"team":"red"}' });
    await m2.text();
    await entryOf('e2e-meta-1');
    await entryOf('e2e-meta-2');
    const ids = async (query: string) => ((await (await get(`/v1/logs?${query}`)).json()) as { data: { trace_id: string }[] }).data.map((d) => d.trace_id);
    expect(await ids('metadata.team=blue')).toEqual(['e2e-meta-1']);
    expect(await ids('metadata_key=team&metadata_value=red')).toEqual(['e2e-meta-2']);
    expect(await ids('metadata.n=7&metadata.team=blue')).toEqual(['e2e-meta-1']);
    expect(await ids('metadata.team=green')).toEqual([]);
    expect(await ids('status=500')).toContain('e2e-upstream-500');
    expect(await ids('status=500')).not.toContain('e2e-meta-1');
    expect(await ids('model=my-private-model')).toEqual(['e2e-unpriced']);
    expect(await ids('provider=%40priced')).toEqual(['e2e-multiplier']);
    expect(await ids(`from=${Date.now() + 60_000}`)).toEqual([]);
    expect(await ids(`to=${new Date(Date.now() - 3_600_000).toISOString()}`)).toEqual([]);
    expect(await ids('cache_status=HIT')).toEqual([]);
    const bad = await get('/v1/logs?colour=blue');
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: { code: 'invalid_request', param: 'colour' } });
    const badTime = await get('/v1/logs?from=yesterday');
    expect(badTime.status).toBe(400);
    expect(((await badTime.json()) as any).error.param).toBe('from');
  });

  test('cursor pagination walks every entry once, newest first', async () => {
    const total = ((await (await get('/v1/logs?limit=500')).json()) as { data: { id: string }[] }).data.length;
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await get(`/v1/logs?limit=3${cursor === null ? '' : `&cursor=${cursor}`}`);
      const page = (await res.json()) as { data: { id: string; created_at: string }[]; has_more: boolean; next_cursor: string | null };
      seen.push(...page.data.map((d) => d.id));
      cursor = page.next_cursor;
      expect(page.has_more).toBe(cursor !== null);
      pages++;
    } while (cursor !== null && pages < 100);
    expect(seen.length).toBeGreaterThanOrEqual(total);
    expect(new Set(seen).size).toBe(seen.length);
    const limited = await get('/v1/logs?limit=501');
    expect(limited.status).toBe(400);
    expect((await get('/v1/logs?cursor=nonsense')).status).toBe(400);
  });

  test('a full entry by id; an unknown id is a 404 envelope', async () => {
    const res = await get('/v1/logs/log_doesnotexist');
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: { code: 'not_found' } });
  });

  test('scopes: logs.read or * is needed, and the 403 names the scope', async () => {
    const res = await get('/v1/logs', 'no-scope-key-01');
    expect(res.status).toBe(403);
    const body = (await res.json()) as any;
    expect(body.error.code).toBe('forbidden');
    expect(body.error.message).toContain('logs.read');
    expect((await get('/v1/analytics/groups/model', 'no-scope-key-01')).status).toBe(403);
  });

  test('a workspace key sees its workspace only, in the list, by id and in groups', async () => {
    const a = await chat({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, { 'x-gateway-trace-id': 'e2e-ws-a' }, 'ws-a-key-0001');
    await a.text();
    const own = await waitFor(async () => {
      const body = (await (await get('/v1/logs?route=chat.completions', 'ws-a-key-0001')).json()) as { data: Record<string, any>[] };
      return body.data.length > 0 ? body.data : undefined;
    });
    expect(own.map((d) => d.trace_id)).toEqual(['e2e-ws-a']);
    expect(own[0]!.workspace_id).toBe('ws-a');
    // The ws-b key's own reads are logged in ws-b; it sees no ws-a entry.
    const b = (await (await get('/v1/logs', 'ws-b-key-0001')).json()) as { data: Record<string, any>[] };
    expect(b.data.every((d) => d.workspace_id === 'ws-b')).toBe(true);
    expect(b.data.some((d) => d.trace_id === 'e2e-ws-a')).toBe(false);
    expect((await get(`/v1/logs/${own[0]!.id}`, 'ws-b-key-0001')).status).toBe(404);
    expect((await get(`/v1/logs/${own[0]!.id}`, 'ws-a-key-0001')).status).toBe(200);
    expect((await get('/v1/logs?workspace_id=ws-b', 'ws-a-key-0001')).status).toBe(403);
    const groups = (await (await get('/v1/logs/groups/workspace?route=chat.completions', 'ws-a-key-0001')).json()) as { data: unknown[] };
    expect(groups.data).toEqual([{ workspace: 'ws-a', requests: 1 }]);
  });

  test('groups: the default carries only the count; unknown groupBy and columns are 400s naming them', async () => {
    const res = await get('/v1/logs/groups/status_code');
    expect(res.status).toBe(200);
    const body = (await res.json()) as { group_by: string; data: Record<string, unknown>[] };
    expect(body.group_by).toBe('status_code');
    for (const row of body.data) expect(Object.keys(row).sort()).toEqual(['requests', 'status_code']);
    expect(body.data.find((r) => r.status_code === 500)).toMatchObject({ requests: 1 });
    const badGroup = await get('/v1/analytics/groups/colour');
    expect(badGroup.status).toBe(400);
    expect(((await badGroup.json()) as any).error.message).toContain('colour');
    const badColumn = await get('/v1/analytics/groups/model?columns=cost,p42_latency');
    expect(badColumn.status).toBe(400);
    const err = ((await badColumn.json()) as any).error;
    expect(err.param).toBe('columns');
    expect(err.message).toContain('p42_latency');
    const all = await get('/v1/analytics/groups/ai_service?columns=cost,total_tokens,avg_tokens,avg_input_tokens,avg_output_tokens,avg_latency,p95_latency,p99_latency,success_rate,error_count,cache_hit_rate,last_seen,first_seen');
    expect(all.status).toBe(200);
    const openaiRow = ((await all.json()) as { data: Record<string, any>[] }).data.find((r) => r.ai_service === 'openai')!;
    expect(openaiRow.requests).toBeGreaterThan(5);
    expect(openaiRow.p99_latency).toBeGreaterThanOrEqual(openaiRow.p95_latency);
    expect(Date.parse(openaiRow.last_seen)).toBeGreaterThanOrEqual(Date.parse(openaiRow.first_seen));
  });
});

describe('analytics over HTTP', () => {
  test('every column of every groupBy equals a brute-force computation over the listed entries', async () => {
    const filter = 'route=chat.completions'; // the reads themselves are logged too: keep them out of both sides
    const listed = ((await (await get(`/v1/logs?${filter}&limit=500`)).json()) as { data: Record<string, any>[]; has_more: boolean });
    expect(listed.has_more).toBe(false);
    const rows = listed.data.map((d) => ({ ...d, created_at: Date.parse(d.created_at) }) as unknown as LogEntry);
    for (const groupBy of ['ai_service', 'provider', 'model', 'status_code', 'api_key', 'config', 'workspace', 'prompt', 'front_door'] as const) {
      const res = await get(`/v1/analytics/groups/${groupBy}?${filter}&columns=${GROUP_COLUMNS.join(',')}`);
      expect(res.status).toBe(200);
      const body = (await res.json()) as { data: Record<string, unknown>[] };
      const expected = bruteGroups(rows, groupBy);
      expect(body.data).toHaveLength(expected.size);
      for (const row of body.data) {
        const want = expected.get(String(row[groupBy]))!;
        expect(want, `${groupBy} ${String(row[groupBy])}`).toBeDefined();
        for (const [column, value] of Object.entries(want)) {
          if (SKETCHED.has(column)) expectSketched(row[column], value, `${groupBy}.${column}`);
          else if (typeof value === 'number' && !Number.isInteger(value)) expect(row[column], `${groupBy}.${column}`).toBeCloseTo(value, 9);
          else expect(row[column], `${groupBy}.${column}`).toEqual(value);
        }
      }
    }
  });
});

describe('analytics time series over HTTP', () => {
  test('the totals and the buckets agree with the listed entries; the range and interval are as asked', async () => {
    const filter = 'route=chat.completions';
    const listed = ((await (await get(`/v1/logs?${filter}&limit=500`)).json()) as { data: Record<string, any>[] }).data;
    const times = listed.map((d) => Date.parse(d.created_at));
    const from = Math.min(...times) - 1;
    const to = Math.max(...times) + 1;
    const res = await get(`/v1/analytics/timeseries?${filter}&from=${from}&to=${to}&interval=minute`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { object: string; from: string; to: string; interval: string; bucket_ms: number; totals: Record<string, any>; data: Record<string, any>[] };
    expect(body).toMatchObject({ object: 'analytics.timeseries', from: new Date(from).toISOString(), to: new Date(to).toISOString(), interval: 'minute', bucket_ms: 60_000 });
    // Buckets on the clock: the first starts at the minute `from` falls in, and counts from `from`.
    const origin = from - (from % 60_000);
    expect(body.data).toHaveLength(Math.ceil((to - origin) / 60_000));
    expect(body.data[0]!.time).toBe(new Date(origin).toISOString());
    expect(body.totals.requests).toBe(listed.length);
    expect(body.data.reduce((a, b) => a + b.requests, 0)).toBe(listed.length);
    const failed = listed.filter((d) => !(d.status >= 200 && d.status < 400 && d.error_code === null)).length;
    expect(failed).toBeGreaterThan(0);
    expect(body.totals.errors).toBe(failed);
    expect(body.totals.total_tokens).toBe(listed.reduce((a, d) => a + (d.total_tokens ?? 0), 0));
    expect(body.totals.cost).toBeCloseTo(listed.reduce((a, d) => a + (d.cost ?? 0), 0), 12);
    const latencies = listed.map((d) => d.latency_ms).filter((l) => l !== null).sort((a, b) => a - b);
    expectSketched(body.totals.p50_latency, latencies[Math.ceil(latencies.length / 2) - 1], 'p50');
    expectSketched(body.totals.p95_latency, latencies[Math.ceil((95 * latencies.length) / 100) - 1], 'p95');
  });

  test('by default the last day in automatic buckets aligned to the clock; bad intervals and ranges are 400s naming the parameter', async () => {
    const body = (await (await get('/v1/analytics/timeseries')).json()) as { from: string; to: string; interval: string; bucket_ms: number; data: unknown[] };
    expect(body.interval).toBe('15m'); // the narrowest that keeps a day within 240 buckets
    expect(Date.parse(body.from) % body.bucket_ms).toBe(0);
    expect(Date.parse(body.to) - Date.parse(body.from)).toBeGreaterThanOrEqual(86_400_000);
    expect(body.data).toHaveLength(Math.ceil((Date.parse(body.to) - Date.parse(body.from)) / body.bucket_ms));
    const hour = (await (await get(`/v1/analytics/timeseries?from=${Date.now() - 3_600_000}`)).json()) as { interval: string };
    expect(hour.interval).toBe('minute');
    for (const [query, param] of [
      ['interval=fortnight', 'interval'],
      ['from=2025-01-02&to=2025-01-01', 'from'],
      ['from=2020-01-01&interval=minute', 'interval'],
      ['colour=red', 'colour'],
    ] as const) {
      const res = await get(`/v1/analytics/timeseries?${query}`);
      expect(res.status, query).toBe(400);
      expect(((await res.json()) as any).error.param, query).toBe(param);
    }
    expect((await get('/v1/analytics/timeseries', 'no-scope-key-01')).status).toBe(403);
  });
});

describe('traceparent', () => {
  test('an incoming traceparent keeps its trace id upstream, under the gateway span, and becomes the trace id', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const res = await chat({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'trace me' }] }, { traceparent: `00-${traceId}-00f067aa0ba902b7-01`, tracestate: 'vendor=1' });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gateway-trace-id')).toBe(traceId);
    await res.text();
    const seen = mock.requests.filter((r) => r.body.includes('trace me')).at(-1)!;
    const sent = String(seen.headers.traceparent);
    expect(sent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    expect(sent).not.toContain('00f067aa0ba902b7');
    expect(seen.headers.tracestate).toBe('vendor=1');
    const e = await entryOf(traceId);
    expect(e.parent_span_id).toBe('00f067aa0ba902b7');
    expect(e.span_id).toBe(sent.split('-')[2]);
  });

  test('without one, the gateway sends one derived from x-gateway-trace-id (shaped routes and the proxy)', async () => {
    const res = await chat({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'derive me' }] }, { 'x-gateway-trace-id': 'my-trace-1', 'x-gateway-span-id': '1111222233334444' });
    await res.text();
    const seen = mock.requests.filter((r) => r.body.includes('derive me')).at(-1)!;
    expect(seen.headers.traceparent).toBe(`00-${w3cTraceId('my-trace-1')}-1111222233334444-01`);
    const uuid = '0f8fad5b-d9cb-469f-a165-70867728950e';
    const proxied = await fetch(`${gw.url}/v1/assistants`, { headers: { 'x-gateway-api-key': ADMIN_KEY, 'x-gateway-provider': 'openai', 'x-gateway-custom-host': mock.baseURL, 'x-gateway-trace-id': uuid } });
    const echo = (await proxied.json()) as { headers: Record<string, string> };
    expect(echo.headers.traceparent).toMatch(/^00-0f8fad5bd9cb469fa16570867728950e-[0-9a-f]{16}-01$/);
  });
});

describe('metrics', () => {
  test('/metrics is Prometheus text with the gateway families, and counts what happened', async () => {
    const limitedRes = await chat({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, { 'x-test-limit': '1' });
    expect(limitedRes.status).toBe(429);
    await limitedRes.text();
    const res = await get('/metrics');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    const parsed = parsePrometheus(await res.text());
    for (const family of [
      'gateway_requests_total', 'gateway_request_duration_seconds', 'gateway_time_to_first_token_seconds', 'gateway_tokens_total', 'gateway_cost_usd_total',
      'gateway_unpriced_requests_total', 'gateway_cache_hits_total', 'gateway_retries_total', 'gateway_fallbacks_total', 'gateway_circuit_open_total',
      'gateway_log_queue_depth', 'gateway_log_dropped_total', 'gateway_time_to_first_byte_seconds', 'gateway_errors_total', 'gateway_guardrail_checks_total',
      'gateway_guardrail_denied_total', 'gateway_limit_rejections_total',
    ]) {
      expect(parsed.types.has(family), family).toBe(true);
    }
    expect(metricValue(parsed, 'gateway_requests_total', { route: 'chat.completions', provider: 'openai', status: '200' })).toBeGreaterThan(5);
    expect(metricValue(parsed, 'gateway_requests_total', { route: 'proxy' })).toBeGreaterThanOrEqual(1);
    expect(metricValue(parsed, 'gateway_tokens_total', { kind: 'completion', estimated: 'true' })).toBe(2);
    expect(metricValue(parsed, 'gateway_unpriced_requests_total', { model: 'my-private-model' })).toBe(1);
    expect(metricValue(parsed, 'gateway_cost_usd_total')).toBeGreaterThan(0);
    expect(metricValue(parsed, 'gateway_time_to_first_token_seconds_count')).toBeGreaterThanOrEqual(2);
    expect(metricValue(parsed, 'gateway_log_dropped_total')).toBe(0);
    // Errors by code, the limit refusal, guardrail checks and the denial (from the tests above), and TTFB for every answered request.
    expect(metricValue(parsed, 'gateway_errors_total', { route: 'chat.completions', code: 'unknown_provider' })).toBe(1);
    expect(metricValue(parsed, 'gateway_errors_total', { code: 'rate_limited' })).toBe(1);
    expect(metricValue(parsed, 'gateway_limit_rejections_total', { code: 'rate_limited' })).toBe(1);
    expect(metricValue(parsed, 'gateway_guardrail_checks_total', { phase: 'before', check: 'test.noWord', outcome: 'fail' })).toBe(1);
    expect(metricValue(parsed, 'gateway_guardrail_checks_total', { phase: 'before', check: 'test.noWord', outcome: 'pass' })).toBe(1);
    expect(metricValue(parsed, 'gateway_guardrail_denied_total', { phase: 'before' })).toBe(1);
    expect(metricValue(parsed, 'gateway_time_to_first_byte_seconds_count')).toBeGreaterThanOrEqual(metricValue(parsed, 'gateway_requests_total', { route: 'chat.completions', status: '200' }));
  });

  test('/metrics needs metrics.read or *; /v1/metrics is the same', async () => {
    expect((await get('/metrics', 'metrics-key-001')).status).toBe(200);
    expect((await get('/v1/metrics', 'metrics-key-001')).status).toBe(200);
    const denied = await get('/metrics', 'ws-a-key-0001');
    expect(denied.status).toBe(403);
    expect(((await denied.json()) as any).error.message).toContain('metrics.read');
    expect((await fetch(`${gw.url}/metrics`)).status).toBe(401);
  });
});

describe('metrics options', () => {
  test('with a metrics token, /metrics takes that bearer token only; the default Node metrics carry the event-loop lag', async () => {
    const token = 'scrape-token-0123456789';
    const other = await serveGateway({ plugins: logGatewayPlugins({ file: await tempFile('metrics.db'), metrics: { token, defaultMetrics: true } }) });
    try {
      const ok = await fetch(`${other.url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
      expect(ok.status).toBe(200);
      const parsed = parsePrometheus(await ok.text());
      expect(parsed.types.get('nodejs_eventloop_lag_seconds')).toBe('gauge');
      expect(parsed.types.has('nodejs_eventloop_lag_p99_seconds')).toBe(true);
      expect((await fetch(`${other.url}/metrics`)).status).toBe(401);
      expect((await fetch(`${other.url}/metrics`, { headers: { authorization: 'Bearer wrong-token-0000000' } })).status).toBe(401);
      // The gateway key is not a way in when a token is configured.
      expect((await fetch(`${other.url}/metrics`, { headers: { 'x-gateway-api-key': ADMIN_KEY } })).status).toBe(401);
    } finally {
      await other.close();
    }
  });
});
