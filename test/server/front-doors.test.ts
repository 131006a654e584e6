import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { connect } from 'node:net';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { GATEWAY_KEY, startTestServer } from '../helpers/gateway.js';
import { schemaErrors } from '../../server/testing/index.js';
import { startAnthropicContractMock } from '../mocks/contract/anthropic.js';
import { startOpenAIContractMock } from '../../server/testing/index.js';
import type { ContractMock } from '../../server/testing/index.js';
import { sseEvents } from '../../server/testing/index.js';

/**
 * The Responses and Messages front doors through the bundled server with its default config
 * (server/default-config.ts), against loopback mocks that speak OpenAI's and Anthropic's wire
 * formats: each door native and translated, JSON and streamed, the stored responses' routes,
 * and the log's `front_door` (docs/formats.md).
 */
let gw: Awaited<ReturnType<typeof startTestServer>>;
let openaiMock: ContractMock;
let anthropicMock: ContractMock;

beforeAll(async () => {
  openaiMock = await startOpenAIContractMock();
  anthropicMock = await startAnthropicContractMock();
  gw = await startTestServer();
});
afterAll(async () => {
  await gw?.close();
  await openaiMock?.close();
  await anthropicMock?.close();
});

const openaiConfig = () => JSON.stringify({ provider: 'openai', api_key: 'sk-e2e-openai', custom_host: openaiMock.baseURL });
const anthropicConfig = () => JSON.stringify({ provider: 'anthropic', api_key: 'sk-e2e-anthropic', custom_host: anthropicMock.baseURL });
const openaiClient = (config: string) => new OpenAI({ apiKey: 'unused', baseURL: `${gw.url}/v1`, maxRetries: 0, defaultHeaders: { 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-config': config } });
const anthropicClient = (config: string) => new Anthropic({ apiKey: 'unused', baseURL: gw.url, maxRetries: 0, defaultHeaders: { 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-config': config } });
const trace = (id: string) => ({ headers: { 'x-gateway-trace-id': id } });

/** A raw request to the server (`path` under /v1), with the gateway key. */
const call = (method: string, path: string, init: { body?: unknown; headers?: Record<string, string> } = {}) =>
  fetch(`${gw.url}/v1${path}`, {
    method,
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': GATEWAY_KEY, ...init.headers },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });

/** The trace ids the log store holds for a door (its writes run on a worker thread: polled). */
async function loggedTraces(door: string, expected: readonly string[]): Promise<Map<string, Record<string, any>>> {
  let last = new Map<string, Record<string, any>>();
  for (let i = 0; i < 200; i++) {
    const list = await (await call('GET', `/logs?front_door=${door}&limit=100`)).json();
    last = new Map((list.data as Array<Record<string, any>>).map((e) => [e.trace_id, e]));
    if (expected.every((id) => last.has(id))) return last;
    await new Promise((r) => setTimeout(r, 25));
  }
  const all = await (await call('GET', '/logs?limit=100')).json();
  const seen = (all.data as Array<Record<string, any>>).map((e) => `${e.trace_id}:${e.front_door}:${e.status}`).join(' ');
  throw new Error(`the log has no entries ${expected.filter((id) => !last.has(id)).join(', ')} for front_door=${door}; it holds ${seen}`);
}

describe('the Responses door in the bundled server', () => {
  test('translated to Anthropic with the official SDK: create and stream, in the Responses shape', async () => {
    const client = openaiClient(anthropicConfig());
    const created = await client.responses.create({ model: 'claude-sonnet-4-5', instructions: 'Be terse.', input: 'Hi' }, trace('fd-resp-anthropic'));
    expect(created.object).toBe('response');
    expect(created.output_text).toBe('Hello!');
    expect(created.usage).toMatchObject({ input_tokens: 9, output_tokens: 2, input_tokens_details: { cached_tokens: 3 } });
    expect(schemaErrors('responses.json#/$defs/Response', JSON.parse(JSON.stringify({ ...created, output_text: undefined })))).toEqual([]);
    const seen = anthropicMock.requests.at(-1)!;
    expect(seen.path).toBe('/v1/messages');
    expect(seen.body).toMatchObject({ model: 'claude-sonnet-4-5', system: [{ type: 'text', text: 'Be terse.' }], messages: [{ role: 'user', content: 'Hi' }] });
    expect(seen.headers['x-api-key']).toBe('sk-e2e-anthropic');

    const stream = client.responses.stream({ model: 'claude-sonnet-4-5', input: 'Hi' }, trace('fd-resp-anthropic-stream'));
    const types: string[] = [];
    stream.on('event', (e) => types.push(e.type));
    const final = await stream.finalResponse();
    expect(final.status).toBe('completed');
    expect(final.output.flatMap((o) => (o.type === 'message' ? o.content : [])).map((c) => (c.type === 'output_text' ? c.text : '')).join('')).toBe('Hello!');
    expect(types[0]).toBe('response.created');
    expect(types).toContain('response.output_text.delta');
    expect(types.at(-1)).toBe('response.completed');
    expect(anthropicMock.requests.at(-1)!.body.stream).toBe(true);
  });

  test('native at OpenAI: the body goes to /v1/responses as sent, JSON and streamed', async () => {
    const created = await openaiClient(openaiConfig()).responses.create({ model: 'gpt-4o-mini', input: 'Hi' }, trace('fd-resp-openai'));
    expect(created.id).toMatch(/^resp_mock/);
    expect(created.output_text).toBe('Hello!');
    const seen = openaiMock.requests.at(-1)!;
    expect(seen.path).toBe('/v1/responses');
    expect(seen.body).toEqual({ model: 'gpt-4o-mini', input: 'Hi' });
    expect(seen.headers.authorization).toBe('Bearer sk-e2e-openai');

    const res = await call('POST', '/responses', { body: { model: 'gpt-4o-mini', input: 'Hi', stream: true }, headers: { 'x-gateway-config': openaiConfig(), 'x-gateway-trace-id': 'fd-resp-openai-stream' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = sseEvents(await res.text());
    for (const e of events) expect(schemaErrors('responses.json#/$defs/ResponseStreamEvent', e.data)).toEqual([]);
    expect(events.at(-1)!.data.type).toBe('response.completed');
    expect(openaiMock.requests.at(-1)!.body.stream).toBe(true);
  });

  test('stored responses: GET, input_items and DELETE, for a translated answer and a native one', async () => {
    const translated = await openaiClient(anthropicConfig()).responses.create({ model: 'claude-sonnet-4-5', input: [{ role: 'user', content: 'Remember: blue.' }], metadata: { case: 'e2e' } });
    const native = await openaiClient(openaiConfig()).responses.create({ model: 'gpt-4o-mini', input: 'Native turn' });
    for (const created of [translated, native]) {
      // No provider selected: only the gateway's own copy can answer.
      const got = await call('GET', `/responses/${created.id}`);
      expect(got.status).toBe(200);
      const stored = await got.json();
      expect(stored.id).toBe(created.id);
      expect(stored.output).toEqual(created.output);
      expect(schemaErrors('responses.json#/$defs/Response', stored)).toEqual([]);

      const items = await (await call('GET', `/responses/${created.id}/input_items`)).json();
      expect(schemaErrors('responses.json#/$defs/InputItemList', items)).toEqual([]);
      expect(items.data).toHaveLength(1);
      expect(JSON.stringify(items.data[0].content)).toContain(created === translated ? 'Remember: blue.' : 'Native turn');
    }
    expect((await (await call('GET', `/responses/${translated.id}`)).json()).metadata).toEqual({ case: 'e2e' });
    // The official SDK reads the same routes.
    const listed = await openaiClient(anthropicConfig()).responses.inputItems.list(translated.id);
    expect(listed.data).toHaveLength(1);

    const deleted = await call('DELETE', `/responses/${translated.id}`);
    const body = await deleted.json();
    expect(body).toEqual({ id: translated.id, object: 'response', deleted: true });
    expect(schemaErrors('responses.json#/$defs/ResponseDeleted', body)).toEqual([]);
    expect((await call('GET', `/responses/${translated.id}`)).status).toBe(404);
    expect((await call('GET', `/responses/${translated.id}/input_items`)).status).toBe(404);
  });
});

describe('the Messages door in the bundled server', () => {
  test('translated to OpenAI with the official SDK: messages.create and messages.stream', async () => {
    const client = anthropicClient(openaiConfig());
    const message = await client.messages.create({ model: 'gpt-4o-mini', max_tokens: 64, system: 'Be terse.', messages: [{ role: 'user', content: 'Hi' }] }, trace('fd-msg-openai'));
    expect(message).toMatchObject({ type: 'message', role: 'assistant', content: [{ type: 'text', text: 'Hello!' }], stop_reason: 'end_turn' });
    expect(message.usage).toMatchObject({ input_tokens: 6, cache_read_input_tokens: 3, output_tokens: 2 });
    expect(schemaErrors('messages.json#/$defs/Message', message)).toEqual([]);
    const seen = openaiMock.requests.at(-1)!;
    expect(seen.path).toBe('/v1/chat/completions');
    expect(seen.body).toEqual({ model: 'gpt-4o-mini', max_tokens: 64, messages: [{ role: 'system', content: 'Be terse.' }, { role: 'user', content: 'Hi' }] });

    const stream = client.messages.stream({ model: 'gpt-4o-mini', max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }] }, trace('fd-msg-openai-stream'));
    const types: string[] = [];
    stream.on('streamEvent', (e) => types.push(e.type));
    const final = await stream.finalMessage();
    expect(final.content).toEqual([expect.objectContaining({ type: 'text', text: 'Hello!' })]);
    expect(types[0]).toBe('message_start');
    expect(types.at(-1)).toBe('message_stop');
    expect(openaiMock.requests.at(-1)!.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });

  test('native at Anthropic: the body goes to /v1/messages as sent, JSON and streamed', async () => {
    const body = { model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }] };
    const res = await call('POST', '/messages', { body, headers: { 'x-gateway-config': anthropicConfig(), 'anthropic-version': '2023-06-01', 'x-gateway-trace-id': 'fd-msg-anthropic' } });
    expect(res.status).toBe(200);
    const message = await res.json();
    expect(schemaErrors('messages.json#/$defs/Message', message)).toEqual([]);
    expect(message.content).toEqual([expect.objectContaining({ type: 'text', text: 'Hello!' })]);
    const seen = anthropicMock.requests.at(-1)!;
    expect(seen.path).toBe('/v1/messages');
    expect(seen.body).toEqual(body);
    expect(seen.headers['x-api-key']).toBe('sk-e2e-anthropic');

    const streamed = await call('POST', '/messages', { body: { ...body, stream: true }, headers: { 'x-gateway-config': anthropicConfig(), 'x-gateway-trace-id': 'fd-msg-anthropic-stream' } });
    expect(streamed.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = sseEvents(await streamed.text());
    for (const e of events) expect(schemaErrors('messages.json#/$defs/StreamEvent', e.data)).toEqual([]);
    expect(events.map((e) => e.event)).toEqual(expect.arrayContaining(['message_start', 'content_block_delta', 'message_delta', 'message_stop']));
    expect(anthropicMock.requests.at(-1)!.body.stream).toBe(true);
  });
});

describe('the log', () => {
  // The requests of the tests above, by their trace ids (tests in a file run in order).
  test('records the door of every request, and which attempts were translated', async () => {
    const responses = await loggedTraces('responses', ['fd-resp-anthropic', 'fd-resp-anthropic-stream', 'fd-resp-openai', 'fd-resp-openai-stream']);
    const messages = await loggedTraces('messages', ['fd-msg-openai', 'fd-msg-openai-stream', 'fd-msg-anthropic', 'fd-msg-anthropic-stream']);
    const row = (entries: Map<string, Record<string, any>>, id: string) => {
      const e = entries.get(id)!;
      return [e.front_door, e.route, e.provider, e.status, e.stream, e.attempts?.[0]?.via ?? null, e.prompt_tokens, e.completion_tokens];
    };
    expect(row(responses, 'fd-resp-anthropic')).toEqual(['responses', 'responses', 'anthropic', 200, false, 'chat.completions', 9, 2]);
    expect(row(responses, 'fd-resp-anthropic-stream')).toEqual(['responses', 'responses', 'anthropic', 200, true, 'chat.completions', 9, 2]);
    expect(row(responses, 'fd-resp-openai')).toEqual(['responses', 'responses', 'openai', 200, false, null, 9, 2]);
    expect(row(responses, 'fd-resp-openai-stream')).toEqual(['responses', 'responses', 'openai', 200, true, null, 9, 2]);
    expect(row(messages, 'fd-msg-openai')).toEqual(['messages', 'messages', 'openai', 200, false, 'chat.completions', 9, 2]);
    expect(row(messages, 'fd-msg-openai-stream')).toEqual(['messages', 'messages', 'openai', 200, true, 'chat.completions', 9, 2]);
    expect(row(messages, 'fd-msg-anthropic')).toEqual(['messages', 'messages', 'anthropic', 200, false, null, 9, 2]);
    expect(row(messages, 'fd-msg-anthropic-stream')).toEqual(['messages', 'messages', 'anthropic', 200, true, null, 9, 2]);
    // A door's entries are only its own.
    for (const id of messages.keys()) expect(responses.has(id)).toBe(false);
  });
});

describe("Anthropic's threads on the Messages door, through the bundled server", () => {
  test("the SDK's tool runner against a translated provider: turn 2 is a continue, OpenAI gets the whole conversation", async () => {
    const { betaTool } = await import('@anthropic-ai/sdk/helpers/beta/json-schema');
    openaiMock.next({ kind: 'tool_call' });
    const before = openaiMock.requests.length;
    const tool = betaTool({
      name: 'get_weather',
      description: 'The weather in a city',
      inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      run: ({ city }) => {
        openaiMock.next({ kind: 'text' });
        return `Sunny in ${city}`;
      },
    });
    const final = await anthropicClient(openaiConfig()).beta.messages.toolRunner({ model: 'gpt-4o-mini', max_tokens: 128, messages: [{ role: 'user', content: 'Weather in Paris?' }], tools: [tool] });
    expect(final.content[0]).toMatchObject({ type: 'text', text: 'Hello!' });
    const [turn1, turn2] = openaiMock.requests.slice(before).map((r) => r.body as Record<string, any>);
    expect(turn1!.messages).toHaveLength(1);
    expect(turn2!.messages.map((m: any) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(turn2!.tools[0].function.name).toBe('get_weather');
  });
});

/** An upgrade to a route that takes none: refused before auth. */
const ELSEWHERE_STATUS = 400;

describe('the Responses WebSocket mode, through the bundled server', () => {
  const wsUrl = () => `${gw.url.replace('http:', 'ws:')}/v1/responses`;
  /** The handshake's answer when the gateway refuses it: its status and body. */
  const refusal = (url: string, headers: Record<string, string>) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const ws = new WebSocket(url, { headers });
      ws.once('open', () => reject(new Error('the upgrade was accepted')));
      ws.once('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString('utf8')));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      ws.once('error', () => undefined);
    });

  test('the handshake is authenticated: without a key, 401 in the envelope; a plain GET is 426; another path takes no upgrade', async () => {
    const noKey = await refusal(wsUrl(), {});
    expect(noKey.status).toBe(401);
    expect(JSON.parse(noKey.body).error.code).toBe('unauthorized');
    const plain = await call('GET', '/responses');
    expect(plain.status).toBe(426);
    expect(plain.headers.get('upgrade')).toBe('websocket');
    const elsewhere = await refusal(`${gw.url.replace('http:', 'ws:')}/v1/chat/completions`, { 'x-gateway-api-key': GATEWAY_KEY });
    expect(elsewhere.status).toBe(ELSEWHERE_STATUS);
  });

  /** A raw HTTP/1.1 exchange on a fresh connection: what the server sent back before it closed (or `waitMs` passed). */
  const raw = (text: string, waitMs = 3000) =>
    new Promise<string>((resolve, reject) => {
      const { port } = new URL(gw.url);
      const socket = connect(Number(port), '127.0.0.1', () => socket.write(text));
      let got = '';
      socket.on('data', (c: Buffer) => (got += c.toString('utf8')));
      socket.on('close', () => resolve(got));
      socket.on('error', reject);
      setTimeout(() => socket.destroy(), waitMs).unref();
    });

  test("a client that resets the connection during the handshake's refusal does not take the server down", async () => {
    const { port } = new URL(gw.url);
    for (let i = 0; i < 5; i++) {
      const socket = connect(Number(port), '127.0.0.1', () => {
        socket.write('GET /v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n');
        socket.resetAndDestroy();
      });
      socket.on('error', () => undefined);
    }
    await new Promise((r) => setTimeout(r, 200));
    expect((await fetch(`${gw.url}/health`)).status).toBe(200);
  });

  test('an h2c offer (curl --http2 on plain HTTP) is declined: the request is served over HTTP/1.1 as if none was made', async () => {
    openaiMock.next({ kind: 'text' });
    const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] });
    const answer = await raw(
      `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n` +
        `x-gateway-api-key: ${GATEWAY_KEY}\r\nx-gateway-config: ${openaiConfig()}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      1500,
    );
    expect(answer.startsWith('HTTP/1.1 200 OK')).toBe(true);
    expect(answer).toContain('"object":"chat.completion"');
  });

  test('each response.create is a request of its own in the log, with the handshake\'s trace id', async () => {
    const ws = new WebSocket(wsUrl(), { headers: { 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-config': openaiConfig(), 'x-gateway-trace-id': 'fd-ws-openai' } });
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    const done = new Promise<Record<string, any>>((resolve) => {
      ws.on('message', (d) => {
        const e = JSON.parse(String(d)) as Record<string, any>;
        if (e.type === 'response.completed' || e.type === 'error') resolve(e);
      });
    });
    openaiMock.next({ kind: 'text' });
    ws.send(JSON.stringify({ type: 'response.create', model: 'gpt-4o-mini', input: 'Hi', stream: true }));
    expect((await done).type).toBe('response.completed');
    ws.close();
    const logged = await loggedTraces('responses', ['fd-ws-openai']);
    const entry = logged.get('fd-ws-openai')!;
    expect([entry.route, entry.provider, entry.status, entry.stream]).toEqual(['responses', 'openai', 200, true]);
    expect(entry.prompt_tokens).toBeGreaterThan(0);
  });
});
