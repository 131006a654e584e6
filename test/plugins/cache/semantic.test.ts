import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { cache } from '../../../plugins/cache/index.js';
import { cacheSemantic } from '../../../plugins/cache/semantic/index.js';
import { cosine, semanticInput, unitVector } from '../../../plugins/cache/semantic/text.js';
import { cacheSimple } from '../../../plugins/cache/simple/index.js';
import { memoryCacheStore } from '../../../plugins/cache/stores/memory/index.js';
import { config } from '../../../plugins/config/index.js';
import { openai } from '../../../plugins/providers/openai/index.js';
import { requestLog } from '../../../plugins/request-log/index.js';
import { trace } from '../../../plugins/trace/index.js';
import { waitForLog } from '../../helpers/gateway.js';
import { serveGateway } from '../../helpers/serve.js';
import { startMockOpenAI, type MockUpstream } from '../../mocks/openai-upstream.js';
import { bagOfWords, countingStore, post, startMockEmbeddings, until, type MockEmbeddings } from './helpers.js';

let mock: MockUpstream;
let emb: MockEmbeddings;

beforeAll(async () => {
  mock = await startMockOpenAI();
  emb = await startMockEmbeddings();
});
afterAll(async () => {
  await mock.close();
  await emb.close();
});

/** A gateway with both modes; the semantic one embeds through `embeddingHost`. */
async function semanticGateway(options: { threshold?: number; embeddingHost?: string } = {}) {
  const counting = countingStore(memoryCacheStore());
  const gw = await serveGateway({
    plugins: [
      trace(),
      config(),
      openai(),
      counting.plugin,
      cache(),
      cacheSimple(),
      cacheSemantic({
        embedding: { target: { provider: 'openai', api_key: 'sk-embed', custom_host: options.embeddingHost ?? emb.baseURL }, model: 'bag-of-words' },
        ...(options.threshold === undefined ? {} : { threshold: options.threshold }),
        timeoutMs: 2000,
      }),
      requestLog(),
    ],
  });
  const cfg = (extra: Record<string, unknown> = {}) => JSON.stringify({ provider: 'openai', api_key: 'sk-chat', custom_host: mock.baseURL, cache: { mode: 'semantic', max_age: 300 }, ...extra });
  const chat = (body: Record<string, unknown>, headers: Record<string, string> = {}, extra: Record<string, unknown> = {}, path = '/v1/chat/completions') =>
    post(gw.url, path, body, { 'x-gateway-config': cfg(extra), ...headers });
  /** Sends a miss and waits until its answer and its vector are stored. */
  const store = async (body: Record<string, unknown>, headers: Record<string, string> = {}, extra: Record<string, unknown> = {}, path = '/v1/chat/completions') => {
    const n = counting.counts.candidates;
    const r = await chat(body, headers, extra, path);
    expect(r.status).toBe(200);
    await until(() => counting.counts.candidates > n);
    return r;
  };
  return { gw, counting, chat, store };
}

const ask = (content: string, extra: Record<string, unknown> = {}) => ({
  model: 'gpt-4o-mini',
  messages: [{ role: 'system', content: 'You are terse.' }, { role: 'user', content }],
  ...extra,
});

describe('semantic mode', () => {
  let g: Awaited<ReturnType<typeof semanticGateway>>;
  beforeAll(async () => {
    g = await semanticGateway();
  });
  afterAll(() => g.gw.close());

  test('a differently worded request with the same meaning is a SEMANTIC HIT; another meaning is a miss', async () => {
    const first = await g.store(ask('What is the capital of France?'));
    expect(first.cacheStatus).toBe('MISS');
    expect(emb.inputs.at(-1)).toBe('What is the capital of France?');

    const before = mock.requests.length;
    const hit = await g.chat(ask('what is THE capital of france'), { 'x-gateway-trace-id': 'semantic-hit' });
    expect(hit.status).toBe(200);
    expect(hit.cacheStatus).toBe('SEMANTIC HIT');
    expect(hit.text).toBe(first.text);
    expect(mock.requests.length).toBe(before);
    const line = await waitForLog(g.gw.logs, (l) => l.trace_id === 'semantic-hit' && l.internal === undefined);
    expect(line).toMatchObject({ cache_status: 'SEMANTIC HIT', tokens: { total_tokens: 11 } });
    // The embedding call went through the gateway's transport and was logged, as an internal request of the same trace.
    const embedLine = await waitForLog(g.gw.logs, (l) => l.trace_id === 'semantic-hit' && l.internal === true);
    expect(embedLine).toMatchObject({ route: 'embeddings', model: 'bag-of-words', status: 200, provider: 'openai' });

    // 5 of 6 words in common: cosine 0.83 < 0.95.
    const other = await g.chat(ask('What is the capital of Germany?'));
    expect(other.cacheStatus).toBe('MISS');
    expect(mock.requests.length).toBe(before + 1);
  });

  test('the exact match comes first: an identical request is a HIT without any embedding', async () => {
    await g.store(ask('How tall is Mont Blanc?'));
    const seen = emb.inputs.length;
    const before = mock.requests.length;
    expect((await g.chat(ask('How tall is Mont Blanc?'))).cacheStatus).toBe('HIT');
    expect(emb.inputs.length).toBe(seen);
    expect(mock.requests.length).toBe(before);
  });

  test('every other parameter must match exactly: model, temperature, system prompt, earlier turns, namespace', async () => {
    await g.store(ask('Name a red fruit'));
    expect((await g.chat(ask('name a red fruit!'))).cacheStatus).toBe('SEMANTIC HIT');
    expect((await g.chat(ask('name a red fruit!', { temperature: 0.7 }))).cacheStatus).toBe('MISS');
    expect((await g.chat(ask('name a red fruit!', { model: 'gpt-4o' }))).cacheStatus).toBe('MISS');
    expect((await g.chat({ model: 'gpt-4o-mini', messages: [{ role: 'system', content: 'You are verbose.' }, { role: 'user', content: 'name a red fruit!' }] })).cacheStatus).toBe('MISS');
    const longer = { model: 'gpt-4o-mini', messages: [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }, { role: 'user', content: 'name a red fruit!' }] };
    expect((await g.chat(longer)).cacheStatus).toBe('MISS');
    expect((await g.chat(ask('name a red fruit!'), { 'x-gateway-cache-namespace': 'elsewhere' })).cacheStatus).toBe('MISS');
    // And the credential of the target.
    expect((await g.chat(ask('name a red fruit!'), {}, { api_key: 'sk-chat-2' })).cacheStatus).toBe('MISS');
  });

  test('a semantic hit replays as a stream when asked', async () => {
    await g.store(ask('Which ocean is the largest?'));
    const hit = await g.chat(ask('which is the largest ocean', { stream: true }));
    expect(hit.cacheStatus).toBe('SEMANTIC HIT');
    expect(hit.text).toContain('Hello from the mock!');
    expect(hit.text.trimEnd().endsWith('data: [DONE]')).toBe(true);
  });

  test('completions: the prompt is compared by meaning', async () => {
    await g.store({ model: 'gpt-3.5-turbo-instruct', prompt: 'Write a haiku about rain' }, {}, {}, '/v1/completions');
    const hit = await g.chat({ model: 'gpt-3.5-turbo-instruct', prompt: 'write a Haiku about RAIN.' }, {}, {}, '/v1/completions');
    expect(hit.cacheStatus).toBe('SEMANTIC HIT');
    expect(hit.json().object).toBe('text_completion');
  });

  test('a refresh stores the answer and its vector (embedded after the response)', async () => {
    const r = await g.store(ask('Refresh: who wrote Hamlet?'), { 'x-gateway-cache-force-refresh': 'true' });
    expect(r.cacheStatus).toBe('REFRESH');
    expect((await g.chat(ask('refresh who wrote hamlet'))).cacheStatus).toBe('SEMANTIC HIT');
  });

  test('the embedding provider failing is a miss with a 200, and one warning', async () => {
    emb.failWith = 500;
    try {
      const before = mock.requests.length;
      const a = await g.chat(ask('Embeddings are down now'), { 'x-gateway-trace-id': 'embed-down' });
      expect(a.status).toBe(200);
      expect(a.cacheStatus).toBe('MISS');
      expect(a.json().choices[0].message.content).toBe('Hello from the mock!');
      expect(mock.requests.length).toBe(before + 1);
      const b = await g.chat(ask('Embeddings are still down'));
      expect(b.status).toBe(200);
      expect(b.cacheStatus).toBe('MISS');
      const failedEmbed = await waitForLog(g.gw.logs, (l) => l.trace_id === 'embed-down' && l.internal === true);
      expect(failedEmbed.status).toBe(500);
      await new Promise((r) => setTimeout(r, 50));
      const warnings = g.gw.logs.lines().filter((l) => typeof l.msg === 'string' && l.msg.startsWith('semantic cache: embedding failed'));
      expect(warnings).toHaveLength(1);
    } finally {
      emb.failWith = null;
    }
  });
});

describe('semantic mode settings and outages', () => {
  test('the threshold is a setting', async () => {
    const g = await semanticGateway({ threshold: 0.8 });
    try {
      await g.store(ask('What is the capital of Italy?'));
      // cosine 0.83 ≥ 0.8
      expect((await g.chat(ask('What is the capital of Spain?'))).cacheStatus).toBe('SEMANTIC HIT');
    } finally {
      await g.gw.close();
    }
  });

  test('an unreachable embedding target is a miss with a 200; the exact match still works', async () => {
    const g = await semanticGateway({ embeddingHost: 'http://127.0.0.1:1/v1' });
    try {
      const sets = g.counting.counts.sets;
      const first = await g.chat(ask('nobody embeds this'));
      expect(first.status).toBe(200);
      expect(first.cacheStatus).toBe('MISS');
      await until(() => g.counting.counts.sets > sets);
      expect((await g.chat(ask('nobody embeds this'))).cacheStatus).toBe('HIT');
      expect((await g.chat(ask('nobody embeds this!'))).cacheStatus).toBe('MISS');
    } finally {
      await g.gw.close();
    }
  });

  test('a semantic plugin naming a provider that is not loaded fails at start', async () => {
    const { createGateway } = await import('../../../core/index.js');
    const gateway = createGateway({ plugins: [cache(), cacheSemantic({ embedding: { target: { provider: 'nope' }, model: 'm' } })], logger: (await import('../../helpers/gateway.js')).memoryLogger().logger });
    await expect(gateway.ready).rejects.toThrow(/provider "nope"/);
    await gateway.close(0);
  });
});

describe('semantic input (units)', () => {
  test('chat: the last user message text is embedded; everything else is an exact parameter', () => {
    const a = semanticInput('chat.completions', ask('Hello there', { stream: true, stream_options: { include_usage: true } }), 100)!;
    const b = semanticInput('chat.completions', ask('Completely different'), 100)!;
    expect(a.text).toBe('Hello there');
    expect(a.params).toBe(b.params);
    expect(a.params).not.toContain('Hello');
    expect(a.params).toContain('You are terse.');
    const parts = semanticInput('chat.completions', { model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: 'one' }, { type: 'image_url', image_url: { url: 'http://x/y.png' } }, { type: 'text', text: 'two' }] }] }, 100)!;
    expect(parts.text).toBe('one\ntwo');
    expect(parts.params).toContain('y.png');
    expect(semanticInput('chat.completions', { model: 'm', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'u' } }] }] }, 100)).toBeNull();
    expect(semanticInput('chat.completions', ask('x'.repeat(50)), 10)!.text).toHaveLength(10);
    expect(semanticInput('embeddings', { model: 'm', input: 'x' }, 100)).toBeNull();
    expect(semanticInput('completions', { model: 'm', prompt: [1, 2, 3] }, 100)).toBeNull();
  });

  test('cosine of unit vectors', () => {
    const v = unitVector(bagOfWords('a b c'))!;
    expect(cosine(v, v)).toBeCloseTo(1, 6);
    expect(cosine(v, unitVector([1, 2])!)).toBe(-1);
    expect(unitVector([0, 0])).toBeNull();
    expect(unitVector(['x'])).toBeNull();
  });
});
