import { generateKeyPairSync } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { RequestContext, UpstreamBody, createLogger, type UpstreamResponse } from '../../../../core/index.js';
import { config } from '../../../../plugins/config/index.js';
import { toVertexAnthropicRequest, vertexAnthropicAnswer } from '../../../../plugins/providers/vertex-ai/anthropic.js';
import { vertexAI } from '../../../../plugins/providers/vertex-ai/index.js';
import { serveGateway } from '../../../helpers/serve.js';
import { startVertexContractMock, type VertexContractMock } from '../../../mocks/contract/vertex.js';

const EMAIL = 'svc@p.iam.gserviceaccount.com';
const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const PEM = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

let mock: VertexContractMock;
let gw: Awaited<ReturnType<typeof serveGateway>>;

beforeAll(async () => {
  mock = await startVertexContractMock({ publicKey, clientEmail: EMAIL, keyId: 'k1', apiKey: 'ready', project: 'p', region: 'europe-west4' });
  gw = await serveGateway({ plugins: [config(), vertexAI()] });
});
afterAll(async () => {
  await gw.close();
  await mock.close();
});
afterEach(() => {
  mock.failTokens(null);
  mock.tokenDelayMs = 0;
});

const account = (extra: Record<string, unknown> = {}) => ({ type: 'service_account', project_id: 'p', client_email: EMAIL, private_key_id: 'k1', private_key: PEM, token_uri: mock.tokenURL, ...extra });

async function post(path: string, target: Record<string, unknown>, body: Record<string, unknown>) {
  const res = await fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-config': JSON.stringify({ provider: 'vertex-ai', vertex_region: 'europe-west4', custom_host: mock.baseURL, ...target }) },
    body: JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}

const chat = { model: 'gemini-2.5-flash', messages: [{ role: 'user', content: 'Hi' }] };

describe('vertex-ai provider', () => {
  test('concurrent requests with one service account make one token exchange', async () => {
    const sa = account();
    mock.tokenDelayMs = 100;
    const before = mock.tokenRequests;
    const results = await Promise.all([1, 2, 3, 4].map(() => post('/v1/chat/completions', { vertex_service_account_json: sa }, chat)));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(mock.tokenRequests - before).toBe(1);
    expect(mock.lastTokenError).toBeNull();
    const seen = mock.requests.at(-1)!;
    expect(seen.path).toBe('/v1/projects/p/locations/europe-west4/publishers/google/models/gemini-2.5-flash:generateContent');
    expect(seen.headers.authorization).toBe(`Bearer ${mock.issued.at(-1)}`);
  });

  test('a refused token exchange: 401 in the gateway envelope, no key material, no model call', async () => {
    mock.failTokens('invalid_grant');
    const calls = mock.requests.length;
    const { status, text } = await post('/v1/chat/completions', { vertex_service_account_json: account({ private_key_id: 'k-refused' }) }, chat);
    expect(status).toBe(401);
    const body = JSON.parse(text);
    expect(body.error.type).toBe('authentication_error');
    expect(body.error.param).toBe('vertex_service_account_json');
    expect(text).not.toContain('PRIVATE KEY');
    expect(text).not.toContain(PEM.slice(40, 80));
    expect(mock.requests.length).toBe(calls);
  });

  test('a failing token endpoint: 502', async () => {
    mock.failTokens(500);
    const { status, text } = await post('/v1/chat/completions', { vertex_service_account_json: account({ private_key_id: 'k-failing' }) }, chat);
    expect(status).toBe(502);
    expect(JSON.parse(text).error.code).toBe('upstream_unreachable');
  });

  test('a wrong bearer token: the Google 401 passed on in the envelope', async () => {
    const { status, text } = await post('/v1/chat/completions', { api_key: 'expired', vertex_project_id: 'p' }, chat);
    expect(status).toBe(401);
    expect(JSON.parse(text).error.type).toBe('UNAUTHENTICATED');
  });

  test('a missing region is a 400 naming vertex_region', async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-config': JSON.stringify({ provider: 'vertex-ai', api_key: 'ready', vertex_project_id: 'p' }) },
      body: JSON.stringify(chat),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error.param).toBe('vertex_region');
  });

  test('embeddings via :predict, token counts summed into usage', async () => {
    const { status, text } = await post('/v1/embeddings', { api_key: 'ready', vertex_project_id: 'p' }, { model: 'text-embedding-005', input: ['a', 'b'], dimensions: 2 });
    expect(status).toBe(200);
    expect(mock.requests.at(-1)!.path).toBe('/v1/projects/p/locations/europe-west4/publishers/google/models/text-embedding-005:predict');
    expect(mock.requests.at(-1)!.body).toEqual({ instances: [{ content: 'a' }, { content: 'b' }], parameters: { outputDimensionality: 2 } });
    expect(JSON.parse(text)).toEqual({
      object: 'list',
      data: [
        { object: 'embedding', index: 0, embedding: [0, 0.5] },
        { object: 'embedding', index: 1, embedding: [1, 0.5] },
      ],
      model: 'text-embedding-005',
      usage: { prompt_tokens: 8, total_tokens: 8 },
    });
  });
});

describe('Claude on Vertex', () => {
  test('the Anthropic body without model, with anthropic_version vertex-2023-10-16', () => {
    const out = toVertexAnthropicRequest({ model: 'claude-x', messages: [{ role: 'user', content: 'Hi' }], stream: true }, { provider: 'vertex-ai', defaultMaxTokens: 1000, strict: true });
    expect(out.model).toBeUndefined();
    expect(out.anthropic_version).toBe('vertex-2023-10-16');
    expect(out.max_tokens).toBe(1000);
    expect(out.stream).toBe(true);
  });

  test('a Google-shaped quota error on rawPredict keeps the Google status as type', async () => {
    const ctx = new RequestContext('POST', '/v1/chat/completions', {}, new AbortController().signal, createLogger({ level: 'silent' }));
    const body = JSON.stringify({ error: { code: 429, message: 'Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model', status: 'RESOURCE_EXHAUSTED' } });
    const upstream: UpstreamResponse = { status: 429, headers: { 'content-type': 'application/json' }, body: UpstreamBody.from([Buffer.from(body)]) };
    const r = await vertexAnthropicAnswer(upstream, ctx, { provider: 'vertex-ai', model: 'claude-x', stream: false, strict: true, includeUsage: false });
    expect(r.status).toBe(429);
    expect(JSON.parse(r.body as string).error).toMatchObject({ type: 'RESOURCE_EXHAUSTED', message: expect.stringContaining('Quota exceeded') });
  });
});
