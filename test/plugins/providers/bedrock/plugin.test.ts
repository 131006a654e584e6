import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { config } from '../../../../plugins/config/index.js';
import { bedrock } from '../../../../plugins/providers/bedrock/index.js';
import { proxy } from '../../../../plugins/proxy/index.js';
import { rerank } from '../../../../plugins/rerank/index.js';
import { serveGateway } from '../../../helpers/serve.js';
import { AWS_KEY_ID, AWS_SECRET, BEDROCK_API_KEY, startBedrockContractMock, type BedrockContractMock } from '../../../mocks/contract/bedrock.js';

let mock: BedrockContractMock;
let gw: Awaited<ReturnType<typeof serveGateway>>;

beforeAll(async () => {
  mock = await startBedrockContractMock();
  gw = await serveGateway({ plugins: [config(), rerank(), bedrock(), proxy()] });
});
afterAll(async () => {
  await gw.close();
  await mock.close();
});

const MODEL = 'us.anthropic.claude-3-5-sonnet-20241022-v2:0';

async function post(path: string, body: unknown, target: Record<string, unknown> = {}) {
  const res = await fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-gateway-config': JSON.stringify({ provider: 'bedrock', aws_access_key_id: AWS_KEY_ID, aws_secret_access_key: AWS_SECRET, aws_region: 'us-east-1', custom_host: mock.baseURL, ...target }),
    },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}
const json = (r: { text: string }) => JSON.parse(r.text);
const chat = (extra: Record<string, unknown> = {}) => ({ model: MODEL, messages: [{ role: 'user', content: 'Hi' }], ...extra });
const sseEvents = (text: string) => text.split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => e.slice(6));

describe('bedrock: streams', () => {
  test('a frame split across TCP writes decodes, and the id comes from x-amzn-RequestId', async () => {
    mock.next({ kind: 'text' });
    const r = await post('/v1/chat/completions', chat({ stream: true }));
    const events = sseEvents(r.text);
    expect(events.at(-1)).toBe('[DONE]');
    expect(JSON.parse(events[0]!).id).toBe('chatcmpl-req-stream-1');
    expect(mock.requests.at(-1)!.path).toBe('/model/us.anthropic.claude-3-5-sonnet-20241022-v2%3A0/converse-stream');
    expect(mock.requests.at(-1)!.headers.accept).toBe('application/vnd.amazon.eventstream');
  });

  test.each(['crc', 'prelude-crc', 'length', 'truncated'] as const)('a corrupt frame (%s): the text so far, an SSE error event, [DONE], no hang', async (kind) => {
    mock.next({ kind: 'text' });
    mock.corrupt(kind);
    const r = await post('/v1/chat/completions', chat({ stream: true }));
    expect(r.status).toBe(200);
    const events = sseEvents(r.text);
    expect(r.text).toContain('"content":"Hello"');
    const error = events.find((e) => e.startsWith('{"error"'));
    expect(error).toBeDefined();
    expect(JSON.parse(error!).error.type).toBe('upstream_error');
    expect(events.at(-1)).toBe('[DONE]');
    expect(r.text).not.toContain('"finish_reason":"stop"');
  });
});

describe('bedrock: requests and errors', () => {
  test('an http(s) image URL without a resolver is a 400 naming the field; nothing is sent', async () => {
    const before = mock.requests.length;
    const r = await post('/v1/chat/completions', {
      model: MODEL,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'What?' }, { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } }] }],
    });
    expect(r.status).toBe(400);
    expect(json(r).error.param).toBe('messages[0].content[1].image_url.url');
    expect(json(r).error.message).toContain('bedrock');
    expect(mock.requests.length).toBe(before);
  });

  test('a session token is sent and signed; the mock verifies the signature', async () => {
    mock.next({ kind: 'text' });
    const r = await post('/v1/chat/completions', chat(), { aws_session_token: 'EXAMPLESESSIONTOKEN' });
    expect(r.status).toBe(200);
    expect(mock.requests.at(-1)!.headers['x-amz-security-token']).toBe('EXAMPLESESSIONTOKEN');
    expect(mock.lastSignature?.signedHeaders).toContain('x-amz-security-token');
  });

  test('a wrong secret: the upstream 403 InvalidSignatureException comes back as 403', async () => {
    const r = await post('/v1/chat/completions', chat(), { aws_secret_access_key: 'not-the-secret' });
    expect(r.status).toBe(403);
    expect(json(r).error).toMatchObject({ type: 'permission_error', code: 'InvalidSignatureException' });
  });

  test('a Bedrock API key goes as a Bearer token, unsigned', async () => {
    mock.next({ kind: 'text' });
    const r = await post('/v1/chat/completions', chat(), { aws_access_key_id: undefined, aws_secret_access_key: undefined, api_key: BEDROCK_API_KEY });
    expect(r.status).toBe(200);
    expect(mock.requests.at(-1)!.headers.authorization).toBe(`Bearer ${BEDROCK_API_KEY}`);
  });

  test('no region: 400 naming aws_region; half a key pair: 401 naming the missing field', async () => {
    const noRegion = await post('/v1/chat/completions', chat(), { aws_region: undefined });
    expect(noRegion.status).toBe(400);
    expect(json(noRegion).error.param).toBe('aws_region');
    const half = await post('/v1/chat/completions', chat(), { aws_secret_access_key: undefined });
    expect(half.status).toBe(401);
    expect(json(half).error.param).toBe('aws_secret_access_key');
  });

  test.each([
    [408, 408, 'ModelTimeoutException'],
    [403, 403, 'AccessDeniedException'],
    [424, 502, 'ModelErrorException'],
    [404, 404, 'ResourceNotFoundException'],
  ])('upstream %i → %i (%s)', async (upstream, expected, name) => {
    mock.next({ kind: 'error', status: upstream });
    const r = await post('/v1/chat/completions', chat());
    expect(r.status).toBe(expected);
    expect(json(r).error.code).toBe(name);
  });

  test('the request mapping: inference config, tool choice, stop, top_k, dropped fields, n > 1', async () => {
    mock.next({ kind: 'text' });
    const r = await post('/v1/chat/completions', {
      model: MODEL,
      messages: [
        { role: 'system', content: 'S1' },
        { role: 'developer', content: [{ type: 'text', text: 'S2' }] },
        { role: 'user', content: 'a' },
        { role: 'user', content: 'b' },
      ],
      max_completion_tokens: 50,
      temperature: 0.2,
      top_p: 0.9,
      top_k: 5,
      stop: 'END',
      seed: 1,
      presence_penalty: 1,
      user: 'u1',
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
      tool_choice: { type: 'function', function: { name: 'f' } },
    });
    expect(r.status).toBe(200);
    expect(mock.requests.at(-1)!.body).toEqual({
      system: [{ text: 'S1' }, { text: 'S2' }],
      messages: [{ role: 'user', content: [{ text: 'a' }, { text: 'b' }] }],
      inferenceConfig: { maxTokens: 50, temperature: 0.2, topP: 0.9, stopSequences: ['END'] },
      toolConfig: { tools: [{ toolSpec: { name: 'f', inputSchema: { json: { type: 'object' } } } }], toolChoice: { tool: { name: 'f' } } },
      additionalModelRequestFields: { top_k: 5 },
      requestMetadata: { user: 'u1' },
    });
    const n = await post('/v1/chat/completions', chat({ n: 2 }));
    expect(n.status).toBe(400);
    expect(json(n).error.param).toBe('n');
  });
});

describe('bedrock: embeddings, rerank, proxy', () => {
  test('Titan: one input via InvokeModel, tokens from the body; several inputs are a 400', async () => {
    const r = await post('/v1/embeddings', { model: 'amazon.titan-embed-text-v2:0', input: 'hello', dimensions: 256 });
    expect(r.status).toBe(200);
    expect(mock.requests.at(-1)!.path).toBe('/model/amazon.titan-embed-text-v2%3A0/invoke');
    expect(mock.requests.at(-1)!.body).toEqual({ inputText: 'hello', dimensions: 256 });
    expect(json(r)).toEqual({ object: 'list', data: [{ object: 'embedding', index: 0, embedding: [0.25, -0.5, 1] }], model: 'amazon.titan-embed-text-v2:0', usage: { prompt_tokens: 4, total_tokens: 4 } });
    const many = await post('/v1/embeddings', { model: 'amazon.titan-embed-text-v2:0', input: ['a', 'b'] });
    expect(many.status).toBe(400);
    expect(json(many).error.param).toBe('input');
  });

  test('Cohere embed: texts + input_type; tokens from x-amzn-bedrock-input-token-count; base64 on request', async () => {
    const r = await post('/v1/embeddings', { model: 'cohere.embed-english-v3', input: ['a', 'b'], encoding_format: 'base64' });
    expect(r.status).toBe(200);
    expect(mock.requests.at(-1)!.body).toEqual({ texts: ['a', 'b'], input_type: 'search_document' });
    const body = json(r);
    expect(body.usage).toEqual({ prompt_tokens: 4, total_tokens: 4 });
    expect(typeof body.data[1].embedding).toBe('string');
    const other = await post('/v1/embeddings', { model: 'meta.llama3-8b', input: 'a' });
    expect(other.status).toBe(400);
    expect(json(other).error.param).toBe('model');
  });

  test('rerank through the Agent Runtime API, signed; answer sorted, documents re-attached', async () => {
    const r = await post('/v1/rerank', { model: 'bedrock/amazon.rerank-v1:0', query: 'q', documents: ['short', { text: 'a much longer document text' }, 'mid length'], return_documents: true, parameters: { foo: 1 } });
    expect(r.status).toBe(200);
    const seen = mock.requests.at(-1)!;
    expect(seen.path).toBe('/rerank');
    expect(mock.lastSignature?.ok).toBe(true);
    expect(seen.body.rerankingConfiguration.bedrockRerankingConfiguration.modelConfiguration).toEqual({
      modelArn: 'arn:aws:bedrock:us-east-1::foundation-model/amazon.rerank-v1:0',
      additionalModelRequestFields: { foo: 1 },
    });
    expect(json(r)).toEqual({
      object: 'list',
      results: [
        { index: 1, relevance_score: 0.27, document: { text: 'a much longer document text' } },
        { index: 2, relevance_score: 0.1, document: { text: 'mid length' } },
        { index: 0, relevance_score: 0.05, document: { text: 'short' } },
      ],
      model: 'amazon.rerank-v1:0',
      id: 'req-rerank-1',
      usage: { search_units: 1 },
      provider: 'bedrock',
    });
    const arn = 'arn:aws:bedrock:us-west-2::foundation-model/cohere.rerank-v3-5:0';
    const top = await post('/v1/rerank', { model: arn, query: 'q', documents: ['aa', 'a'], top_n: 1 });
    expect(json(top).results).toEqual([{ index: 0, relevance_score: 0.02 }]);
    expect(mock.requests.at(-1)!.body.rerankingConfiguration.bedrockRerankingConfiguration).toMatchObject({ numberOfResults: 1, modelConfiguration: { modelArn: arn } });
  });

  test('a rerank throttle maps to 429 with the retry hint', async () => {
    const r = await post('/v1/rerank', { model: 'amazon.rerank-v1:0', query: 'q', documents: ['1', '2', '3', '4'] });
    expect(r.status).toBe(429);
    expect(r.headers.get('retry-after')).toBe('2');
    expect(json(r).error.code).toBe('ThrottlingException');
  });

  test('the generic proxy is signed too (InvokeModel with a native body)', async () => {
    const r = await post('/v1/model/amazon.titan-embed-text-v2%3A0/invoke', { inputText: 'raw' });
    expect(r.status).toBe(200);
    expect(mock.lastSignature?.ok).toBe(true);
    expect(json(r)).toEqual({ embedding: [0.25, -0.5, 1], inputTextTokenCount: 4 });
  });
});
