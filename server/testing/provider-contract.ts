import type { IncomingHttpHeaders } from 'node:http';
import OpenAI, { APIError } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import type { GatewayPlugin, Target } from '../../core/index.js';
import { startTestGateway, type TestGateway } from './harness.js';
import { messagesDoorSuite } from './messages-door.js';
import { responsesDoorSuite } from './responses-door.js';
import { requireSharedSchemas, schemaErrors } from './schemas.js';

/**
 * The provider contract: the suite every bundled provider passes, for a provider
 * plugin of your own. It runs against a mock upstream that speaks the provider's
 * real wire format (write one with {@link startRecordingServer}). The mock answers
 * according to the scenario set with `next()`; the suite drives the gateway
 * with the official `openai` SDK and checks the OpenAI-shaped result, and the
 * provider's own `expectRequest` hooks check the native request.
 *
 * What every mock must produce, so the suite can check the translation:
 * - `text`: the answer text "Hello!" (streamed as at least two text deltas, "Hello" then "!"),
 *   with usage prompt 9 tokens of which 3 cached (where the provider reports cache reads),
 *   completion 2 tokens; the finish is the native equivalent of `finish` (default stop).
 * - `tool_call`: one call of `get_weather` with arguments {"city":"Paris"} (streamed as at
 *   least two argument fragments), native finish = tool use. Never asked of a provider whose
 *   contract says `supports: { tools: false }` (its mock may answer it anyhow).
 * - `error`: that HTTP status with the provider's error body whose message is "Mock error <status>"
 *   (and `retry-after: 7` on 429).
 * - `stream_error`: a streamed answer with the text delta "Hel", then the provider's
 *   in-band error event (message "Mock stream failure"), then the end of the stream.
 * Stream or not is decided by the native request (stream flag or streaming endpoint).
 */
export type Scenario =
  | { kind: 'text'; finish?: 'stop' | 'length' | 'content_filter' }
  | { kind: 'tool_call' }
  | { kind: 'error'; status: number }
  | { kind: 'stream_error' };

export interface SeenNativeRequest {
  method: string;
  /** Path and query as received. */
  path: string;
  headers: IncomingHttpHeaders;
  /** Parsed JSON body. */
  body: any;
}

export interface ContractMock {
  /** What to put in the target's `custom_host`. */
  baseURL: string;
  requests: SeenNativeRequest[];
  /** Sets the scenario for the following requests (until set again). */
  next(scenario: Scenario): void;
  close(): Promise<void>;
}

export interface ProviderContract {
  /** Provider name, as registered. */
  provider: string;
  /** The provider plugin(s) under test. */
  plugins: () => GatewayPlugin[];
  startMock(): Promise<ContractMock>;
  /** Target for the gateway config: credentials plus `custom_host: mock.baseURL`. */
  target(mock: ContractMock): Target;
  /** Model name the client sends. */
  model: string;
  /** Whether the provider reports cached prompt tokens (then usage.prompt_tokens_details.cached_tokens must be 3). */
  reportsCachedTokens: boolean;
  /** The provider serves the Responses API natively (the door passes the request through); else it is translated to chat. */
  nativeResponses?: boolean;
  /** The provider serves Anthropic's Messages API natively for this model (the door passes the request through). */
  nativeMessages?: boolean;
  /** The provider counts a Messages request's tokens itself (`count_tokens`); else the gateway estimates. */
  countsTokens?: boolean;
  /** HTTP status the client gets for an upstream status (default: the same). */
  mapStatus?: (upstream: number) => number;
  /**
   * Whether the OpenAI schema checks must run: then a missing `shared/schemas/openai.json` fails the
   * suite instead of skipping its schema test with a warning. Default: only under `CI=true` in this
   * repository's own tests; false elsewhere.
   */
  requireOpenAISchema?: boolean;
  /**
   * What the provider's wire format can carry; each defaults to true. A provider without one must
   * refuse a request that needs it, before sending anything, with a 400 in the gateway's envelope
   * whose `param` names the field and whose message names the provider (dropping it silently would
   * answer another question than the one asked). Then the tool and image tests of the contract, in
   * the chat tests and the Responses and Messages doors, check that refusal instead:
   * - `tools: false`: a request with `tools` is refused with `param: "tools"` (a conversation with
   *   tool calls and results may be refused on a `messages[i]…` path instead);
   * - `images: false`: an image part is refused with a `param` under its path, `messages[0].content[1]…`.
   */
  supports?: ProviderSupports;
  /**
   * Provider-native assertions on what the gateway sent upstream. `toolRoundTrip`, `tools` and
   * `image` are required unless `supports` says the provider has no tools (the first two) or no
   * images (the third): the contract refuses to run without them, naming the missing ones.
   */
  expectRequest: {
    /** The native request of a plain chat with a system message "Be terse." and a user message "Hi". */
    systemAndUser(seen: SeenNativeRequest): void;
    /** The native request after an assistant tool call (id `call_1`, get_weather {"city":"Paris"}) and a tool result "18C". Required unless `supports.tools` is false. */
    toolRoundTrip?(seen: SeenNativeRequest): void;
    /** The native request with a user image: `kind` url (https://example.com/cat.png) or base64 (image/png, data "iVBORw0KGgo="). Required unless `supports.images` is false. */
    image?(seen: SeenNativeRequest, kind: 'url' | 'base64'): void;
    /** The native request carries the tool definition `get_weather` with its JSON-schema parameters. Required unless `supports.tools` is false. */
    tools?(seen: SeenNativeRequest): void;
  };
}

/** What a provider's wire format can carry (see {@link ProviderContract.supports}); each defaults to true. */
export interface ProviderSupports {
  /** Function tools: definitions, calls and their results. */
  tools?: boolean;
  /** Image parts in user messages. */
  images?: boolean;
}

/** The `supports` of a contract with its defaults filled in. */
export function supported(spec: ProviderContract): Required<ProviderSupports> {
  return { tools: spec.supports?.tools !== false, images: spec.supports?.images !== false };
}

/**
 * The `expectRequest` hooks the contract needs, checked before any test runs: a hook a supported
 * feature needs and the spec lacks stops the suite with a message naming it.
 */
function checkExpectations(spec: ProviderContract): void {
  const { tools, images } = supported(spec);
  const needed = [...(tools ? (['toolRoundTrip', 'tools'] as const) : []), ...(images ? (['image'] as const) : [])];
  const missing = needed.filter((name) => typeof spec.expectRequest[name] !== 'function');
  if (missing.length === 0) return;
  const what = missing.map((name) => `expectRequest.${name}`).join(' and ');
  const set = [...(missing.some((n) => n !== 'image') ? ['tools: false'] : []), ...(missing.includes('image') ? ['images: false'] : [])].join(', ');
  throw new Error(`provider contract for "${spec.provider}": ${what} ${missing.length === 1 ? 'is' : 'are'} required, unless the provider cannot carry them: then say so with supports: { ${set} }.`);
}

/**
 * Expects a request the provider cannot carry to have been refused: a 400 in the gateway's envelope whose
 * `param` fits `param`, whose message names the provider, and nothing sent upstream.
 */
export async function expectRefused(spec: ProviderContract, mock: ContractMock, request: () => Promise<unknown>, param: (param: unknown) => boolean, what: string): Promise<void> {
  const before = mock.requests.length;
  const result = await request().then(
    (answer) => answer,
    (err: unknown) => err,
  );
  expect(result, `${what}: the provider must refuse it with a 400 (supports says it cannot carry it), not answer it`).toBeInstanceOf(APIError);
  const err = result as APIError;
  expect(err.status, `${what}: ${err.message}`).toBe(400);
  const named = (err.error as { param?: unknown } | undefined)?.param;
  expect(param(named), `${what}: the error's param (${JSON.stringify(named)}) should name the field`).toBe(true);
  expect(err.message, `${what}: the message should name the provider`).toContain(spec.provider);
  expect(mock.requests.length - before, `${what}: nothing should reach the provider`).toBe(0);
}

const TOOLS: OpenAI.ChatCompletionTool[] = [
  {
    type: 'function',
    function: { name: 'get_weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
  },
];

/** Runs the contract for one provider. */
export function providerContract(spec: ProviderContract): void {
  checkExpectations(spec);
  const supports = supported(spec);
  describe(`provider contract: ${spec.provider}`, () => {
    let mock: ContractMock;
    let gw: TestGateway;
    let client: OpenAI;

    beforeAll(async () => {
      mock = await spec.startMock();
      gw = await startTestGateway({ plugins: spec.plugins() });
      client = new OpenAI({
        apiKey: 'unused-by-config',
        baseURL: `${gw.url}/v1`,
        maxRetries: 0,
        defaultHeaders: { 'x-gateway-config': JSON.stringify(spec.target(mock)) },
      });
    });
    beforeEach(() => {
      mock.next({ kind: 'text' });
    });
    afterAll(async () => {
      await gw.close();
      await mock.close();
    });

    responsesDoorSuite(() => ({ spec, mock, url: gw.url, config: JSON.stringify(spec.target(mock)) }), supports);
    messagesDoorSuite(() => ({ spec, mock, url: gw.url, config: JSON.stringify(spec.target(mock)) }), supports);

    const user = (content: OpenAI.ChatCompletionUserMessageParam['content']): OpenAI.ChatCompletionMessageParam => ({ role: 'user', content });
    const status = (upstream: number) => spec.mapStatus?.(upstream) ?? upstream;
    const toolsParam = (param: unknown) => param === 'tools';
    const roundTrip = [
      user('Weather in Paris?'),
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: '18C' },
    ] satisfies OpenAI.ChatCompletionMessageParam[];
    const imageMessage = (kind: 'url' | 'base64') =>
      user([{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: kind === 'url' ? 'https://example.com/cat.png' : 'data:image/png;base64,iVBORw0KGgo=' } }]);

    test('plain chat with a system message: content, finish, usage and the native request', async () => {
      const { data, response } = await client.chat.completions
        .create({ model: spec.model, messages: [{ role: 'system', content: 'Be terse.' }, user('Hi')] })
        .withResponse();
      expect(data.object).toBe('chat.completion');
      expect(typeof data.id).toBe('string');
      expect(data.id.length).toBeGreaterThan(0);
      expect(Number.isInteger(data.created)).toBe(true);
      expect(typeof data.model).toBe('string');
      expect(data.choices).toHaveLength(1);
      expect(data.choices[0]!.message.role).toBe('assistant');
      expect(data.choices[0]!.message.content).toBe('Hello!');
      expect(data.choices[0]!.finish_reason).toBe('stop');
      expect(data.usage).toMatchObject({ prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 });
      if (spec.reportsCachedTokens) expect(data.usage?.prompt_tokens_details?.cached_tokens).toBe(3);
      expect(response.headers.get('x-gateway-provider')).toBe(spec.provider);
      spec.expectRequest.systemAndUser(mock.requests.at(-1)!);
    });

    test.each(['length', 'content_filter'] as const)('finish_reason %s is mapped', async (finish) => {
      mock.next({ kind: 'text', finish });
      const data = await client.chat.completions.create({ model: spec.model, messages: [user('Hi')] });
      expect(data.choices[0]!.finish_reason).toBe(finish);
    });

    if (!supports.tools) {
      test('no tools (supports.tools false): a request with tools is a 400 naming tools and the provider, nothing sent', async () => {
        await expectRefused(spec, mock, () => client.chat.completions.create({ model: spec.model, messages: [user('Weather in Paris?')], tools: TOOLS }), toolsParam, 'a request with tools');
      });

      test('no tools: a tool-call round trip is a 400 naming tools (or the tool message) and the provider, nothing sent', async () => {
        await expectRefused(
          spec,
          mock,
          () => client.chat.completions.create({ model: spec.model, tools: TOOLS, messages: roundTrip }),
          (param) => param === 'tools' || (typeof param === 'string' && /^messages\[[12]\]/.test(param)),
          'a tool-call round trip',
        );
      });

      test('no tools: a streamed request with tools is the same 400, before any stream starts', async () => {
        await expectRefused(spec, mock, () => client.chat.completions.create({ model: spec.model, messages: [user('Weather?')], tools: TOOLS, stream: true }), toolsParam, 'a streamed request with tools');
      });
    }

    if (!supports.images) {
      test.each(['url', 'base64'] as const)('no images (supports.images false): an image part (%s) is a 400 naming the part and the provider, nothing sent', async (kind) => {
        await expectRefused(
          spec,
          mock,
          () => client.chat.completions.create({ model: spec.model, messages: [imageMessage(kind)] }),
          (param) => typeof param === 'string' && param.startsWith('messages[0].content[1]'),
          `an image part (${kind})`,
        );
      });
    }

    if (supports.tools) test('a tool call: stable id, name, arguments as a JSON string, finish tool_calls; tools reach the provider', async () => {
      mock.next({ kind: 'tool_call' });
      const data = await client.chat.completions.create({ model: spec.model, messages: [user('Weather in Paris?')], tools: TOOLS });
      const call = data.choices[0]!.message.tool_calls?.[0];
      expect(call?.type).toBe('function');
      expect(typeof call?.id).toBe('string');
      expect(call!.id.length).toBeGreaterThan(0);
      const fn = (call as OpenAI.ChatCompletionMessageFunctionToolCall).function;
      expect(fn.name).toBe('get_weather');
      expect(typeof fn.arguments).toBe('string');
      expect(JSON.parse(fn.arguments)).toEqual({ city: 'Paris' });
      expect(data.choices[0]!.finish_reason).toBe('tool_calls');
      spec.expectRequest.tools!(mock.requests.at(-1)!);
    });

    if (supports.tools) test('a tool-call round trip: assistant tool_calls then a tool message', async () => {
      const data = await client.chat.completions.create({ model: spec.model, tools: TOOLS, messages: roundTrip });
      expect(data.choices[0]!.message.content).toBe('Hello!');
      spec.expectRequest.toolRoundTrip!(mock.requests.at(-1)!);
    });

    if (supports.images) test.each(['url', 'base64'] as const)('an image part (%s)', async (kind) => {
      await client.chat.completions.create({ model: spec.model, messages: [imageMessage(kind)] });
      spec.expectRequest.image!(mock.requests.at(-1)!, kind);
    });

    test('a streamed text answer: role first, deltas, finish last, usage chunk, [DONE]', async () => {
      const stream = await client.chat.completions.create({ model: spec.model, messages: [user('Hi')], stream: true, stream_options: { include_usage: true } });
      const chunks: OpenAI.ChatCompletionChunk[] = [];
      for await (const chunk of stream) chunks.push(chunk);
      expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
      const ids = new Set(chunks.map((c) => c.id));
      expect(ids.size).toBe(1);
      const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
      expect(text).toBe('Hello!');
      expect(chunks.filter((c) => (c.choices[0]?.delta.content ?? '') !== '').length).toBeGreaterThanOrEqual(2);
      const finishes = chunks.filter((c) => c.choices[0]?.finish_reason);
      expect(finishes).toHaveLength(1);
      expect(finishes[0]!.choices[0]!.finish_reason).toBe('stop');
      const last = chunks.at(-1)!;
      expect(last.choices).toEqual([]);
      expect(last.usage).toMatchObject({ prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 });
    });

    test('no usage chunk unless include_usage is set; the raw stream ends with [DONE]', async () => {
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-gateway-config': JSON.stringify(spec.target(mock)) },
        body: JSON.stringify({ model: spec.model, messages: [{ role: 'user', content: 'Hi' }], stream: true }),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const text = await res.text();
      expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
      expect(text).not.toContain('"choices":[]');
    });

    if (supports.tools) test('a streamed tool call: index, id and name first, then argument fragments', async () => {
      mock.next({ kind: 'tool_call' });
      const stream = await client.chat.completions.create({ model: spec.model, messages: [user('Weather?')], tools: TOOLS, stream: true });
      let name = '';
      let args = '';
      let id = '';
      let finish: string | null = null;
      let fragments = 0;
      for await (const chunk of stream) {
        const choice = chunk.choices[0];
        if (!choice) continue;
        for (const tc of choice.delta.tool_calls ?? []) {
          expect(tc.index).toBe(0);
          if (tc.id) id = tc.id;
          if (tc.function?.name) name += tc.function.name;
          if (tc.function?.arguments) {
            args += tc.function.arguments;
            fragments++;
          }
        }
        if (choice.finish_reason) finish = choice.finish_reason;
      }
      expect(id.length).toBeGreaterThan(0);
      expect(name).toBe('get_weather');
      expect(fragments).toBeGreaterThanOrEqual(1);
      expect(JSON.parse(args)).toEqual({ city: 'Paris' });
      expect(finish).toBe('tool_calls');
    });

    test.each([400, 401, 429, 500, 503])('upstream %i: the envelope, the provider message, the mapped status', async (code) => {
      mock.next({ kind: 'error', status: code });
      const err = (await client.chat.completions.create({ model: spec.model, messages: [user('Hi')] }).catch((e: unknown) => e)) as APIError;
      expect(err).toBeInstanceOf(APIError);
      expect(err.status).toBe(status(code));
      expect(err.message).toContain(`Mock error ${code}`);
      expect(typeof (err.error as { type?: unknown }).type).toBe('string');
      if (code === 429) {
        expect(err.headers?.get('retry-after')).toBe('7');
        expect(err.headers?.get('retry-after-ms')).toBe('7000');
      }
    });

    test('retries: a retryable upstream status is sent again as many times as the config says, then answered', async () => {
      mock.next({ kind: 'error', status: 503 });
      const before = mock.requests.length;
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-gateway-config': JSON.stringify({ ...spec.target(mock), retry: { attempts: 2, on_status_codes: [503] } }) },
        body: JSON.stringify({ model: spec.model, messages: [{ role: 'user', content: 'Hi' }] }),
      });
      expect(res.status).toBe(status(503));
      expect(mock.requests.length - before).toBe(3);
      expect(Number(res.headers.get('x-gateway-retry-attempt-count'))).toBe(2);
      expect(((await res.json()) as { error: { message: string } }).error.message).toContain('Mock error 503');
    });

    test('a mid-stream provider error: an SSE error event, then a clean end', async () => {
      mock.next({ kind: 'stream_error' });
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-gateway-config': JSON.stringify(spec.target(mock)) },
        body: JSON.stringify({ model: spec.model, messages: [{ role: 'user', content: 'Hi' }], stream: true }),
      });
      expect(res.status).toBe(200);
      const text = await res.text();
      expect(text).toContain('"content":"Hel"');
      const errorEvent = text.split('\n\n').find((e) => e.startsWith('data: {"error"'));
      expect(errorEvent).toBeDefined();
      expect(JSON.parse(errorEvent!.slice(6)).error.message).toContain('Mock stream failure');
      // The SDK surfaces it as an error too, instead of hanging.
      const stream = await client.chat.completions.create({ model: spec.model, messages: [user('Hi')], stream: true });
      await expect((async () => { for await (const _ of stream) void _; })()).rejects.toThrow(/Mock stream failure/);
    });

    test('JSON answers and stream chunks match the official OpenAI schemas (shared/schemas/openai.json)', async () => {
      if (!requireSharedSchemas(spec.requireOpenAISchema ?? false)) return;
      const body = (extra: Record<string, unknown>) => JSON.stringify({ model: spec.model, messages: [{ role: 'user', content: 'Hi' }], ...extra });
      const post = (payload: string) =>
        fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-gateway-config': JSON.stringify(spec.target(mock)) }, body: payload });
      for (const kind of supports.tools ? (['text', 'tool_call'] as const) : (['text'] as const)) {
        mock.next({ kind });
        const tools = kind === 'tool_call' ? { tools: TOOLS } : {};
        const json = await (await post(body(tools))).json();
        expect(schemaErrors('openai.json#/$defs/CreateChatCompletionResponse', json), `${kind} JSON`).toEqual([]);
        const text = await (await post(body({ ...tools, stream: true, stream_options: { include_usage: true } }))).text();
        const chunks = text.split('\n\n').filter((e) => e.startsWith('data: {'));
        expect(chunks.length).toBeGreaterThan(0);
        for (const chunk of chunks) expect(schemaErrors('openai.json#/$defs/CreateChatCompletionStreamResponse', JSON.parse(chunk.slice(6))), `${kind} chunk ${chunk}`).toEqual([]);
      }
    });

    test('n > 1 where the provider cannot honour it is a 400 naming the field and the provider, or a valid answer', async () => {
      const result = await client.chat.completions.create({ model: spec.model, messages: [user('Hi')], n: 2 }).catch((e: unknown) => e);
      if (result instanceof APIError) {
        expect(result.status).toBe(400);
        expect((result.error as { param?: string }).param).toBe('n');
        expect(result.message).toContain(spec.provider);
      } else {
        expect((result as OpenAI.ChatCompletion).choices.length).toBeGreaterThanOrEqual(1);
      }
    });
  });
}
