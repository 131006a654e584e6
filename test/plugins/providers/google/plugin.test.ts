import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { config } from '../../../../plugins/config/index.js';
import { google } from '../../../../plugins/providers/google/index.js';
import { serveGateway } from '../../../helpers/serve.js';
import { startGoogleContractMock, type GoogleContractMock } from '../../../mocks/contract/google.js';

let mock: GoogleContractMock;
let gw: Awaited<ReturnType<typeof serveGateway>>;

beforeAll(async () => {
  mock = await startGoogleContractMock('goog-key');
  gw = await serveGateway({ plugins: [config(), google({ apiKey: 'goog-key' })] });
});
afterAll(async () => {
  await gw.close();
  await mock.close();
});

async function post(path: string, target: Record<string, unknown>, body: Record<string, unknown>) {
  const res = await fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-config': JSON.stringify({ provider: 'google', custom_host: mock.baseURL, ...target }) },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as any };
}

describe('google provider', () => {
  test('the key goes in x-goog-api-key (the plugin default when the target has none), never in the URL', async () => {
    const { status } = await post('/v1/chat/completions', {}, { model: 'gemini-2.5-flash', messages: [{ role: 'user', content: 'Hi' }] });
    expect(status).toBe(200);
    const seen = mock.requests.at(-1)!;
    expect(seen.headers['x-goog-api-key']).toBe('goog-key');
    expect(seen.path).toBe('/v1beta/models/gemini-2.5-flash:generateContent');
    expect(seen.path).not.toContain('key=');
  });

  test('a wrong key: the Google 401 in the gateway envelope', async () => {
    const { status, json } = await post('/v1/chat/completions', { api_key: 'wrong' }, { model: 'gemini-2.5-flash', messages: [{ role: 'user', content: 'Hi' }] });
    expect(status).toBe(401);
    expect(json.error.type).toBe('UNAUTHENTICATED');
    expect(json.error.message).toContain('API key not valid');
  });

  test('override_params apply to the URL model and the body', async () => {
    const { json } = await post('/v1/chat/completions', { override_params: { model: 'gemini-2.5-pro', temperature: 0 } }, { model: 'gemini-2.5-flash', messages: [{ role: 'user', content: 'Hi' }] });
    expect(json.model).toBe('gemini-2.5-pro-001');
    const seen = mock.requests.at(-1)!;
    expect(seen.path).toBe('/v1beta/models/gemini-2.5-pro:generateContent');
    expect(seen.body.generationConfig).toEqual({ temperature: 0 });
  });

  test('thinking: 400 by default (strict), thinkingConfig with strict_reference_compliance false', async () => {
    const body = { model: 'gemini-2.5-flash', messages: [{ role: 'user', content: 'Hi' }], thinking: { type: 'enabled', budget_tokens: 1024 } };
    const refused = await post('/v1/chat/completions', {}, body);
    expect(refused.status).toBe(400);
    expect(refused.json.error.param).toBe('thinking');
    const before = mock.requests.length;
    const ok = await post('/v1/chat/completions', { strict_reference_compliance: false }, body);
    expect(ok.status).toBe(200);
    expect(mock.requests.length).toBe(before + 1);
    expect(mock.requests.at(-1)!.body.generationConfig.thinkingConfig).toEqual({ thinkingBudget: 1024, includeThoughts: true });
  });

  test('embeddings via batchEmbedContents, float and base64', async () => {
    const { status, json } = await post('/v1/embeddings', {}, { model: 'text-embedding-004', input: ['a', 'b'], dimensions: 3 });
    expect(status).toBe(200);
    const seen = mock.requests.at(-1)!;
    expect(seen.path).toBe('/v1beta/models/text-embedding-004:batchEmbedContents');
    expect(seen.body).toEqual({
      requests: [
        { model: 'models/text-embedding-004', content: { parts: [{ text: 'a' }] }, outputDimensionality: 3 },
        { model: 'models/text-embedding-004', content: { parts: [{ text: 'b' }] }, outputDimensionality: 3 },
      ],
    });
    expect(json).toEqual({
      object: 'list',
      data: [
        { object: 'embedding', index: 0, embedding: [0, 0.5, -0.25] },
        { object: 'embedding', index: 1, embedding: [1, 0.5, -0.25] },
      ],
      model: 'text-embedding-004',
      usage: { prompt_tokens: 0, total_tokens: 0 },
    });
    const b64 = await post('/v1/embeddings', {}, { model: 'text-embedding-004', input: 'a', encoding_format: 'base64' });
    const bytes = Buffer.from(b64.json.data[0].embedding, 'base64');
    expect([0, 1, 2].map((i) => bytes.readFloatLE(i * 4))).toEqual([0, 0.5, -0.25]);
    const tokens = await post('/v1/embeddings', {}, { model: 'text-embedding-004', input: [1, 2, 3] });
    expect(tokens.status).toBe(400);
    expect(tokens.json.error.param).toBe('input');
  });
});
