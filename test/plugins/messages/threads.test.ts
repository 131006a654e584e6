import Anthropic from '@anthropic-ai/sdk';
import { betaTool } from '@anthropic-ai/sdk/helpers/beta/json-schema';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Target } from '../../../core/index.js';
import { messagesDoor } from '../../../plugins/messages/index.js';
import { bedrock } from '../../../plugins/providers/bedrock/index.js';
import { AWS_KEY_ID, AWS_SECRET, startBedrockContractMock } from '../../mocks/contract/bedrock.js';
import { sendJson, startRecordingServer } from '../../../server/testing/index.js';
import { doorGateway } from '../responses/helpers.js';

/**
 * Anthropic's server-held threads (`thread` on the Messages door) through the real lifecycle: the gateway keeps
 * each turn per workspace and rebuilds the conversation for a provider that cannot hold it; Anthropic's own API
 * gets the client's thread as sent while it holds it.
 */
let t: Awaited<ReturnType<typeof doorGateway>>;
let threaded: Awaited<ReturnType<typeof startThreadingAnthropic>>;
let threadedTarget: Target;
let bedrockMock: Awaited<ReturnType<typeof startBedrockContractMock>>;
let bedrockTarget: Target;

beforeAll(async () => {
  threaded = await startThreadingAnthropic();
  threadedTarget = { provider: 'anthropic', api_key: 'sk-ant-threads', custom_host: threaded.url };
  bedrockMock = await startBedrockContractMock();
  bedrockTarget = { provider: 'bedrock', aws_access_key_id: AWS_KEY_ID, aws_secret_access_key: AWS_SECRET, aws_region: 'us-east-1', custom_host: bedrockMock.baseURL };
  t = await doorGateway({}, [bedrock(), messagesDoor({ threadTtlSeconds: 2 })]);
});
afterAll(async () => {
  await t.close();
  await threaded.close();
  await bedrockMock.close();
});

/**
 * An Anthropic upstream that keeps threads as the real API does: a create stores the conversation under the
 * answer's id, a continue names it and sends only the new messages (404 `thread_not_found` when unknown); every
 * answer has its own id. It answers with a tool call while the conversation has no tool result, then with text.
 */
async function startThreadingAnthropic() {
  const held = new Map<string, { system: unknown; tools: unknown; messages: unknown[] }>();
  let n = 0;
  const seen: Array<{ thread: unknown; messages: unknown[]; system: unknown; tools: unknown; conversation: unknown[] }> = [];
  const rec = await startRecordingServer((_req, res, s) => {
    const body = s.body as Record<string, any>;
    let state = { system: body.system, tools: body.tools, messages: [] as unknown[] };
    if (body.thread?.type === 'continue') {
      const prior = held.get(body.thread.previous_message_id);
      if (prior === undefined) {
        return sendJson(res, 404, { type: 'error', error: { type: 'not_found_error', message: 'No thread state was found for the requested previous_message_id.', details: { error_code: 'thread_not_found' } } });
      }
      state = { ...prior, messages: [...prior.messages] };
    }
    const conversation = [...state.messages, ...body.messages];
    seen.push({ thread: body.thread, messages: body.messages, system: body.system, tools: body.tools, conversation });
    const answered = conversation.some((m: any) => Array.isArray(m.content) && m.content.some((b: any) => b.type === 'tool_result'));
    const id = `msg_upstream_${++n}`;
    const content = answered ? [{ type: 'text', text: 'It is sunny in Paris.' }] : [{ type: 'tool_use', id: `toolu_${n}`, name: 'get_weather', input: { city: 'Paris' } }];
    if (body.thread !== undefined) held.set(id, { ...state, messages: [...conversation, { role: 'assistant', content }] });
    sendJson(res, 200, {
      id, type: 'message', role: 'assistant', model: body.model, content,
      stop_reason: answered ? 'end_turn' : 'tool_use', stop_sequence: null,
      usage: { input_tokens: 20, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    });
  });
  return { url: rec.url, seen, held, close: rec.close };
}

/** What the SDK sent the gateway (bodies of POST /v1/messages), in order. */
const sentToGateway: Array<Record<string, any>> = [];
const client = (target: unknown, key = 'ws-a') =>
  new Anthropic({
    apiKey: 'unused',
    baseURL: t.gw.url,
    maxRetries: 0,
    defaultHeaders: { 'x-gateway-config': JSON.stringify(target), 'x-gateway-api-key': key },
    fetch: async (url, init) => {
      if (typeof init?.body === 'string') sentToGateway.push(JSON.parse(init.body) as Record<string, any>);
      return fetch(url, init);
    },
  });

const weather = (beforeAnswer: () => void | Promise<void> = () => undefined) =>
  betaTool({
    name: 'get_weather',
    description: 'The weather in a city',
    inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    run: async ({ city }) => {
      await beforeAnswer();
      return `Sunny in ${city}`;
    },
  });

const QUESTION = { role: 'user' as const, content: 'What is the weather in Paris?' };

const messagesCall = (body: unknown, target: unknown, key = 'ws-a') => t.call('POST', '/messages', { body, key, headers: { 'x-gateway-config': JSON.stringify(target), 'anthropic-beta': 'message-threads-2026-08-12' } });

describe("the Anthropic SDK's tool runner (threads by default) to a translated provider", () => {
  test('turn 2 sends only the tool result; OpenAI gets the question, the tool call, the result and the tools', async () => {
    t.openaiMock.next({ kind: 'tool_call' });
    const before = t.openaiMock.requests.length;
    const sentBefore = sentToGateway.length;
    const runner = client(t.targets.openai).beta.messages.toolRunner({
      model: 'gpt-4o-mini',
      max_tokens: 256,
      system: 'You answer briefly.',
      messages: [QUESTION],
      tools: [weather(() => t.openaiMock.next({ kind: 'text' }))],
    });
    const final = await runner;
    expect(final.content).toEqual([expect.objectContaining({ type: 'text', text: 'Hello!' })]);
    const sent = t.openaiMock.requests.slice(before).map((r) => r.body as Record<string, any>);
    expect(sent).toHaveLength(2);
    // What the SDK sent the gateway: a create with everything, then a continue with the tool result only.
    const client2 = sentToGateway.slice(sentBefore);
    expect(client2.map((b) => b.thread?.type)).toEqual(['create', 'continue']);
    expect(client2[1]!.messages).toEqual([{ role: 'user', content: [expect.objectContaining({ type: 'tool_result', content: 'Sunny in Paris' })] }]);
    expect(client2[1]!.system).toBeUndefined();
    expect(client2[1]!.tools).toBeUndefined();
    const turn2 = sent[1]!;
    expect(turn2.messages.map((m: any) => m.role)).toEqual(['system', 'user', 'assistant', 'tool']);
    expect(turn2.messages[0].content).toBe('You answer briefly.');
    expect(turn2.messages[1].content).toBe('What is the weather in Paris?');
    expect(turn2.messages[2].tool_calls[0]).toMatchObject({ id: 'call_abc123', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } });
    expect(turn2.messages[3]).toMatchObject({ role: 'tool', tool_call_id: 'call_abc123', content: 'Sunny in Paris' });
    expect(turn2.tools.map((tool: any) => tool.function.name)).toEqual(['get_weather']);
  });

  test('the thread expired between the turns: 404 thread_not_found, and the SDK replays the whole conversation', async () => {
    t.openaiMock.next({ kind: 'tool_call' });
    const before = t.openaiMock.requests.length;
    const runner = client(t.targets.openai).beta.messages.toolRunner({
      model: 'gpt-4o-mini',
      max_tokens: 256,
      messages: [QUESTION],
      tools: [weather(async () => {
        t.openaiMock.next({ kind: 'text' });
        await new Promise((r) => setTimeout(r, 2300));
      })],
    });
    const sentBefore = sentToGateway.length;
    const final = await runner;
    expect(final.content[0]).toMatchObject({ type: 'text', text: 'Hello!' });
    // create, the continue the gateway refused with 404, the replay as a new thread.
    expect(sentToGateway.slice(sentBefore).map((b) => [b.thread?.type, b.messages.length])).toEqual([['create', 1], ['continue', 1], ['create', 3]]);
    const sent = t.openaiMock.requests.slice(before).map((r) => r.body as Record<string, any>);
    // The refused continue never reached the provider; the replay carried the whole conversation.
    expect(sent).toHaveLength(2);
    expect(sent[1]!.messages.map((m: any) => m.role)).toEqual(['user', 'assistant', 'tool']);
  });
});

describe('continuing through the raw API', () => {
  const create = async (target: unknown, key = 'ws-a') => {
    t.openaiMock.next({ kind: 'text' });
    const res = await messagesCall({ model: 'gpt-4o-mini', max_tokens: 64, system: 'Be terse.', messages: [{ role: 'user', content: 'Hi' }], thread: { type: 'create' } }, target, key);
    expect(res.status).toBe(200);
    return (await res.json()) as { id: string };
  };

  test('an unknown previous_message_id: 404 in the envelope the SDK recognises', async () => {
    const res = await messagesCall({ model: 'gpt-4o-mini', max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }], thread: { type: 'continue', previous_message_id: 'msg_nope' } }, t.targets.openai);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({
      type: 'error',
      error: { type: 'not_found_error', message: expect.stringContaining("previous_message_id 'msg_nope'"), details: { error_code: 'thread_not_found' } },
    });
  });

  test("another workspace cannot continue a workspace's thread", async () => {
    const first = await create(t.targets.openai, 'ws-a');
    const res = await messagesCall({ model: 'gpt-4o-mini', max_tokens: 64, messages: [{ role: 'user', content: 'And?' }], thread: { type: 'continue', previous_message_id: first.id } }, t.targets.openai, 'ws-b');
    expect(res.status).toBe(404);
    const own = await messagesCall({ model: 'gpt-4o-mini', max_tokens: 64, messages: [{ role: 'user', content: 'And?' }], thread: { type: 'continue', previous_message_id: first.id } }, t.targets.openai, 'ws-a');
    expect(own.status).toBe(200);
  });

  test('a streamed turn is kept as well; three turns rebuild in order, system from the first', async () => {
    t.openaiMock.next({ kind: 'text' });
    const stream = client(t.targets.openai).beta.messages.stream({ model: 'gpt-4o-mini', max_tokens: 64, system: 'Be terse.', messages: [{ role: 'user', content: 'One' }], thread: { type: 'create' }, betas: ['message-threads-2026-08-12'] });
    const first = await stream.finalMessage();
    let previous = first.id;
    for (const word of ['Two', 'Three']) {
      const res = await messagesCall({ model: 'gpt-4o-mini', max_tokens: 64, messages: [{ role: 'user', content: word }], thread: { type: 'continue', previous_message_id: previous } }, t.targets.openai);
      expect(res.status).toBe(200);
      previous = ((await res.json()) as { id: string }).id;
    }
    const last = t.openaiMock.requests.at(-1)!.body as Record<string, any>;
    expect(last.messages.map((m: any) => [m.role, m.content])).toEqual([
      ['system', 'Be terse.'], ['user', 'One'], ['assistant', 'Hello!'], ['user', 'Two'], ['assistant', 'Hello!'], ['user', 'Three'],
    ]);
  });

  test('a turn that restates the system prompt keeps the tools the thread was created with', async () => {
    t.openaiMock.next({ kind: 'text' });
    const tools = [{ name: 'get_weather', description: 'Weather', input_schema: { type: 'object', properties: {} } }];
    const one = await messagesCall({ model: 'gpt-4o-mini', max_tokens: 64, system: 'S1', tools, messages: [{ role: 'user', content: 'One' }], thread: { type: 'create' } }, t.targets.openai);
    const two = await messagesCall({ model: 'gpt-4o-mini', max_tokens: 64, system: 'S2', messages: [{ role: 'user', content: 'Two' }], thread: { type: 'continue', previous_message_id: ((await one.json()) as { id: string }).id } }, t.targets.openai);
    const three = await messagesCall({ model: 'gpt-4o-mini', max_tokens: 64, messages: [{ role: 'user', content: 'Three' }], thread: { type: 'continue', previous_message_id: ((await two.json()) as { id: string }).id } }, t.targets.openai);
    expect(three.status).toBe(200);
    const last = t.openaiMock.requests.at(-1)!.body as Record<string, any>;
    expect(last.messages[0]).toEqual({ role: 'system', content: 'S2' });
    expect(last.tools.map((tool: any) => tool.function.name)).toEqual(['get_weather']);
  });

  test('a stream cut short is not kept as a turn: continuing from it is a thread_not_found', async () => {
    t.openaiMock.next({ kind: 'stream_error' });
    const res = await messagesCall({ model: 'gpt-4o-mini', max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'Hi' }], thread: { type: 'create' } }, t.targets.openai);
    const text = await res.text();
    const id = /"id":"(msg_[^"]+)"/.exec(text)![1]!;
    expect(text).toContain('event: error');
    t.openaiMock.next({ kind: 'text' });
    const next = await messagesCall({ model: 'gpt-4o-mini', max_tokens: 64, messages: [{ role: 'user', content: 'And?' }], thread: { type: 'continue', previous_message_id: id } }, t.targets.openai);
    expect(next.status).toBe(404);
  });

  test('a malformed thread is a 400 naming it; a continue may carry no new message', async () => {
    const bad = await messagesCall({ model: 'gpt-4o-mini', max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }], thread: { type: 'fork' } }, t.targets.openai);
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).error).toMatchObject({ type: 'invalid_request_error', message: expect.stringContaining('thread.type') });
    const first = await create(t.targets.openai);
    const empty = await messagesCall({ model: 'gpt-4o-mini', max_tokens: 64, messages: [], thread: { type: 'continue', previous_message_id: first.id } }, t.targets.openai);
    expect(empty.status).toBe(200);
    const withoutThread = await messagesCall({ model: 'gpt-4o-mini', max_tokens: 64, messages: [] }, t.targets.openai);
    expect(withoutThread.status).toBe(400);
  });
});

describe("Anthropic's own API keeps its threads", () => {
  test('create and continue go up as sent while Anthropic holds the thread', async () => {
    const before = threaded.seen.length;
    const runner = client(threadedTarget).beta.messages.toolRunner({ model: 'claude-sonnet-4-6', max_tokens: 256, system: 'Brief.', messages: [QUESTION], tools: [weather()] });
    const final = await runner;
    expect(final.content[0]).toMatchObject({ type: 'text', text: 'It is sunny in Paris.' });
    const seen = threaded.seen.slice(before);
    expect(seen.map((s) => s.thread)).toEqual([{ type: 'create' }, { type: 'continue', previous_message_id: expect.stringMatching(/^msg_upstream_/) }]);
    // Only the tool result went up on turn 2: the upstream rebuilt the rest itself.
    expect(seen[1]!.messages).toHaveLength(1);
    expect(seen[1]!.system).toBeUndefined();
  });

  test("another workspace continuing an id Anthropic holds (a shared account) is refused before it reaches Anthropic", async () => {
    const one = await messagesCall({ model: 'claude-sonnet-4-6', max_tokens: 64, messages: [{ role: 'user', content: 'SECRET-OF-A' }], thread: { type: 'create' } }, threadedTarget, 'ws-a');
    const first = (await one.json()) as { id: string };
    expect(threaded.held.has(first.id)).toBe(true);
    const before = threaded.seen.length;
    const res = await messagesCall({ model: 'claude-sonnet-4-6', max_tokens: 64, messages: [{ role: 'user', content: 'what did I say?' }], thread: { type: 'continue', previous_message_id: first.id } }, threadedTarget, 'ws-b');
    expect(res.status).toBe(404);
    expect(((await res.json()) as any).error.details).toEqual({ error_code: 'thread_not_found' });
    expect(threaded.seen.length).toBe(before);
  });

  test('a thread Anthropic answered continues on a translated provider (a fallback), then back on Anthropic as a new upstream thread', async () => {
    const one = await messagesCall({ model: 'claude-sonnet-4-6', max_tokens: 64, system: 'Brief.', messages: [QUESTION], thread: { type: 'create' } }, threadedTarget);
    const first = (await one.json()) as { id: string; content: any[] };
    const toolResult = { role: 'user', content: [{ type: 'tool_result', tool_use_id: first.content[0].id, content: 'Sunny' }] };
    // Anthropic is down: the fallback's OpenAI leaf gets the whole conversation.
    t.openaiMock.next({ kind: 'text' });
    const down = { provider: 'anthropic', api_key: 'sk-ant-threads', custom_host: 'http://127.0.0.1:9' };
    const two = await messagesCall({ model: 'claude-sonnet-4-6', max_tokens: 64, messages: [toolResult], thread: { type: 'continue', previous_message_id: first.id } }, { strategy: { mode: 'fallback' }, targets: [down, { ...t.targets.openai, override_params: { model: 'gpt-4o-mini' } }] });
    expect(two.status).toBe(200);
    const second = (await two.json()) as { id: string };
    const openaiSaw = t.openaiMock.requests.at(-1)!.body as Record<string, any>;
    expect(openaiSaw.messages.map((m: any) => m.role)).toEqual(['system', 'user', 'assistant', 'tool']);
    // Turn 3 on Anthropic again: it never saw turn 2, so the gateway sends the whole conversation as a new thread.
    const before = threaded.seen.length;
    const three = await messagesCall({ model: 'claude-sonnet-4-6', max_tokens: 64, messages: [{ role: 'user', content: 'Thanks' }], thread: { type: 'continue', previous_message_id: second.id } }, threadedTarget);
    expect(three.status).toBe(200);
    const third = (await three.json()) as { id: string };
    const seen = threaded.seen[before]!;
    expect(seen.thread).toEqual({ type: 'create' });
    expect(seen.system).toBe('Brief.');
    expect((seen.messages as any[]).map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user']);
    // Turn 4: Anthropic holds the thread from turn 3 on, so the client's continue goes up as sent.
    const four = await messagesCall({ model: 'claude-sonnet-4-6', max_tokens: 64, messages: [{ role: 'user', content: 'Bye' }], thread: { type: 'continue', previous_message_id: third.id } }, threadedTarget);
    expect(four.status).toBe(200);
    expect(threaded.seen.at(-1)!.thread).toEqual({ type: 'continue', previous_message_id: third.id });
    expect(threaded.seen.at(-1)!.messages).toHaveLength(1);
  });
});

describe('Claude on Bedrock (native Messages, no threads there)', () => {
  test('a create goes without thread and without the threads beta; a continue goes as the whole conversation', async () => {
    const model = 'anthropic.claude-3-haiku-20240307-v1:0';
    const headers = { 'x-gateway-config': JSON.stringify(bedrockTarget), 'anthropic-beta': 'message-threads-2026-08-12, extended-cache-ttl-2025-04-11' };
    const one = await t.call('POST', '/messages', { body: { model, max_tokens: 64, system: 'Brief.', messages: [{ role: 'user', content: 'Hi' }], thread: { type: 'create' } }, headers });
    expect(one.status).toBe(200);
    const first = (await one.json()) as { id: string };
    let seen = bedrockMock.requests.at(-1)!.body as Record<string, any>;
    expect(seen.thread).toBeUndefined();
    expect(seen.anthropic_beta).toEqual(['extended-cache-ttl-2025-04-11']);
    const two = await t.call('POST', '/messages', { body: { model, max_tokens: 64, messages: [{ role: 'user', content: 'Again' }], thread: { type: 'continue', previous_message_id: first.id } }, headers });
    expect(two.status).toBe(200);
    seen = bedrockMock.requests.at(-1)!.body as Record<string, any>;
    expect(seen.thread).toBeUndefined();
    expect(seen.system).toBe('Brief.');
    expect(seen.messages.map((m: any) => m.role)).toEqual(['user', 'assistant', 'user']);
    // `thread: null` is no thread, and Bedrock is not sent the field.
    const none = await t.call('POST', '/messages', { body: { model, max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }], thread: null }, headers });
    expect(none.status).toBe(200);
    expect('thread' in (bedrockMock.requests.at(-1)!.body as Record<string, any>)).toBe(false);
  });
});
