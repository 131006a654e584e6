import OpenAI from 'openai';
import { ResponsesWS } from 'openai/resources/responses/ws';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import WebSocket from 'ws';
import { doorGateway } from './helpers.js';

/**
 * The Responses API's WebSocket mode: `GET /v1/responses` upgraded, `response.create` messages answered with the
 * events of a streamed response, one per frame, each message a request of its own through the gateway.
 */
let t: Awaited<ReturnType<typeof doorGateway>>;
beforeAll(async () => {
  t = await doorGateway();
});
afterAll(async () => {
  await t.close();
});

type Json = Record<string, any>;

/** A socket to the gateway with `target` as its config, and the events it receives, message by message. */
async function socket(target: unknown, key = 'ws-a') {
  const url = `${t.gw.url.replace('http:', 'ws:')}/v1/responses`;
  const ws = new WebSocket(url, { headers: { authorization: 'Bearer sk-unused', 'x-gateway-api-key': key, 'x-gateway-config': JSON.stringify(target) } });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const events: Json[] = [];
  const waiters: Array<() => void> = [];
  ws.on('message', (data) => {
    events.push(JSON.parse(String(data)) as Json);
    for (const w of waiters.splice(0)) w();
  });
  /** Sends a response.create and resolves with its events once a terminal one came. */
  const create = async (body: Json): Promise<Json[]> => {
    const from = events.length;
    ws.send(JSON.stringify({ type: 'response.create', ...body }));
    for (;;) {
      const mine = events.slice(from);
      if (mine.some((e) => ['response.completed', 'response.failed', 'response.incomplete', 'error'].includes(e.type))) return mine;
      await new Promise<void>((r) => waiters.push(r));
    }
  };
  return { ws, events, create };
}

const textOf = (events: Json[]) => events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join('');
const completed = (events: Json[]) => events.find((e) => e.type === 'response.completed')!.response as Json;

describe('the WebSocket mode', () => {
  test('OpenAI (native) and Anthropic (translated), each on its socket, answer as SSE events; two responses in turn on one socket', async () => {
    const s = await socket({ strategy: { mode: 'fallback' }, targets: [t.targets.openai] });
    t.openaiMock.next({ kind: 'text' });
    const first = await s.create({ model: 'gpt-4o-mini', input: 'Hi' });
    expect(first[0]!.type).toBe('response.created');
    expect(completed(first).status).toBe('completed');
    expect(textOf(first)).not.toBe('');
    s.ws.close();

    const a = await socket({ ...t.targets.anthropic, override_params: { model: 'claude-sonnet-4-6' } });
    const one = await a.create({ model: 'claude-sonnet-4-6', input: 'Hi' });
    const two = await a.create({ model: 'claude-sonnet-4-6', input: 'And again', previous_response_id: completed(one).id });
    expect(textOf(one)).toBe('Hello!');
    expect(completed(two).status).toBe('completed');
    // The stored first response was rebuilt for Anthropic: the second call carried the whole conversation.
    const sent = t.anthropicMock.requests.at(-1)!.body as Json;
    expect(sent.messages.map((m: Json) => m.role)).toEqual(['user', 'assistant', 'user']);
    a.ws.close();
  });

  test('store: false is kept on the socket: the next message continues it with the conversation as input', async () => {
    const s = await socket(t.targets.openai);
    t.openaiMock.next({ kind: 'text' });
    const one = await s.create({ model: 'gpt-4o-mini', input: 'Remember teal', store: false });
    const before = t.openaiMock.requests.length;
    const two = await s.create({ model: 'gpt-4o-mini', input: 'Which colour?', store: false, previous_response_id: completed(one).id });
    expect(completed(two).status).toBe('completed');
    const sent = t.openaiMock.requests.slice(before).at(-1)!.body as Json;
    expect(sent.previous_response_id).toBeUndefined();
    expect(sent.input.map((i: Json) => i.role)).toEqual(['user', 'assistant', 'user']);
    expect(sent.input[0].content).toBe('Remember teal');
    expect(sent.input[2].content).toBe('Which colour?');
    s.ws.close();
  });

  test('generate: false warms up: no model call, a completed response with no output, and the next message starts from its input', async () => {
    const s = await socket(t.targets.openai);
    const before = t.openaiMock.requests.length;
    const warm = await s.create({ model: 'gpt-4o-mini', input: 'You will be asked about teal.', generate: false });
    expect(warm.map((e) => e.type)).toEqual(['response.created', 'response.completed']);
    expect(completed(warm).output).toEqual([]);
    expect(t.openaiMock.requests.length).toBe(before);
    t.openaiMock.next({ kind: 'text' });
    const next = await s.create({ model: 'gpt-4o-mini', input: 'Which colour?', previous_response_id: completed(warm).id });
    expect(completed(next).status).toBe('completed');
    const sent = t.openaiMock.requests.at(-1)!.body as Json;
    expect(sent.previous_response_id).toBeUndefined();
    expect(sent.input.map((i: Json) => i.content)).toEqual(['You will be asked about teal.', 'Which colour?']);
    s.ws.close();
  });

  test('a refused message is an error event in the WebSocket shape; the socket stays open for the next', async () => {
    const s = await socket(t.targets.openai);
    const refused = await s.create({ input: 'no model' });
    expect(refused).toEqual([{ type: 'error', status: 400, error: expect.objectContaining({ type: 'invalid_request_error', message: expect.stringContaining('model') }) }]);
    const unknown = await new Promise<Json>((resolve) => {
      s.ws.once('message', (d) => resolve(JSON.parse(String(d)) as Json));
      s.ws.send(JSON.stringify({ type: 'response.cancel' }));
    });
    expect(unknown).toMatchObject({ type: 'error', status: 400, error: { code: 'unknown_event' } });
    t.openaiMock.next({ kind: 'text' });
    const ok = await s.create({ model: 'gpt-4o-mini', input: 'Hi', stream_id: 'lane-1' });
    expect(completed(ok).status).toBe('completed');
    expect(ok.every((e) => e.stream_id === 'lane-1')).toBe(true);
    s.ws.close();
  });

  test('a socket takes a bounded queue: messages past it are refused, the rest answered in order; a bad stream_id is refused', async () => {
    const s = await socket(t.targets.openai);
    t.openaiMock.next({ kind: 'text' });
    const from = s.events.length;
    for (let i = 0; i < 30; i++) s.ws.send(JSON.stringify({ type: 'response.create', model: 'gpt-4o-mini', input: `n${i}` }));
    for (let i = 0; i < 400 && s.events.slice(from).filter((e) => e.type === 'response.completed' || e.type === 'error').length < 30; i++) await new Promise((r) => setTimeout(r, 25));
    const ends = s.events.slice(from).filter((e) => e.type === 'response.completed' || e.type === 'error');
    const refused = ends.filter((e) => e.type === 'error');
    expect(ends).toHaveLength(30);
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.every((e) => e.error.code === 'too_many_pending_responses')).toBe(true);
    expect(ends.length - refused.length).toBeGreaterThanOrEqual(17);
    const bad = await s.create({ model: 'gpt-4o-mini', input: 'Hi', stream_id: 'x'.repeat(300) });
    expect(bad).toEqual([{ type: 'error', status: 400, error: expect.objectContaining({ code: 'invalid_stream_id', param: 'stream_id' }) }]);
    s.ws.close();
  });

  test("the openai SDK's ResponsesWS works against the gateway with only the base URL changed", async () => {
    t.openaiMock.next({ kind: 'text' });
    const client = new OpenAI({ apiKey: 'sk-unused', baseURL: `${t.gw.url}/v1`, defaultHeaders: { 'x-gateway-api-key': 'ws-a', 'x-gateway-config': JSON.stringify(t.targets.openai) } });
    const rws = new ResponsesWS(client, { headers: { 'x-gateway-api-key': 'ws-a', 'x-gateway-config': JSON.stringify(t.targets.openai) } });
    const deltas: string[] = [];
    const done = new Promise<Json>((resolve, reject) => {
      rws.on('response.output_text.delta', (e) => deltas.push(e.delta));
      rws.on('response.completed', (e) => resolve(e.response as unknown as Json));
      rws.on('error', reject);
    });
    // This SDK version sends only on an open socket (later ones queue while connecting).
    await new Promise((resolve) => rws.socket.once('open', resolve));
    rws.send({ type: 'response.create', model: 'gpt-4o-mini', input: 'Hi' } as never);
    const response = await done;
    expect(response.status).toBe('completed');
    expect(deltas.join('')).not.toBe('');
    rws.close({ code: 1000, reason: 'done' });
  });
});

describe("the OpenAI Agents SDK's WebSocket transport for Responses", () => {
  test.each([
    ['OpenAI, native', () => t.targets.openai, () => t.openaiMock],
    ['Anthropic, translated', () => ({ ...t.targets.anthropic, override_params: { model: 'claude-sonnet-4-6' } }), () => t.anthropicMock],
  ])('%s: a tool loop completes over one socket', async (_name, target, mock) => {
    const { Agent, Runner, tool } = await import('@openai/agents');
    const { OpenAIProvider } = await import('@openai/agents-openai');
    const { z } = await import('zod');
    // Node 20 has no global WebSocket; the SDK dials with `new WebSocket(url, { headers })`, which `ws` takes.
    const previous = (globalThis as Record<string, unknown>).WebSocket;
    let dialed: string[] = [];
    (globalThis as Record<string, unknown>).WebSocket = class extends WebSocket {
      constructor(url: string, options: WebSocket.ClientOptions) {
        super(url, options);
        dialed.push(String(url));
      }
    };
    try {
      mock().next({ kind: 'tool_call' });
      const client = new OpenAI({ apiKey: 'sk-unused', baseURL: `${t.gw.url}/v1`, defaultHeaders: { 'x-gateway-api-key': 'ws-a', 'x-gateway-config': JSON.stringify(target()) } });
      const provider = new OpenAIProvider({ openAIClient: client as never, useResponses: true, useResponsesWebSocket: true });
      const runner = new Runner({ modelProvider: provider, tracingDisabled: true });
      const before = mock().requests.length;
      const weather = tool({
        name: 'get_weather',
        description: 'The weather in a city',
        parameters: z.object({ city: z.string() }),
        execute: async ({ city }) => {
          mock().next({ kind: 'text' });
          return `Sunny in ${city}`;
        },
      });
      const agent = new Agent({ name: 'weather', model: 'gpt-4o-mini', instructions: 'Answer briefly.', tools: [weather] });
      const result = await runner.run(agent, 'Weather in Paris?');
      expect(result.finalOutput).toBe('Hello!');
      // Two model calls, the second with the tool's output.
      const calls = mock().requests.slice(before).map((r) => JSON.stringify(r.body));
      expect(calls).toHaveLength(2);
      expect(calls[1]).toContain('Sunny in Paris');
      // Over the WebSocket transport: one socket to the gateway's /v1/responses, kept for both calls.
      expect(dialed).toEqual([`${t.gw.url.replace('http:', 'ws:')}/v1/responses`]);
      dialed = [];
      await provider.close();
    } finally {
      (globalThis as Record<string, unknown>).WebSocket = previous;
    }
  });
});

test('closing the gateway ends an idle socket with 1001 (going away)', async () => {
  const own = await doorGateway();
  try {
    const ws = new WebSocket(`${own.gw.url.replace('http:', 'ws:')}/v1/responses`, { headers: { 'x-gateway-api-key': 'ws-a', 'x-gateway-config': JSON.stringify(own.targets.openai) } });
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
    await own.gw.gateway.close(5000);
    expect(await closed).toBe(1001);
  } finally {
    await own.close();
  }
});
