import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { cache } from '../../../plugins/cache/index.js';
import { cacheSimple } from '../../../plugins/cache/simple/index.js';
import { memoryCacheStore } from '../../../plugins/cache/stores/memory/index.js';
import { config } from '../../../plugins/config/index.js';
import { openai } from '../../../plugins/providers/openai/index.js';
import { proxy } from '../../../plugins/proxy/index.js';
import { requestLog } from '../../../plugins/request-log/index.js';
import { trace } from '../../../plugins/trace/index.js';
import { validation } from '../../../plugins/validation/index.js';
import { waitForLog } from '../../helpers/gateway.js';
import { serveGateway } from '../../helpers/serve.js';
import { startMockOpenAI, type MockUpstream } from '../../mocks/openai-upstream.js';
import { countingStore, post, until, workspaceAuth } from './helpers.js';

let mock: MockUpstream;
let gw: Awaited<ReturnType<typeof serveGateway>>;
let clock = 1_700_000_000_000;
const counting = countingStore(memoryCacheStore({ now: () => clock }));

beforeAll(async () => {
  mock = await startMockOpenAI();
  gw = await serveGateway({
    plugins: [
      trace(),
      workspaceAuth({ 'key-a': 'ws-a', 'key-a2': 'ws-a', 'key-b': 'ws-b' }),
      config(),
      validation(),
      openai(),
      proxy(),
      counting.plugin,
      cache({ now: () => clock }),
      cacheSimple(),
      requestLog(),
    ],
  });
});
afterAll(async () => {
  await gw.close();
  await mock.close();
});

const target = (extra: Record<string, unknown> = {}) => ({ provider: 'openai', api_key: 'sk-a', custom_host: mock.baseURL, cache: { mode: 'simple', max_age: 60 }, ...extra });
const chatBody = (content: string, extra: Record<string, unknown> = {}) => ({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }], ...extra });

async function chat(body: unknown, headers: Record<string, string> = {}, cfg: unknown = target(), key = 'key-a', path = '/v1/chat/completions') {
  return post(gw.url, path, body, { 'x-gateway-api-key': key, 'x-gateway-config': JSON.stringify(cfg), ...headers });
}

/** Sends a miss and waits until its answer is stored. */
async function miss(body: unknown, headers: Record<string, string> = {}, cfg: unknown = target(), key = 'key-a', path = '/v1/chat/completions') {
  const sets = counting.counts.sets;
  const r = await chat(body, headers, cfg, key, path);
  expect(r.status).toBe(200);
  expect(r.cacheStatus).toMatch(/^(MISS|REFRESH)$/);
  await until(() => counting.counts.sets > sets);
  return r;
}

describe('simple mode, memory store', () => {
  test('a miss calls the upstream and stores; the same request then hits without calling it', async () => {
    const body = chatBody('miss then hit');
    const first = await miss(body, { 'x-gateway-trace-id': 'cache-miss-1' });
    expect(first.cacheStatus).toBe('MISS');
    expect(first.res.headers.get('x-gateway-provider')).toBe('openai');

    const before = mock.requests.length;
    const hit = await chat(body, { 'x-gateway-trace-id': 'cache-hit-1' });
    expect(hit.status).toBe(200);
    expect(hit.cacheStatus).toBe('HIT');
    expect(mock.requests.length).toBe(before);
    expect(hit.text).toBe(first.text);
    expect(hit.res.headers.get('content-type')).toBe('application/json');
    // A hit is the gateway's own answer: no provider answered it.
    expect(hit.res.headers.get('x-gateway-provider')).toBeNull();

    const missLine = await waitForLog(gw.logs, (l) => l.trace_id === 'cache-miss-1');
    expect(missLine.cache_status).toBe('MISS');
    const hitLine = await waitForLog(gw.logs, (l) => l.trace_id === 'cache-hit-1');
    expect(hitLine).toMatchObject({ cache_status: 'HIT', status: 200, tokens: { total_tokens: 11 } });
    expect(hitLine.attempts).toBeUndefined();
    expect(hitLine.upstream_latency_ms).toBeNull();
  });

  test('the key ignores key order, stream flags absent or false, and metadata', async () => {
    await miss({ messages: [{ content: 'canonical', role: 'user' }], model: 'gpt-4o-mini', temperature: 0 });
    const before = mock.requests.length;
    const hit = await chat({ temperature: 0, model: 'gpt-4o-mini', stream: false, messages: [{ role: 'user', content: 'canonical' }] }, { 'x-gateway-metadata': '{"user":"u9"}' });
    expect(hit.cacheStatus).toBe('HIT');
    expect(mock.requests.length).toBe(before);
    // Any other parameter is part of the key.
    expect((await chat(chatBody('canonical', { temperature: 0.5 }))).cacheStatus).toBe('MISS');
    expect(mock.requests.length).toBe(before + 1);
  });

  test('the target identity is in the key: another credential or host is a miss', async () => {
    const body = chatBody('identity');
    await miss(body);
    expect((await chat(body, {}, target({ api_key: 'sk-other' }))).cacheStatus).toBe('MISS');
    expect((await chat(body, {}, target({ override_params: { temperature: 1 } }))).cacheStatus).toBe('MISS');
    expect((await chat(body)).cacheStatus).toBe('HIT');
  });

  test('namespaces partition the cache; with one, metadata and other headers are ignored', async () => {
    const body = chatBody('namespaced');
    await miss(body, { 'x-gateway-cache-namespace': 'team-a' });
    expect((await chat(body, { 'x-gateway-cache-namespace': 'team-b' })).cacheStatus).toBe('MISS');
    expect((await chat(body)).cacheStatus).toBe('MISS');
    const before = mock.requests.length;
    const hit = await chat(body, { 'x-gateway-cache-namespace': 'team-a', 'x-gateway-metadata': '{"env":"other"}', 'x-gateway-trace-id': 'ns-hit' });
    expect(hit.cacheStatus).toBe('HIT');
    expect(mock.requests.length).toBe(before);
  });

  test('workspaces never see each other’s entries, even under the same namespace', async () => {
    const body = chatBody('tenant secret question');
    const ns = { 'x-gateway-cache-namespace': 'shared-name' };
    await miss(body, ns, target(), 'key-a');
    await miss(body, {}, target(), 'key-a');
    const before = mock.requests.length;
    // Workspace b sends the very same request, with and without the namespace: both go upstream.
    expect((await chat(body, ns, target(), 'key-b')).cacheStatus).toBe('MISS');
    expect((await chat(body, {}, target(), 'key-b')).cacheStatus).toBe('MISS');
    expect(mock.requests.length).toBe(before + 2);
    // Another key of workspace a shares a's entries.
    expect((await chat(body, ns, target(), 'key-a2')).cacheStatus).toBe('HIT');
    expect(mock.requests.length).toBe(before + 2);
  });

  test('max_age: a hit until it has passed, a miss after (fake clock); the default and the cap', async () => {
    const body = chatBody('expiry');
    await miss(body);
    clock += 59_000;
    expect((await chat(body)).cacheStatus).toBe('HIT');
    clock += 2_000;
    expect((await chat(body)).cacheStatus).toBe('MISS');
    await until(async () => (await chat(body)).cacheStatus === 'HIT');

    // No max_age: the default, 3600 s.
    const noAge = target({ cache: { mode: 'simple' } });
    await miss(chatBody('default age'), {}, noAge);
    clock += 3_599_000;
    expect((await chat(chatBody('default age'), {}, noAge)).cacheStatus).toBe('HIT');
    clock += 2_000;
    expect((await chat(chatBody('default age'), {}, noAge)).cacheStatus).toBe('MISS');

    // Above the cap (7 days): kept 7 days only.
    const long = target({ cache: { mode: 'simple', max_age: 365 * 24 * 3600 } });
    await miss(chatBody('capped age'), {}, long);
    clock += 7 * 24 * 3600 * 1000 - 1000;
    expect((await chat(chatBody('capped age'), {}, long)).cacheStatus).toBe('HIT');
    clock += 2_000;
    expect((await chat(chatBody('capped age'), {}, long)).cacheStatus).toBe('MISS');
  });

  test('a request’s own max_age bounds the age of what it accepts', async () => {
    const body = chatBody('short reader');
    await miss(body, {}, target({ cache: { mode: 'simple', max_age: 600 } }));
    clock += 30_000;
    expect((await chat(body, {}, target({ cache: { mode: 'simple', max_age: 10 } }))).cacheStatus).toBe('MISS');
  });

  test('max_age 0 never hits and stores nothing', async () => {
    const zero = target({ cache: { mode: 'simple', max_age: 0 } });
    const sets = counting.counts.sets;
    expect((await chat(chatBody('zero'), {}, zero)).cacheStatus).toBe('MISS');
    expect((await chat(chatBody('zero'), {}, zero)).cacheStatus).toBe('MISS');
    await new Promise((r) => setTimeout(r, 50));
    expect(counting.counts.sets).toBe(sets);
  });

  test('force refresh skips the read, calls the upstream and stores the new answer', async () => {
    const body = chatBody('refresh me');
    await miss(body);
    clock += 50_000;
    const before = mock.requests.length;
    const refreshed = await miss(body, { 'x-gateway-cache-force-refresh': 'true', 'x-gateway-trace-id': 'cache-refresh' });
    expect(refreshed.cacheStatus).toBe('REFRESH');
    expect(mock.requests.length).toBe(before + 1);
    expect((await waitForLog(gw.logs, (l) => l.trace_id === 'cache-refresh')).cache_status).toBe('REFRESH');
    // 50 s later the first answer (max_age 60) would be gone; the refreshed one is 50 s younger.
    clock += 50_000;
    expect((await chat(body)).cacheStatus).toBe('HIT');
    expect(mock.requests.length).toBe(before + 1);
    // Any other value of the header is an ordinary lookup.
    expect((await chat(body, { 'x-gateway-cache-force-refresh': 'false' })).cacheStatus).toBe('HIT');
  });

  test('only 2xx answers are stored', async () => {
    const sets = counting.counts.sets;
    for (const model of ['error-500', 'error-429', 'error-400']) {
      const body = { model, messages: [{ role: 'user', content: 'fails' }] };
      const first = await chat(body);
      expect(first.cacheStatus).toBe('MISS');
      expect(first.status).toBe(Number(model.slice(6)));
      const before = mock.requests.length;
      expect((await chat(body)).cacheStatus).toBe('MISS');
      expect(mock.requests.length).toBe(before + 1);
    }
    await new Promise((r) => setTimeout(r, 50));
    expect(counting.counts.sets).toBe(sets);
  });

  test('completions and embeddings are cached too', async () => {
    const completion = { model: 'gpt-3.5-turbo-instruct', prompt: 'Say this is a test' };
    await miss(completion, {}, target(), 'key-a', '/v1/completions');
    let before = mock.requests.length;
    const hit = await chat(completion, {}, target(), 'key-a', '/v1/completions');
    expect(hit.cacheStatus).toBe('HIT');
    expect(hit.json().object).toBe('text_completion');
    expect(mock.requests.length).toBe(before);

    const embedding = { model: 'text-embedding-3-small', input: ['a', 'b'] };
    await miss(embedding, {}, target(), 'key-a', '/v1/embeddings');
    before = mock.requests.length;
    const eHit = await chat(embedding, {}, target(), 'key-a', '/v1/embeddings');
    expect(eHit.cacheStatus).toBe('HIT');
    expect(eHit.json().data).toHaveLength(2);
    expect(mock.requests.length).toBe(before);
    // The same body on another route is another entry.
    expect((await chat({ model: 'text-embedding-3-small', input: ['a', 'b'], messages: [{ role: 'user', content: 'x' }] }, {}, target(), 'key-a', '/v1/chat/completions')).cacheStatus).toBe('MISS');
  });

  test('a cacheable request without cache settings is DISABLED; other routes are untouched', async () => {
    const disabled = await chat(chatBody('no cache'), { 'x-gateway-trace-id': 'cache-disabled' }, target({ cache: undefined }));
    expect(disabled.status).toBe(200);
    expect(disabled.cacheStatus).toBe('DISABLED');
    expect((await waitForLog(gw.logs, (l) => l.trace_id === 'cache-disabled')).cache_status).toBe('DISABLED');

    const res = await fetch(`${gw.url}/v1/models`, { headers: { 'x-gateway-api-key': 'key-a', 'x-gateway-config': JSON.stringify(target()), 'x-gateway-trace-id': 'cache-proxy' } });
    await res.text();
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gateway-cache-status')).toBeNull();
    expect((await waitForLog(gw.logs, (l) => l.trace_id === 'cache-proxy')).cache_status).toBeUndefined();
  });

  test('a mode that is not loaded is DISABLED; an invalid body is refused before the cache', async () => {
    const semantic = await chat(chatBody('semantic not loaded'), {}, target({ cache: { mode: 'semantic' } }));
    expect(semantic.status).toBe(200);
    expect(semantic.cacheStatus).toBe('DISABLED');
    const invalid = await chat({ model: 'gpt-4o-mini', messages: [] });
    expect(invalid.status).toBe(400);
    expect(invalid.cacheStatus).toBeNull();
  });

  test('a strategy tree caches by its root setting, inherited by its children', async () => {
    const tree = {
      strategy: { mode: 'fallback' },
      cache: { mode: 'simple', max_age: 60 },
      targets: [
        { provider: 'openai', api_key: 'sk-down', custom_host: 'http://127.0.0.1:1/v1' },
        { provider: 'openai', api_key: 'sk-up', custom_host: mock.baseURL },
      ],
    };
    const body = chatBody('tree');
    const gwTree = await serveGateway({ plugins: [config(), openai(), (await import('../../../plugins/strategies/fallback/index.js')).fallbackStrategy(), cache(), cacheSimple()] });
    try {
      const send = (cfg: unknown) => post(gwTree.url, '/v1/chat/completions', body, { 'x-gateway-config': JSON.stringify(cfg) });
      const first = await send(tree);
      expect(first.status).toBe(200);
      expect(first.cacheStatus).toBe('MISS');
      await until(async () => (await send(tree)).cacheStatus === 'HIT');
      // Another credential anywhere in the tree is another entry.
      const other = { ...tree, targets: [tree.targets[0], { ...tree.targets[1], api_key: 'sk-up-2' }] };
      expect((await send(other)).cacheStatus).toBe('MISS');
    } finally {
      await gwTree.close();
    }
  });
});
