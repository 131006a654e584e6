import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Target } from '../../../core/index.js';
import { cache } from '../../../plugins/cache/index.js';
import { cacheSimple } from '../../../plugins/cache/simple/index.js';
import { guardrailChecks } from '../../../plugins/guardrails/checks/index.js';
import { guardrails } from '../../../plugins/guardrails/index.js';
import { logStore } from '../../../plugins/logs/index.js';
import { logApi } from '../../../plugins/logs/routes/index.js';
import { messagesDoor } from '../../../plugins/messages/index.js';
import { bedrock } from '../../../plugins/providers/bedrock/index.js';
import { vertexAI } from '../../../plugins/providers/vertex-ai/index.js';
import { trace } from '../../../plugins/trace/index.js';
import { schemaErrors } from '../../../server/testing/index.js';
import { AWS_KEY_ID, AWS_SECRET, startBedrockContractMock } from '../../mocks/contract/bedrock.js';
import { startVertexContractMock } from '../../mocks/contract/vertex.js';
import { sseEvents } from '../../../server/testing/index.js';
import { doorGateway } from '../responses/helpers.js';

/** The Messages door through the lifecycle, and the same fallback through all three doors. */
let t: Awaited<ReturnType<typeof doorGateway>>;
let bedrockMock: Awaited<ReturnType<typeof startBedrockContractMock>>;
let bedrockTarget: Target;
let vertexMock: Awaited<ReturnType<typeof startVertexContractMock>>;
let vertexTarget: Target;
const VERTEX_TOKEN = 'ya29.door-test-token';

beforeAll(async () => {
  bedrockMock = await startBedrockContractMock();
  bedrockTarget = { provider: 'bedrock', aws_access_key_id: AWS_KEY_ID, aws_secret_access_key: AWS_SECRET, aws_region: 'us-east-1', custom_host: bedrockMock.baseURL };
  vertexMock = await startVertexContractMock({ apiKey: VERTEX_TOKEN, project: 'proj-door', region: 'us-east5' });
  vertexTarget = { provider: 'vertex-ai', api_key: VERTEX_TOKEN, vertex_project_id: 'proj-door', vertex_region: 'us-east5', custom_host: vertexMock.baseURL };
  t = await doorGateway({}, [trace(), bedrock(), vertexAI(), messagesDoor(), guardrailChecks(), guardrails(), cache(), cacheSimple(), logStore({ capture: 'full', writer: 'inline', flushIntervalMs: 5 }), logApi()]);
});
afterAll(async () => {
  await t.close();
  await bedrockMock.close();
  await vertexMock.close();
});

const anthropicClient = (target: unknown) => new Anthropic({ apiKey: 'unused', baseURL: t.gw.url, maxRetries: 0, defaultHeaders: { 'x-gateway-config': JSON.stringify(target), 'x-gateway-api-key': 'ws-a' } });
const fallback = () => ({ strategy: { mode: 'fallback' }, targets: [t.targets.openai, { ...t.targets.anthropic, override_params: { model: 'claude-sonnet-4-5' } }] });

async function logOf(traceId: string): Promise<Record<string, any>> {
  for (let i = 0; i < 100; i++) {
    const list = await (await t.call('GET', `/logs?trace_id=${traceId}`)).json();
    if (list.data?.length > 0) return list.data[0];
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('no log entry');
}

describe('a fallback from OpenAI to Anthropic, the same through the three doors', () => {
  test.each([
    ['chat', '/chat/completions', { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] }, (b: any) => b.choices[0].message.content],
    ['responses', '/responses', { model: 'gpt-4o-mini', input: 'Hi' }, (b: any) => b.output[0].content[0].text],
    ['messages', '/messages', { model: 'gpt-4o-mini', max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }] }, (b: any) => b.content[0].text],
  ])('%s: OpenAI answers 503, Anthropic answers in the door\'s shape; the log names the door and both attempts', async (door, path, body, text) => {
    t.openaiMock.next({ kind: 'error', status: 503 });
    const res = await t.call('POST', path, { body, headers: { 'x-gateway-config': JSON.stringify(fallback()), 'x-gateway-trace-id': `fb-${door}` } });
    t.openaiMock.next({ kind: 'text' });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gateway-provider')).toBe('anthropic');
    expect(text(await res.json())).toBe('Hello!');
    const entry = await logOf(`fb-${door}`);
    expect(entry.front_door).toBe(door === 'chat' ? 'chat' : door);
    expect(entry.attempts.map((a: any) => [a.provider, a.status])).toEqual([
      ['openai', 503],
      ['anthropic', 200],
    ]);
    expect(entry.prompt_tokens).toBe(9);
    expect(entry.cached_tokens).toBe(3);
    expect(entry.cost).toBeGreaterThan(0);
  });

  test('messages, streamed: the Messages events whichever target answered', async () => {
    t.openaiMock.next({ kind: 'error', status: 503 });
    const stream = anthropicClient(fallback()).messages.stream({ model: 'gpt-4o-mini', max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }] });
    const final = await stream.finalMessage();
    t.openaiMock.next({ kind: 'text' });
    expect(final.content).toEqual([expect.objectContaining({ type: 'text', text: 'Hello!' })]);
  });

  test('OpenAI answering, translated: the usage comes back with cached tokens apart, as Anthropic reports them', async () => {
    const message = await anthropicClient(t.targets.openai).messages.create({ model: 'gpt-4o-mini', max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }] });
    expect(message.usage).toMatchObject({ input_tokens: 6, cache_read_input_tokens: 3, output_tokens: 2 });
    // The chat body OpenAI got: max_tokens, and no Anthropic-only fields.
    expect(t.openaiMock.requests.at(-1)!.body).toEqual({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 64 });
  });
});

describe('cache_control and prompt caching', () => {
  const cached = { type: 'text' as const, text: 'A long shared preamble.', cache_control: { type: 'ephemeral' as const } };

  test('native Anthropic: the markers and the client\'s anthropic-beta go up as sent', async () => {
    const client = new Anthropic({ apiKey: 'unused', baseURL: t.gw.url, maxRetries: 0, defaultHeaders: { 'x-gateway-config': JSON.stringify(t.targets.anthropic), 'anthropic-beta': 'extended-cache-ttl-2025-04-11' } });
    await client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, system: [cached], messages: [{ role: 'user', content: [cached, { type: 'text', text: 'Hi' }] }] });
    const seen = t.anthropicMock.requests.at(-1)!;
    expect(seen.body.system).toEqual([cached]);
    expect(seen.body.messages[0].content[0]).toEqual(cached);
    expect(seen.headers['anthropic-beta']).toBe('extended-cache-ttl-2025-04-11');
  });

  test('Bedrock, a non-Claude model (Converse): each marked block is followed by a cachePoint', async () => {
    await anthropicClient(bedrockTarget).messages.create({ model: 'amazon.nova-pro-v1:0', max_tokens: 64, system: [cached], messages: [{ role: 'user', content: [cached, { type: 'text', text: 'Hi' }] }] });
    const seen = bedrockMock.requests.at(-1)!;
    expect(seen.path).toBe('/model/amazon.nova-pro-v1%3A0/converse');
    expect(seen.body.system).toEqual([{ text: 'A long shared preamble.' }, { cachePoint: { type: 'default' } }]);
    expect(seen.body.messages[0].content).toEqual([{ text: 'A long shared preamble.' }, { cachePoint: { type: 'default' } }, { text: 'Hi' }]);
  });

  test('Bedrock, Claude: InvokeModel with the markers as sent and anthropic_version', async () => {
    await anthropicClient(bedrockTarget).messages.create({ model: 'anthropic.claude-3-haiku-20240307-v1:0', max_tokens: 64, system: [cached], messages: [{ role: 'user', content: 'Hi' }] });
    const seen = bedrockMock.requests.at(-1)!;
    expect(seen.path).toBe('/model/anthropic.claude-3-haiku-20240307-v1%3A0/invoke');
    expect(seen.body.anthropic_version).toBe('bedrock-2023-05-31');
    expect(seen.body.system).toEqual([cached]);
  });

  describe('Vertex AI, Claude (rawPredict in Anthropic\'s format)', () => {
    const CLAUDE = 'claude-sonnet-4-5@20250929';
    const rawPredict = (verb: 'rawPredict' | 'streamRawPredict') => `/v1/projects/proj-door/locations/us-east5/publishers/anthropic/models/${CLAUDE}:${verb}`;

    test('/v1/messages, native: the markers and the client\'s beta go up as sent, JSON and streamed', async () => {
      const client = new Anthropic({ apiKey: 'unused', baseURL: t.gw.url, maxRetries: 0, defaultHeaders: { 'x-gateway-config': JSON.stringify(vertexTarget), 'anthropic-beta': 'extended-cache-ttl-2025-04-11' } });
      const message = await client.messages.create({ model: CLAUDE, max_tokens: 64, system: [cached], messages: [{ role: 'user', content: [cached, { type: 'text', text: 'Hi' }] }] });
      expect(message.usage).toMatchObject({ cache_read_input_tokens: 3 });
      let seen = vertexMock.requests.at(-1)!;
      expect(seen.path).toBe(rawPredict('rawPredict'));
      expect(seen.body.anthropic_version).toBe('vertex-2023-10-16');
      expect(seen.body.system).toEqual([cached]);
      expect(seen.body.messages[0].content).toEqual([cached, { type: 'text', text: 'Hi' }]);
      expect(seen.headers['anthropic-beta']).toBe('extended-cache-ttl-2025-04-11');

      const final = await client.messages.stream({ model: CLAUDE, max_tokens: 64, system: [cached], messages: [{ role: 'user', content: [cached, { type: 'text', text: 'Hi' }] }] }).finalMessage();
      expect(final.content).toEqual([expect.objectContaining({ type: 'text', text: 'Hello!' })]);
      seen = vertexMock.requests.at(-1)!;
      expect(seen.path).toBe(rawPredict('streamRawPredict'));
      expect(seen.body.system).toEqual([cached]);
      expect(seen.body.messages[0].content[0]).toEqual(cached);
    });

    test('/v1/chat/completions: cache_control on content parts reaches rawPredict, and the cache reads come back as cached tokens', async () => {
      const client = new OpenAI({ apiKey: 'unused', baseURL: `${t.gw.url}/v1`, maxRetries: 0, defaultHeaders: { 'x-gateway-config': JSON.stringify(vertexTarget), 'x-gateway-api-key': 'ws-a' } });
      const part = { type: 'text', text: 'A long shared preamble.', cache_control: { type: 'ephemeral' } } as unknown as OpenAI.ChatCompletionContentPartText;
      const answer = await client.chat.completions.create({ model: CLAUDE, messages: [{ role: 'system', content: [part] }, { role: 'user', content: [part, { type: 'text', text: 'Hi' }] }] });
      expect(answer.choices[0]!.message.content).toBe('Hello!');
      expect(answer.usage?.prompt_tokens_details?.cached_tokens).toBe(3);
      const seen = vertexMock.requests.at(-1)!;
      expect(seen.path).toBe(rawPredict('rawPredict'));
      expect(seen.body.model).toBeUndefined();
      expect(seen.body.system).toEqual([cached]);
      expect(seen.body.messages[0].content[0]).toEqual(cached);
    });
  });

  test('chat completions to an Anthropic-family target: cache_control on content parts is passed on', async () => {
    const client = new OpenAI({ apiKey: 'unused', baseURL: `${t.gw.url}/v1`, maxRetries: 0, defaultHeaders: { 'x-gateway-config': JSON.stringify(t.targets.anthropic), 'x-gateway-api-key': 'ws-a' } });
    const part = { type: 'text', text: 'A long shared preamble.', cache_control: { type: 'ephemeral' } } as unknown as OpenAI.ChatCompletionContentPartText;
    const answer = await client.chat.completions.create({ model: 'claude-sonnet-4-5', messages: [{ role: 'system', content: [part] }, { role: 'user', content: [part, { type: 'text', text: 'Hi' }] }] });
    const seen = t.anthropicMock.requests.at(-1)!.body;
    expect(seen.system).toEqual([cached]);
    expect(seen.messages[0].content[0]).toEqual(cached);
    // And the cache reads come back as cached tokens.
    expect(answer.usage?.prompt_tokens_details?.cached_tokens).toBe(3);
    // Elsewhere (OpenAI, translated from Messages) the markers are dropped: other APIs refuse unknown part fields.
    await anthropicClient(t.targets.openai).messages.create({ model: 'gpt-4o-mini', max_tokens: 64, messages: [{ role: 'user', content: [cached, { type: 'text', text: 'Hi' }] }] });
    expect(JSON.stringify(t.openaiMock.requests.at(-1)!.body)).not.toContain('cache_control');
  });
});

describe("errors in Anthropic's envelope", () => {
  const post = (body: unknown, target: unknown = t.targets.openai, headers: Record<string, string> = {}) =>
    t.call('POST', '/messages', { body, headers: { 'x-gateway-config': JSON.stringify(target), ...headers } });

  test.each([
    ['no max_tokens', { model: 'm', messages: [{ role: 'user', content: 'Hi' }] }, 'max_tokens'],
    ['no messages', { model: 'm', max_tokens: 5, messages: [] }, 'messages'],
    ['temperature 1.5', { model: 'm', max_tokens: 5, temperature: 1.5, messages: [{ role: 'user', content: 'Hi' }] }, 'temperature'],
    ['a server tool on a translated provider', { model: 'm', max_tokens: 5, tools: [{ type: 'web_search_20250305', name: 'web_search' }], messages: [{ role: 'user', content: 'Hi' }] }, 'tools[0].type'],
  ])('%s: a 400 invalid_request_error naming the field', async (_name, body, param) => {
    const res = await post(body);
    expect(res.status).toBe(400);
    const json = await res.json();
    expect(schemaErrors('messages.json#/$defs/ErrorResponse', json)).toEqual([]);
    expect(json.error.type).toBe('invalid_request_error');
    expect(json.error.message).toContain(param);
  });

  test('an upstream 503 is overloaded_error with status 529; no provider selected is a 400 in the envelope', async () => {
    t.openaiMock.next({ kind: 'error', status: 503 });
    const res = await post({ model: 'gpt-4o-mini', max_tokens: 5, messages: [{ role: 'user', content: 'Hi' }] });
    t.openaiMock.next({ kind: 'text' });
    expect(res.status).toBe(529);
    expect((await res.json()).error.type).toBe('overloaded_error');
    const none = await t.call('POST', '/messages', { body: { model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'Hi' }] } });
    expect(none.status).toBe(400);
    expect(schemaErrors('messages.json#/$defs/ErrorResponse', await none.json())).toEqual([]);
  });

  test('a guardrail denial: 446 in the envelope, hook_results kept; streamed, the stream ends with an error event instead of message_stop', async () => {
    const target = { ...t.targets.anthropic, input_guardrails: [{ id: 'g', deny: true, 'default.contains': { words: ['forbidden'], operator: 'none' } }] };
    const res = await post({ model: 'claude-sonnet-4-5', max_tokens: 5, messages: [{ role: 'user', content: 'a forbidden thing' }] }, target);
    expect(res.status).toBe(446);
    const json = await res.json();
    expect(json.type).toBe('error');
    expect(json.error.type).toBe('guardrail_error');
    expect(json.hook_results.before_request_hooks).toHaveLength(1);
    const out = { ...t.targets.openai, output_guardrails: [{ id: 'g', deny: true, 'default.contains': { words: ['hello'], operator: 'none' } }] };
    const streamed = await post({ model: 'gpt-4o-mini', max_tokens: 5, stream: true, messages: [{ role: 'user', content: 'Hi' }] }, out);
    const events = sseEvents(await streamed.text());
    expect(events.at(-1)!.event).toBe('error');
    expect(events.at(-1)!.data.error.type).toBe('guardrail_error');
    expect(events.at(-1)!.data.hook_results.after_request_hooks[0].verdict).toBe(false);
    expect(events.some((e) => e.event === 'message_stop')).toBe(false);
  });
});

describe('the cache and the log', () => {
  test('a cached Messages answer is replayed as JSON and as events; the native usage reaches the log', async () => {
    const config = JSON.stringify({ ...t.targets.anthropic, cache: { mode: 'simple' } });
    const body = { model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'Cache me' }], stream: true };
    const first = await t.call('POST', '/messages', { body, headers: { 'x-gateway-config': config, 'x-gateway-trace-id': 'msg-cache-1' } });
    expect(first.headers.get('x-gateway-cache-status')).toBe('MISS');
    const firstEvents = sseEvents(await first.text());
    const entry = await logOf('msg-cache-1');
    expect(entry).toMatchObject({ front_door: 'messages', prompt_tokens: 9, cached_tokens: 3, completion_tokens: 2 });
    const full = await (await t.call('GET', `/logs/${entry.id}`)).json();
    expect(full.response_body).toContain('Hello!');
    const hit = await t.call('POST', '/messages', { body: { ...body, stream: false }, headers: { 'x-gateway-config': config } });
    expect(hit.headers.get('x-gateway-cache-status')).toBe('HIT');
    const message = await hit.json();
    expect(schemaErrors('messages.json#/$defs/Message', message)).toEqual([]);
    expect(message.content).toEqual([{ type: 'text', text: 'Hello!' }]);
    expect(message.id).toBe(firstEvents[0]!.data.message.id);
    const replay = await t.call('POST', '/messages', { body, headers: { 'x-gateway-config': config } });
    expect(replay.headers.get('x-gateway-cache-status')).toBe('HIT');
    const events = sseEvents(await replay.text());
    for (const e of events) expect(schemaErrors('messages.json#/$defs/StreamEvent', e.data)).toEqual([]);
    expect(events.filter((e) => e.data.delta?.type === 'text_delta').map((e) => e.data.delta.text).join('')).toBe('Hello!');
  });
});
