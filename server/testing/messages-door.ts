import Anthropic from '@anthropic-ai/sdk';
import { describe, expect, test } from 'vitest';
import { COUNTED_TOKENS } from './mock-http.js';
import type { ProviderSupports } from './provider-contract.js';
import { sseEvents, type DoorEnv } from './responses-door.js';
import { schemaErrors } from './schemas.js';

const TOOL = { name: 'get_weather', description: 'Weather for a city', input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] } };

/**
 * The Messages front door against one provider's mock, driven with the official
 * `@anthropic-ai/sdk` (only `baseURL` and headers changed): text, streaming, tool use across
 * two turns, a streamed tool call, upstream errors in Anthropic's envelope, a mid-stream
 * failure, token counting; every answer and event validated against Anthropic's documented
 * shapes (test/schemas/messages.json). Native for the Anthropic family, translated elsewhere.
 * Where `supports` says the provider has no tools or no images, requests with them must be
 * refused with a 400 in Anthropic's envelope whose message names the field and the provider.
 */
export function messagesDoorSuite(env: () => DoorEnv, supports: Required<ProviderSupports> = { tools: true, images: true }): void {
  describe('the Messages door', () => {
    const client = () => new Anthropic({ apiKey: 'unused', baseURL: env().url, maxRetries: 0, defaultHeaders: { 'x-gateway-config': env().config } });
    const native = () => env().spec.nativeMessages === true;
    const last = () => env().mock.requests.at(-1)!;
    const valid = (value: unknown, def = 'Message') => expect(schemaErrors(`messages.json#/$defs/${def}`, value)).toEqual([]);
    const post = (body: Record<string, unknown>) =>
      fetch(`${env().url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-gateway-config': env().config }, body: JSON.stringify(body) });
    const base = () => ({ model: env().spec.model, max_tokens: 256 });
    /** A request the provider cannot carry: a 400 in Anthropic's envelope naming the field (`mentions`) and the provider; nothing sent upstream. */
    const refused = async (request: () => Promise<unknown>, mentions: RegExp, what: string) => {
      const before = env().mock.requests.length;
      const err = await request().then(
        (answer) => answer,
        (e: unknown) => e,
      );
      expect(err, `${what}: the provider must refuse it with a 400 (supports says it cannot carry it), not answer it`).toBeInstanceOf(Anthropic.APIError);
      const e = err as InstanceType<typeof Anthropic.APIError>;
      expect(e.status, `${what}: ${e.message}`).toBe(400);
      valid(e.error, 'ErrorResponse');
      const message = String((e.error as { error?: { message?: unknown } } | undefined)?.error?.message ?? '');
      expect(message, `${what}: the message should name the field`).toMatch(mentions);
      expect(message, `${what}: the message should name the provider`).toContain(env().spec.provider);
      expect(env().mock.requests.length - before, `${what}: nothing should reach the provider`).toBe(0);
    };

    if (!supports.tools) {
      test('no tools (supports.tools false): a request with tools is a 400 in the envelope naming tools and the provider, nothing sent', async () => {
        await refused(() => client().messages.create({ ...base(), tools: [TOOL], messages: [{ role: 'user', content: 'Weather in Paris?' }] }), /tools/, 'a Messages request with tools');
      });

      test('no tools: a streamed request with tools is the same 400, before any stream starts', async () => {
        await refused(() => client().messages.create({ ...base(), tools: [TOOL], messages: [{ role: 'user', content: 'Weather?' }], stream: true }), /tools/, 'a streamed Messages request with tools');
      });
    }

    if (!supports.images) {
      test('no images (supports.images false): an image block is a 400 in the envelope naming the part and the provider, nothing sent', async () => {
        const content = [
          { type: 'text' as const, text: 'What is this?' },
          { type: 'image' as const, source: { type: 'base64' as const, media_type: 'image/png' as const, data: 'iVBORw0KGgo=' } },
        ];
        await refused(() => client().messages.create({ ...base(), messages: [{ role: 'user', content }] }), /image|content\[1\]/, 'a Messages request with an image');
      });
    }

    test('text: the message, its stop reason and usage (cache reads apart from input); the provider gets system and user', async () => {
      const { data, response } = await client().messages.create({ ...base(), system: 'Be terse.', messages: [{ role: 'user', content: 'Hi' }] }).withResponse();
      valid(data);
      expect(data.content).toEqual([expect.objectContaining({ type: 'text', text: 'Hello!' })]);
      expect(data.stop_reason).toBe('end_turn');
      expect(data.usage.output_tokens).toBe(2);
      const cached = env().spec.reportsCachedTokens ? 3 : 0;
      expect(data.usage.input_tokens + (data.usage.cache_read_input_tokens ?? 0) + (data.usage.cache_creation_input_tokens ?? 0)).toBe(9);
      expect(data.usage.cache_read_input_tokens ?? 0).toBe(cached);
      expect(response.headers.get('x-gateway-provider')).toBe(env().spec.provider);
      const sent = JSON.stringify(last().body);
      expect(sent).toContain('Be terse.');
      expect(sent).toContain('Hi');
      if (native()) expect(last().path).toMatch(/messages|invoke|rawPredict/i);
    });

    test('streaming: message_start first, text deltas, message_delta with usage, message_stop; the SDK assembles the text', async () => {
      const res = await post({ ...base(), messages: [{ role: 'user', content: 'Hi' }], stream: true });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const events = sseEvents(await res.text());
      for (const e of events) {
        expect(e.event).toBe(e.data.type);
        valid(e.data, 'StreamEvent');
      }
      expect(events[0]!.event).toBe('message_start');
      expect(events.at(-1)!.event).toBe('message_stop');
      const deltas = events.filter((e) => e.data.delta?.type === 'text_delta').map((e) => e.data.delta.text);
      expect(deltas.length).toBeGreaterThanOrEqual(2);
      expect(deltas.join('')).toBe('Hello!');
      const delta = events.find((e) => e.event === 'message_delta')!.data;
      expect(delta.delta.stop_reason).toBe('end_turn');
      expect(delta.usage.output_tokens).toBe(2);
      const stream = client().messages.stream({ ...base(), messages: [{ role: 'user', content: 'Hi' }] });
      const final = await stream.finalMessage();
      expect(final.content.map((b) => (b.type === 'text' ? b.text : '')).join('')).toBe('Hello!');
      expect(final.usage.output_tokens).toBe(2);
    });

    if (supports.tools) test('tool use across two turns: the tool_use block, then its result answered', async () => {
      env().mock.next({ kind: 'tool_call' });
      const first = await client().messages.create({ ...base(), tools: [TOOL], messages: [{ role: 'user', content: 'Weather in Paris?' }] });
      valid(first);
      expect(first.stop_reason).toBe('tool_use');
      const use = first.content.find((b) => b.type === 'tool_use');
      if (use?.type !== 'tool_use') throw new Error('no tool_use block');
      expect(use.name).toBe('get_weather');
      expect(use.input).toEqual({ city: 'Paris' });
      env().mock.next({ kind: 'text' });
      const second = await client().messages.create({
        ...base(),
        tools: [TOOL],
        messages: [
          { role: 'user', content: 'Weather in Paris?' },
          { role: 'assistant', content: first.content },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: '18C' }] },
        ],
      });
      expect(second.content).toEqual([expect.objectContaining({ type: 'text', text: 'Hello!' })]);
      const sent = JSON.stringify(last().body);
      expect(sent).toContain('18C');
      expect(sent).toContain('get_weather');
    });

    if (supports.tools) test('a streamed tool call: tool_use start, input_json_delta fragments, the whole input at the end', async () => {
      env().mock.next({ kind: 'tool_call' });
      const stream = client().messages.stream({ ...base(), tools: [TOOL], messages: [{ role: 'user', content: 'Weather?' }] });
      const final = await stream.finalMessage();
      valid(final);
      const use = final.content.find((b) => b.type === 'tool_use');
      expect(use?.type === 'tool_use' && use.input).toEqual({ city: 'Paris' });
      expect(final.stop_reason).toBe('tool_use');
    });

    test.each([400, 429, 500])("upstream %i: Anthropic's error envelope with the provider message", async (code) => {
      env().mock.next({ kind: 'error', status: code });
      const err = (await client().messages.create({ ...base(), messages: [{ role: 'user', content: 'Hi' }] }).catch((e: unknown) => e)) as InstanceType<typeof Anthropic.APIError>;
      expect(err).toBeInstanceOf(Anthropic.APIError);
      expect(err.status).toBe(code);
      valid(err.error, 'ErrorResponse');
      expect(JSON.stringify(err.error)).toContain(`Mock error ${code}`);
      if (code === 429) expect(err.headers?.get('retry-after')).toBe('7');
    });

    test("a mid-stream provider error: Anthropic's error event, the SDK raises it", async () => {
      env().mock.next({ kind: 'stream_error' });
      const res = await post({ ...base(), messages: [{ role: 'user', content: 'Hi' }], stream: true });
      expect(res.status).toBe(200);
      const events = sseEvents(await res.text());
      for (const e of events) valid(e.data, 'StreamEvent');
      expect(events.filter((e) => e.data.delta?.type === 'text_delta').map((e) => e.data.delta.text).join('')).toBe('Hel');
      const error = events.at(-1)!;
      expect(error.event).toBe('error');
      expect(error.data.error.message).toContain('Mock stream failure');
      const stream = client().messages.stream({ ...base(), messages: [{ role: 'user', content: 'Hi' }] });
      await expect(stream.finalMessage()).rejects.toThrow(/Mock stream failure/);
    });

    test('count_tokens: the provider counts where it can, the gateway estimates elsewhere (and says so)', async () => {
      const { data, response } = await client().messages.countTokens({ model: env().spec.model, system: 'Be terse.', messages: [{ role: 'user', content: 'Hi there' }] }).withResponse();
      valid(data, 'CountTokens');
      if (response.headers.get('x-gateway-tokens-estimated') === 'true') expect(data.input_tokens).toBe(Math.ceil('Be terse.Hi there'.length / 4));
      else expect(data.input_tokens).toBe(COUNTED_TOKENS);
      expect(response.headers.get('x-gateway-tokens-estimated') === 'true').toBe(env().spec.countsTokens !== true);
    });
  });
}
