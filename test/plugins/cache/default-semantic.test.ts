import { afterAll, beforeAll, expect, test } from 'vitest';
import { GATEWAY_KEY, startTestServer } from '../../helpers/gateway.js';
import { post, startMockChatAndEmbeddings, until, type MockChatAndEmbeddings } from './helpers.js';

/**
 * The semantic cache in the bundled server's default config (no config file, no options): a config
 * asking for `cache: {mode: "semantic"}` gets it, embedding with the request's own target, and a
 * request that does not ask for it makes no embedding call.
 */
let upstream: MockChatAndEmbeddings;
let gw: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  upstream = await startMockChatAndEmbeddings();
  gw = await startTestServer();
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

const config = (extra: Record<string, unknown>) => JSON.stringify({ provider: 'openai', api_key: 'sk-own-key', custom_host: upstream.baseURL, ...extra });
const ask = (content: string, cfg: Record<string, unknown>) =>
  post(gw.url, '/v1/chat/completions', { model: 'gpt-4o-mini', messages: [{ role: 'user', content }] }, { 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-config': config(cfg) });
const calls = (path: string) => upstream.requests.filter((r) => r.path === path).length;

test('cache: {mode: "semantic"} works out of the box: a miss embeds with the request\'s own target, a reworded question is a SEMANTIC HIT', async () => {
  const semantic = { cache: { mode: 'semantic', max_age: 300 } };
  const first = await ask('What is the capital of France?', semantic);
  expect(first.status).toBe(200);
  expect(first.cacheStatus).toBe('MISS');
  const embedding = upstream.requests.find((r) => r.path === '/v1/embeddings');
  // The request's provider, key and host; the default embedding model; the last user message's text.
  expect(embedding).toMatchObject({ authorization: 'Bearer sk-own-key', body: { model: 'text-embedding-3-small', input: 'What is the capital of France?' } });

  // The answer and its vector are stored once the response went out: the same question is then an exact hit.
  await until(async () => (await ask('What is the capital of France?', semantic)).cacheStatus === 'HIT');

  const chats = calls('/v1/chat/completions');
  const hit = await ask('what is THE capital of france', semantic);
  expect(hit.status).toBe(200);
  expect(hit.cacheStatus).toBe('SEMANTIC HIT');
  expect(hit.json().choices[0].message.content).toBe('Paris.');
  expect(calls('/v1/chat/completions')).toBe(chats);
});

test('a chat model in override_params does not replace the embedding model', async () => {
  const before = upstream.requests.length;
  const res = await ask('Name a prime number', { cache: { mode: 'semantic' }, override_params: { model: 'gpt-4o' } });
  expect(res.cacheStatus).toBe('MISS');
  const seen = upstream.requests.slice(before);
  expect(seen.find((r) => r.path === '/v1/embeddings')!.body.model).toBe('text-embedding-3-small');
  expect(seen.find((r) => r.path === '/v1/chat/completions')!.body.model).toBe('gpt-4o');
});

test('a request without cache, or with the simple mode, pays nothing extra: no embedding call', async () => {
  const embeddings = calls('/v1/embeddings');
  const chats = calls('/v1/chat/completions');
  const none = await ask('What is the capital of Spain?', {});
  expect([none.status, none.cacheStatus]).toEqual([200, 'DISABLED']);
  const simple = await ask('What is the capital of Italy?', { cache: { mode: 'simple' } });
  expect([simple.status, simple.cacheStatus]).toEqual([200, 'MISS']);
  expect(calls('/v1/chat/completions')).toBe(chats + 2);
  expect(calls('/v1/embeddings')).toBe(embeddings);
});
