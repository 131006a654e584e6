import OpenAI, { APIError } from 'openai';
import { describe, expect, test } from 'vitest';
import { expectRefused, type ContractMock, type ProviderContract, type ProviderSupports } from './provider-contract.js';
import { schemaErrors } from './schemas.js';

/** What the door tests need from the provider contract's set-up. */
export interface DoorEnv {
  spec: ProviderContract;
  mock: ContractMock;
  /** Gateway base URL (no `/v1`). */
  url: string;
  /** The `x-gateway-config` header naming the provider's target on the mock. */
  config: string;
}

const TOOL = { type: 'function' as const, name: 'get_weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }, strict: false };

/** Every SSE event of a raw stream: its name and parsed data. */
export function sseEvents(text: string): Array<{ event: string | null; data: any }> {
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const event = /^event: (.*)$/m.exec(block)?.[1] ?? null;
      const data = block
        .split('\n')
        .filter((l) => l.startsWith('data: '))
        .map((l) => l.slice(6))
        .join('\n');
      return { event, data: data === '[DONE]' ? data : JSON.parse(data) };
    });
}

/**
 * The Responses front door against one provider's mock (shared/providers/*.md wire formats):
 * text, streaming, tool calls across two turns (stateless and with previous_response_id), an
 * upstream error and a mid-stream failure, each answer and event checked against the
 * Responses schema (test/schemas/responses.json). A provider with a native Responses API
 * gets the request as sent; any other gets it translated to its chat call. Where `supports`
 * says the provider has no tools or no images, requests with them must be refused with a 400
 * naming the field and the provider (see {@link ProviderContract.supports}).
 */
export function responsesDoorSuite(env: () => DoorEnv, supports: Required<ProviderSupports> = { tools: true, images: true }): void {
  describe('the Responses door', () => {
    const client = () => new OpenAI({ apiKey: 'unused', baseURL: `${env().url}/v1`, maxRetries: 0, defaultHeaders: { 'x-gateway-config': env().config } });
    const native = () => env().spec.nativeResponses === true;
    const last = () => env().mock.requests.at(-1)!;
    const valid = (value: unknown, def = 'Response') => expect(schemaErrors(`responses.json#/$defs/${def}`, value)).toEqual([]);
    const post = (body: Record<string, unknown>) =>
      fetch(`${env().url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-gateway-config': env().config }, body: JSON.stringify(body) });

    test('text: output_text, status, usage; the provider gets the instructions and the input', async () => {
      const { data, response } = await client().responses.create({ model: env().spec.model, instructions: 'Be terse.', input: 'Hi' }).withResponse();
      valid(data);
      expect(data.object).toBe('response');
      expect(data.id).toMatch(/^resp_/);
      expect(data.status).toBe('completed');
      expect(data.output_text).toBe('Hello!');
      expect(data.instructions).toBe('Be terse.');
      expect(data.usage).toMatchObject({ input_tokens: 9, output_tokens: 2, total_tokens: 11 });
      if (env().spec.reportsCachedTokens) expect(data.usage?.input_tokens_details.cached_tokens).toBe(3);
      expect(response.headers.get('x-gateway-provider')).toBe(env().spec.provider);
      if (native()) {
        expect(last().path).toMatch(/\/responses(\?|$)/);
        expect(last().body).toMatchObject({ instructions: 'Be terse.', input: 'Hi' });
      } else {
        env().spec.expectRequest.systemAndUser(last());
      }
    });

    test('a length finish is status incomplete, reason max_output_tokens', async () => {
      env().mock.next({ kind: 'text', finish: 'length' });
      const data = await client().responses.create({ model: env().spec.model, input: 'Hi', max_output_tokens: 16 });
      valid(data);
      expect(data.status).toBe('incomplete');
      expect(data.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    });

    test('streaming: created first, the text deltas, the done events, completed with usage; sequence numbers from 0, each event valid', async () => {
      const res = await post({ model: env().spec.model, input: 'Hi', stream: true });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const events = sseEvents(await res.text());
      for (const e of events) {
        expect(e.event).toBe(e.data.type);
        valid(e.data, 'ResponseStreamEvent');
      }
      expect(events.map((e) => e.data.sequence_number)).toEqual(events.map((_, i) => i));
      expect(events[0]!.event).toBe('response.created');
      expect(events[1]!.event).toBe('response.in_progress');
      const deltas = events.filter((e) => e.event === 'response.output_text.delta').map((e) => e.data.delta);
      expect(deltas.length).toBeGreaterThanOrEqual(2);
      expect(deltas.join('')).toBe('Hello!');
      expect(events.find((e) => e.event === 'response.output_text.done')?.data.text).toBe('Hello!');
      const end = events.at(-1)!;
      expect(end.event).toBe('response.completed');
      expect(end.data.response.status).toBe('completed');
      expect(end.data.response.usage).toMatchObject({ input_tokens: 9, output_tokens: 2 });
      // The official SDK's accumulator ends with the same text.
      const stream = client().responses.stream({ model: env().spec.model, input: 'Hi' });
      const final = await stream.finalResponse();
      expect(final.output.flatMap((o) => (o.type === 'message' ? o.content : [])).map((c) => (c.type === 'output_text' ? c.text : '')).join('')).toBe('Hello!');
    });

    if (!supports.tools) {
      const toolsParam = (param: unknown) => param === 'tools';
      test('no tools (supports.tools false): a request with tools is a 400 naming tools and the provider, nothing sent', async () => {
        await expectRefused(env().spec, env().mock, () => client().responses.create({ model: env().spec.model, input: 'Weather in Paris?', tools: [TOOL] }), toolsParam, 'a Responses request with tools');
      });

      test('no tools: the items of a tool-call turn sent back are a 400 naming tools (or the items) and the provider', async () => {
        const input = [
          { role: 'user' as const, content: 'Weather in Paris?' },
          { type: 'function_call' as const, call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
          { type: 'function_call_output' as const, call_id: 'call_1', output: '18C' },
        ];
        await expectRefused(
          env().spec,
          env().mock,
          () => client().responses.create({ model: env().spec.model, tools: [TOOL], input }),
          (param) => param === 'tools' || (typeof param === 'string' && /^(messages|input)\[[12]\]/.test(param)),
          'a Responses tool-call round trip',
        );
      });

      test('no tools: a streamed request with tools is the same 400, before any stream starts', async () => {
        await expectRefused(env().spec, env().mock, () => client().responses.create({ model: env().spec.model, input: 'Weather?', tools: [TOOL], stream: true }), toolsParam, 'a streamed Responses request with tools');
      });
    }

    if (!supports.images) {
      test('no images (supports.images false): an input_image is a 400 naming the part and the provider, nothing sent', async () => {
        const input = [{ role: 'user' as const, content: [{ type: 'input_text' as const, text: 'What is this?' }, { type: 'input_image' as const, image_url: 'https://example.com/cat.png', detail: 'auto' as const }] }];
        await expectRefused(
          env().spec,
          env().mock,
          () => client().responses.create({ model: env().spec.model, input }),
          (param) => typeof param === 'string' && /^(messages|input)\[0\]\.content\[1\]/.test(param),
          'a Responses request with an image',
        );
      });
    }

    if (supports.tools) test('tool calls across two turns, chained with previous_response_id', async () => {
      env().mock.next({ kind: 'tool_call' });
      const first = await client().responses.create({ model: env().spec.model, input: 'Weather in Paris?', tools: [TOOL] });
      valid(first);
      const call = first.output.find((o) => o.type === 'function_call');
      expect(call).toBeDefined();
      if (call?.type !== 'function_call') return;
      expect(call.name).toBe('get_weather');
      expect(JSON.parse(call.arguments)).toEqual({ city: 'Paris' });
      expect(call.call_id.length).toBeGreaterThan(0);
      env().mock.next({ kind: 'text' });
      const second = await client().responses.create({
        model: env().spec.model,
        previous_response_id: first.id,
        tools: [TOOL],
        input: [{ type: 'function_call_output', call_id: call.call_id, output: '18C' }],
      });
      valid(second);
      expect(second.output_text).toBe('Hello!');
      expect(second.previous_response_id).toBe(first.id);
      // The call and its output reach the provider (call ids as its format has them: Gemini has none, Mistral rewrites them).
      const sent = JSON.stringify(last().body);
      expect(sent).toContain('18C');
      if (!native()) expect(sent).toContain('get_weather');
      // Translated, the whole conversation goes up; native, the provider rebuilds it from its own store.
      if (native()) expect(last().body.previous_response_id).toBe(first.id);
      else expect(sent).toContain('Weather in Paris?');
    });

    if (supports.tools) test('tool calls across two turns, stateless: the items of the first turn sent back', async () => {
      const second = await client().responses.create({
        model: env().spec.model,
        tools: [TOOL],
        input: [
          { role: 'user', content: 'Weather in Paris?' },
          { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
          { type: 'function_call_output', call_id: 'call_1', output: '18C' },
        ],
      });
      expect(second.output_text).toBe('Hello!');
      if (!native()) env().spec.expectRequest.toolRoundTrip!(last());
    });

    if (supports.tools) test('a streamed tool call: the item, argument deltas, done with the whole arguments', async () => {
      env().mock.next({ kind: 'tool_call' });
      const res = await post({ model: env().spec.model, input: 'Weather?', tools: [TOOL], stream: true });
      const events = sseEvents(await res.text());
      for (const e of events) valid(e.data, 'ResponseStreamEvent');
      const added = events.find((e) => e.event === 'response.output_item.added' && e.data.item.type === 'function_call');
      expect(added?.data.item.name).toBe('get_weather');
      const args = events.filter((e) => e.event === 'response.function_call_arguments.delta').map((e) => e.data.delta).join('');
      expect(JSON.parse(args)).toEqual({ city: 'Paris' });
      expect(JSON.parse(events.find((e) => e.event === 'response.function_call_arguments.done')!.data.arguments)).toEqual({ city: 'Paris' });
      expect(events.at(-1)!.data.response.output.find((o: any) => o.type === 'function_call').arguments).toBe(args);
    });

    test.each([400, 429, 500])('upstream %i: the envelope with the provider message and the mapped status', async (code) => {
      env().mock.next({ kind: 'error', status: code });
      const err = (await client().responses.create({ model: env().spec.model, input: 'Hi' }).catch((e: unknown) => e)) as APIError;
      expect(err).toBeInstanceOf(APIError);
      expect(err.status).toBe(env().spec.mapStatus?.(code) ?? code);
      expect(err.message).toContain(`Mock error ${code}`);
      if (code === 429) expect(err.headers?.get('retry-after')).toBe('7');
    });

    test('a mid-stream provider error: an error event and response.failed, then a clean end', async () => {
      env().mock.next({ kind: 'stream_error' });
      const res = await post({ model: env().spec.model, input: 'Hi', stream: true });
      expect(res.status).toBe(200);
      const events = sseEvents(await res.text());
      for (const e of events) valid(e.data, 'ResponseStreamEvent');
      expect(events.filter((e) => e.event === 'response.output_text.delta').map((e) => e.data.delta).join('')).toBe('Hel');
      expect(events.find((e) => e.event === 'error')?.data.message).toContain('Mock stream failure');
      const end = events.at(-1)!;
      expect(end.event).toBe('response.failed');
      expect(end.data.response.status).toBe('failed');
      expect(end.data.response.error.message).toContain('Mock stream failure');
    });
  });
}
