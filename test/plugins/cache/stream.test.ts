import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { assembleStream } from '../../../plugins/cache/assemble.js';
import { cache } from '../../../plugins/cache/index.js';
import { streamHit } from '../../../plugins/cache/replay.js';
import { cacheSimple } from '../../../plugins/cache/simple/index.js';
import { memoryCacheStore } from '../../../plugins/cache/stores/memory/index.js';
import type { CachedAnswer } from '../../../plugins/cache/types.js';
import { config } from '../../../plugins/config/index.js';
import { openai } from '../../../plugins/providers/openai/index.js';
import { requestLog } from '../../../plugins/request-log/index.js';
import { trace } from '../../../plugins/trace/index.js';
import { waitForLog } from '../../helpers/gateway.js';
import { serveGateway } from '../../helpers/serve.js';
import { startMockOpenAI, type MockUpstream } from '../../mocks/openai-upstream.js';
import { countingStore, post, until } from './helpers.js';

let mock: MockUpstream;
let gw: Awaited<ReturnType<typeof serveGateway>>;
let client: OpenAI;
const counting = countingStore(memoryCacheStore());
let cfg: string;

beforeAll(async () => {
  mock = await startMockOpenAI();
  gw = await serveGateway({ plugins: [trace(), config(), openai(), counting.plugin, cache(), cacheSimple(), requestLog()] });
  cfg = JSON.stringify({ provider: 'openai', api_key: 'sk-stream', custom_host: mock.baseURL, cache: { mode: 'simple', max_age: 300 } });
  client = new OpenAI({ apiKey: 'unused', baseURL: `${gw.url}/v1`, maxRetries: 0, defaultHeaders: { 'x-gateway-config': cfg } });
});
afterAll(async () => {
  await gw.close();
  await mock.close();
});

const messages = (content: string) => [{ role: 'user' as const, content }];

/** Reads an SDK stream whole: text, finish reason, usage, chunk count. */
async function drain(stream: AsyncIterable<OpenAI.ChatCompletionChunk>) {
  let text = '';
  let finish: string | null = null;
  let usage: OpenAI.CompletionUsage | null | undefined;
  let chunks = 0;
  const tools: Record<number, { id?: string; name: string; args: string }> = {};
  for await (const chunk of stream) {
    chunks++;
    const choice = chunk.choices[0];
    text += choice?.delta.content ?? '';
    for (const t of choice?.delta.tool_calls ?? []) {
      const acc = (tools[t.index] ??= { name: '', args: '' });
      if (t.id) acc.id = t.id;
      acc.name += t.function?.name ?? '';
      acc.args += t.function?.arguments ?? '';
    }
    if (choice?.finish_reason) finish = choice.finish_reason;
    if (chunk.usage) usage = chunk.usage;
  }
  return { text, finish, usage, chunks, tools };
}

async function stored(send: () => Promise<unknown>) {
  const sets = counting.counts.sets;
  await send();
  await until(() => counting.counts.sets > sets);
}

describe('streaming', () => {
  test('a JSON answer replayed as a stream, parsed by the official openai SDK', async () => {
    await stored(() => client.chat.completions.create({ model: 'gpt-4o-mini', messages: messages('stream hit') }));
    const before = mock.requests.length;

    const { data: stream, response } = await client.chat.completions
      .create({ model: 'gpt-4o-mini', messages: messages('stream hit'), stream: true, stream_options: { include_usage: true } }, { headers: { 'x-gateway-trace-id': 'stream-hit' } })
      .withResponse();
    expect(response.headers.get('x-gateway-cache-status')).toBe('HIT');
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const got = await drain(stream);
    expect(got).toMatchObject({ text: 'Hello from the mock!', finish: 'stop', usage: { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 } });
    // role, content, finish_reason, usage
    expect(got.chunks).toBe(4);

    // Without stream_options.include_usage: no usage chunk.
    const plain = await drain(await client.chat.completions.create({ model: 'gpt-4o-mini', messages: messages('stream hit'), stream: true }));
    expect(plain).toMatchObject({ text: 'Hello from the mock!', finish: 'stop', chunks: 3 });
    expect(plain.usage).toBeUndefined();
    expect(mock.requests.length).toBe(before);

    const line = await waitForLog(gw.logs, (l) => l.trace_id === 'stream-hit');
    expect(line).toMatchObject({ cache_status: 'HIT', stream: true, status: 200, tokens: { total_tokens: 11 } });
  });

  test('the raw replay is well formed: role chunk first, [DONE] last', async () => {
    const body = { model: 'gpt-4o-mini', messages: messages('stream hit'), stream: true, stream_options: { include_usage: true } };
    const r = await post(gw.url, '/v1/chat/completions', body, { 'x-gateway-config': cfg });
    expect(r.cacheStatus).toBe('HIT');
    const events = r.text.split('\n\n').filter((e) => e !== '');
    expect(events.every((e) => e.startsWith('data: '))).toBe(true);
    expect(events.at(-1)).toBe('data: [DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice(6)));
    expect(chunks[0].choices[0].delta).toEqual({ role: 'assistant', content: '' });
    expect(chunks.every((c) => c.object === 'chat.completion.chunk' && c.id === 'chatcmpl-mock123')).toBe(true);
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { total_tokens: 11 } });
  });

  test('a streamed miss reaches the client unchanged, is stored once complete, and replays as a stream or JSON', async () => {
    const body = { model: 'gpt-4o-mini', messages: messages('streamed miss'), stream: true, stream_options: { include_usage: true } };
    const direct = await post(mock.url, '/v1/chat/completions', body, {});
    let miss!: Awaited<ReturnType<typeof post>>;
    await stored(async () => (miss = await post(gw.url, '/v1/chat/completions', body, { 'x-gateway-config': cfg })));
    expect(miss.cacheStatus).toBe('MISS');
    expect(miss.text).toBe(direct.text);

    const before = mock.requests.length;
    const replay = await drain(await client.chat.completions.create(body as OpenAI.ChatCompletionCreateParamsStreaming));
    expect(replay).toMatchObject({ text: 'Hello!', finish: 'stop', usage: { total_tokens: 11 } });
    const json = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: messages('streamed miss') });
    expect(json.object).toBe('chat.completion');
    expect(json.choices[0]).toMatchObject({ index: 0, message: { role: 'assistant', content: 'Hello!' }, finish_reason: 'stop' });
    expect(json.usage?.total_tokens).toBe(11);
    expect(json.id).toBe('chatcmpl-mock123');
    expect(mock.requests.length).toBe(before);
  });

  test('a stream stored without usage replays only where no usage is needed', async () => {
    const body = { model: 'gpt-4o-mini', messages: messages('no usage asked'), stream: true };
    await stored(() => post(gw.url, '/v1/chat/completions', body, { 'x-gateway-config': cfg }));
    expect((await post(gw.url, '/v1/chat/completions', body, { 'x-gateway-config': cfg })).cacheStatus).toBe('HIT');
    // A usage chunk or a JSON answer would need the usage the stored stream never had: a miss, which stores a complete answer.
    const withUsage = await post(gw.url, '/v1/chat/completions', { ...body, stream_options: { include_usage: true } }, { 'x-gateway-config': cfg });
    expect(withUsage.cacheStatus).toBe('MISS');
    await until(async () => (await post(gw.url, '/v1/chat/completions', { ...body, stream: false }, { 'x-gateway-config': cfg })).cacheStatus === 'HIT');
  });

  test('a stream broken off mid-way stores nothing', async () => {
    const sets = counting.counts.sets;
    const body = { model: 'reset', messages: messages('broken'), stream: true };
    const first = await post(gw.url, '/v1/chat/completions', body, { 'x-gateway-config': cfg });
    expect(first.cacheStatus).toBe('MISS');
    expect(first.text).toContain('upstream_unreachable');
    await new Promise((r) => setTimeout(r, 100));
    expect(counting.counts.sets).toBe(sets);
    const before = mock.requests.length;
    expect((await post(gw.url, '/v1/chat/completions', body, { 'x-gateway-config': cfg })).cacheStatus).toBe('MISS');
    expect(mock.requests.length).toBe(before + 1);
  });

  test('completions: a streamed miss stored, then replayed to the SDK', async () => {
    const body = { model: 'gpt-3.5-turbo-instruct', prompt: 'stream me', stream: true as const };
    await stored(() => post(gw.url, '/v1/completions', body, { 'x-gateway-config': cfg }));
    const before = mock.requests.length;
    let text = '';
    let finish: string | null = null;
    for await (const chunk of await client.completions.create(body)) {
      text += chunk.choices[0]?.text ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(text).toBe('Hi!');
    expect(finish).toBe('stop');
    expect(mock.requests.length).toBe(before);
  });
});

describe('stream assembly and replay (units)', () => {
  const sse = (chunks: unknown[]) => chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join('') + 'data: [DONE]\n\n';
  const base = { id: 'chatcmpl-tools', object: 'chat.completion.chunk', created: 1700000000, model: 'gpt-4o' };
  const toolStream = sse([
    { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: null }, finish_reason: null }] },
    { ...base, choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '' } }] }, finish_reason: null }] },
    { ...base, choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }, finish_reason: null }] },
    { ...base, choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }, finish_reason: null }] },
    { ...base, choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
    { ...base, choices: [], usage: { prompt_tokens: 20, completion_tokens: 5, total_tokens: 25 } },
  ]);

  const answer = (body: string): CachedAnswer => ({ v: 1, route: 'chat.completions', status: 200, body, usage: null, fromStream: true, createdAt: 0, expiresAt: 1 });

  test('tool calls are assembled into one chat.completion and replayed to the SDK', async () => {
    const json = JSON.parse(assembleStream('chat.completions', toolStream)!);
    expect(json).toMatchObject({
      id: 'chatcmpl-tools',
      object: 'chat.completion',
      choices: [{ index: 0, finish_reason: 'tool_calls', message: { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] } }],
      usage: { total_tokens: 25 },
    });
    const replay = streamHit(answer(JSON.stringify(json)), true)!;
    const sdk = new OpenAI({
      apiKey: 'x',
      baseURL: 'http://replay.invalid/v1',
      maxRetries: 0,
      fetch: async () => new Response(replay.body as string, { status: 200, headers: replay.headers as Record<string, string> }),
    });
    const got = await drain(await sdk.chat.completions.create({ model: 'gpt-4o', messages: messages('x'), stream: true }));
    expect(got.finish).toBe('tool_calls');
    expect(got.tools).toEqual({ 0: { id: 'call_1', name: 'get_weather', args: '{"city":"Paris"}' } });
    expect(got.usage?.total_tokens).toBe(25);
  });

  test('events split anywhere, CRLF line ends and comments assemble the same', () => {
    const crlf = `: keep-alive\r\n${toolStream.replace(/\n/g, '\r\n')}`;
    expect(assembleStream('chat.completions', crlf)).toBe(assembleStream('chat.completions', toolStream));
  });

  test('incomplete, errored or lossy streams are not stored', () => {
    const noFinish = sse([{ ...base, choices: [{ index: 0, delta: { content: 'Hel' }, finish_reason: null }] }]);
    expect(assembleStream('chat.completions', noFinish)).toBeNull();
    const errored = sse([{ ...base, choices: [{ index: 0, delta: { content: 'Hel' }, finish_reason: null }] }, { error: { message: 'boom' } }]);
    expect(assembleStream('chat.completions', errored)).toBeNull();
    const logprobs = sse([{ ...base, choices: [{ index: 0, delta: { content: 'a' }, logprobs: { content: [] }, finish_reason: 'stop' }] }]);
    expect(assembleStream('chat.completions', logprobs)).toBeNull();
    expect(assembleStream('chat.completions', 'data: {not json\n\n')).toBeNull();
  });

  test('answers a stream cannot reproduce are not replayed (a miss instead)', () => {
    const two = { id: 'x', object: 'chat.completion', created: 1, model: 'm', choices: [0, 1].map((index) => ({ index, message: { role: 'assistant', content: 'a' }, finish_reason: 'stop' })) };
    expect(streamHit(answer(JSON.stringify(two)), false)).toBeNull();
    const one = { ...two, choices: [two.choices[0]] };
    expect(streamHit(answer(JSON.stringify(one)), false)).not.toBeNull();
    expect(streamHit(answer(JSON.stringify(one)), true)).toBeNull(); // usage asked, none stored
  });
});
