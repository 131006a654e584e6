import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { DEFAULT_CONFIG } from '../../../../server/default-config.js';
import { GATEWAY_KEY, startTestServer } from '../../../helpers/gateway.js';
import { REASONING_RECORDED, REASONING_USAGE as USAGE } from './reasoning-usage.js';

/*
 * Real usage for streams the client asked no usage for, through the real server: the gateway asks
 * the upstream (`stream_options.include_usage`), keeps the usage event from the client, and stores
 * the upstream's usage, as it does for the same request not streamed.
 */

const STORED = REASONING_RECORDED;

interface Seen {
  path: string;
  query: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The bytes the mock answered with. */
  sent: string;
}

/**
 * An OpenAI-format upstream at any prefix (`/v1/chat/completions`, Azure's `/openai/deployments/d/chat/completions`):
 * JSON answers with {@link USAGE}; streams as OpenAI sends them (an `obfuscation` pad, `"usage":null` on
 * every chunk and a usage event before `[DONE]`, only with `include_usage`), written in pieces cut
 * across events. Model `usage-on-content`: the usage rides on the last content chunk instead.
 */
async function startUpstream(): Promise<{ baseURL: string; origin: string; seen: Seen[]; close(): Promise<void> }> {
  const seen: Seen[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const q = req.url!.indexOf('?');
      const record: Seen = { path: q === -1 ? req.url! : req.url!.slice(0, q), query: q === -1 ? '' : req.url!.slice(q + 1), headers: req.headers, body: raw, sent: '' };
      seen.push(record);
      const body = JSON.parse(raw) as Record<string, any>;
      const base = { id: 'chatcmpl-usage1', object: 'chat.completion.chunk', created: 1736407895, model: body.model, service_tier: 'default', system_fingerprint: 'fp_u' };
      if (body.stream !== true) {
        record.sent = JSON.stringify({
          ...base,
          object: 'chat.completion',
          choices: [{ index: 0, message: { role: 'assistant', content: 'Hello there!', refusal: null }, logprobs: null, finish_reason: 'stop' }],
          usage: USAGE,
        });
        res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'req_u' });
        res.end(record.sent);
        return;
      }
      const asked = body.stream_options?.include_usage === true;
      const pad = body.stream_options?.include_obfuscation === false ? {} : { obfuscation: 'k2"usage":{' };
      const usageNull = asked ? { usage: null } : {};
      const onContent = body.model === 'usage-on-content';
      const events = [
        { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '', refusal: null }, logprobs: null, finish_reason: null }], ...usageNull, ...pad },
        { ...base, choices: [{ index: 0, delta: { content: 'Hello' }, logprobs: null, finish_reason: null }], ...usageNull, ...pad },
        { ...base, choices: [{ index: 0, delta: { content: ' there!' }, logprobs: null, finish_reason: null }], ...usageNull, ...pad },
        { ...base, choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }], ...usageNull, ...(asked && onContent ? { usage: USAGE } : {}), ...pad },
      ];
      if (asked && !onContent) events.push({ ...base, choices: [], usage: USAGE, ...pad } as (typeof events)[number]);
      record.sent = events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('') + 'data: [DONE]\n\n';
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-request-id': 'req_u' });
      // Written in pieces of 97 bytes: events (the usage event among them) arrive cut anywhere.
      const bytes = Buffer.from(record.sent);
      let at = 0;
      const next = () => {
        if (at >= bytes.length) return void res.end();
        res.write(bytes.subarray(at, at + 97));
        at += 97;
        setTimeout(next, 1);
      };
      next();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    baseURL: `${origin}/v1`,
    origin,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

let upstream: Awaited<ReturnType<typeof startUpstream>>;
let gw: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  upstream = await startUpstream();
  // The default build, with vLLM switched to being asked (the bundled rows are not, see table.ts).
  const plugins = DEFAULT_CONFIG.plugins.map((p) => (p.name === 'openai-compatible' ? { ...p, options: { streamUsage: { vllm: 'ask' } } } : p));
  gw = await startTestServer({ config: { ...DEFAULT_CONFIG, plugins } });
});

afterAll(async () => {
  await gw.close();
  await upstream.close();
});

let traces = 0;

/** Posts `body` (as these exact bytes) through the gateway: the text the client got, and the upstream's view of the call. */
async function call(body: Record<string, unknown>, headers: Record<string, string>, path = '/v1/chat/completions') {
  const trace = `stream-usage-${++traces}`;
  const raw = JSON.stringify(body);
  const before = upstream.seen.length;
  const res = await fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-trace-id': trace, ...headers },
    body: raw,
  });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  expect(upstream.seen.length).toBe(before + 1);
  return { trace, raw, text, seen: upstream.seen.at(-1)! };
}

const viaOpenAI = () => ({ 'x-gateway-provider': 'openai', 'x-gateway-custom-host': upstream.baseURL, authorization: 'Bearer sk-upstream-usage-test' });
const chat = (extra: Record<string, unknown> = {}) => ({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello' }], ...extra });

/** The stored entry of a trace id, once written. */
async function entryOf(trace: string): Promise<Record<string, any>> {
  const until = Date.now() + 10_000;
  for (;;) {
    const res = await fetch(`${gw.url}/v1/logs?trace_id=${trace}`, { headers: { 'x-gateway-api-key': GATEWAY_KEY } });
    const data = ((await res.json()) as { data: Record<string, any>[] }).data;
    if (data.length > 0) {
      const one = await fetch(`${gw.url}/v1/logs/${String(data[0]!.id)}`, { headers: { 'x-gateway-api-key': GATEWAY_KEY } });
      return (await one.json()) as Record<string, any>;
    }
    if (Date.now() > until) throw new Error(`no log entry for ${trace}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The events of an SSE text, without their `data: ` prefix. */
const events = (text: string) => text.split('\n\n').filter((e) => e !== '').map((e) => e.slice(6));
const usageFields = (e: Record<string, any>) => ({
  prompt_tokens: e.prompt_tokens,
  completion_tokens: e.completion_tokens,
  total_tokens: e.total_tokens,
  cached_tokens: e.cached_tokens,
  reasoning_tokens: e.reasoning_tokens,
  tokens_estimated: e.tokens_estimated,
  cost: e.cost,
  cost_status: e.cost_status,
});

describe('openai: a stream the client asked no usage for', () => {
  test('the upstream is asked; the client gets its stream byte for byte but the usage event; the log has the real usage, as for the same request not streamed', async () => {
    const streamed = await call(chat({ stream: true }), viaOpenAI());
    // The client's bytes, with the option spliced in: nothing else of the body changes.
    expect(streamed.seen.body).toBe(`${streamed.raw.slice(0, -1)},"stream_options":{"include_usage":true}}`);
    // What the upstream sent, less exactly its usage event.
    const usageEvent = `data: ${events(streamed.seen.sent).find((e) => e.includes('"choices":[]'))}\n\n`;
    expect(streamed.seen.sent).toContain(usageEvent);
    expect(streamed.text).toBe(streamed.seen.sent.replace(usageEvent, ''));
    expect(streamed.text).not.toContain('"usage":{');

    const whole = await call(chat(), viaOpenAI());
    expect(whole.seen.body).toBe(whole.raw);
    const [s, w] = [await entryOf(streamed.trace), await entryOf(whole.trace)];
    expect(s).toMatchObject({ stream: true, ...STORED, tokens_estimated: false, cost_status: 'priced', response_body: 'Hello there!' });
    expect(w).toMatchObject({ stream: false, ...STORED, tokens_estimated: false, cost_status: 'priced' });
    expect(usageFields(s)).toEqual(usageFields(w));
    expect(s.cost).toBeGreaterThan(0);
  });

  test('the official SDK reads the stream as OpenAI would send it unasked: no chunk without choices, no usage', async () => {
    const client = new OpenAI({ apiKey: 'sk-upstream-usage-test', baseURL: `${gw.url}/v1`, maxRetries: 0, defaultHeaders: { 'x-gateway-api-key': GATEWAY_KEY, ...viaOpenAI() } });
    const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello' }], stream: true });
    let text = '';
    for await (const chunk of stream) {
      expect(chunk.choices).toHaveLength(1);
      expect(chunk.usage ?? null).toBeNull();
      text += chunk.choices[0]!.delta.content ?? '';
    }
    expect(text).toBe('Hello there!');
  });

  test("the client's other stream_options are kept beside include_usage", async () => {
    const r = await call(chat({ stream: true, stream_options: { include_obfuscation: false } }), viaOpenAI());
    expect(JSON.parse(r.seen.body).stream_options).toEqual({ include_obfuscation: false, include_usage: true });
    expect(r.text).not.toContain('"choices":[]');
    expect((await entryOf(r.trace)).tokens_estimated).toBe(false);
  });

  test('usage on the last content chunk: recorded, and the client gets that chunk with "usage":null', async () => {
    const r = await call(chat({ model: 'usage-on-content', stream: true }), viaOpenAI());
    const sent = events(r.seen.sent);
    const got = events(r.text);
    expect(got).toHaveLength(sent.length);
    expect(JSON.parse(sent.at(-2)!).usage).toEqual(USAGE);
    expect(JSON.parse(got.at(-2)!)).toEqual({ ...JSON.parse(sent.at(-2)!), usage: null });
    expect(got.slice(0, -2)).toEqual(sent.slice(0, -2));
    expect(await entryOf(r.trace)).toMatchObject({ ...STORED, tokens_estimated: false });
  });

  test('legacy completions streams are asked too', async () => {
    const r = await call({ model: 'gpt-3.5-turbo-instruct', prompt: 'Say hello', stream: true }, viaOpenAI(), '/v1/completions');
    expect(r.seen.path).toBe('/v1/completions');
    expect(JSON.parse(r.seen.body).stream_options).toEqual({ include_usage: true });
    expect(r.text).not.toContain('"usage":{');
    expect(await entryOf(r.trace)).toMatchObject({ ...STORED, tokens_estimated: false });
  });
});

describe('a client that asked for usage itself', () => {
  test('nothing changes: its bytes go upstream, the upstream stream (usage event included) comes back byte for byte', async () => {
    const r = await call(chat({ stream: true, stream_options: { include_usage: true } }), viaOpenAI());
    expect(r.seen.body).toBe(r.raw);
    expect(r.text).toBe(r.seen.sent);
    expect(events(r.text).some((e) => e.includes('"choices":[]') && e.includes('"cached_tokens":1024'))).toBe(true);
    expect(await entryOf(r.trace)).toMatchObject({ ...STORED, tokens_estimated: false });
  });
});

describe('OpenAI-compatible providers', () => {
  const compatible = (provider: string) => ({ 'x-gateway-provider': provider, 'x-gateway-custom-host': upstream.baseURL, authorization: 'Bearer local-key' });

  test('a provider not asked (ollama, by default) keeps what it did: the body as sent, no usage, tokens counted and marked estimated', async () => {
    const r = await call(chat({ stream: true }), compatible('ollama'));
    expect(r.seen.body).toBe(r.raw);
    expect(r.text).toBe(r.seen.sent);
    const e = await entryOf(r.trace);
    expect(e.tokens_estimated).toBe(true);
    expect(e.completion_tokens).toBe(Math.ceil('Hello there!'.length / 4));
  });

  test('a provider switched to be asked (vllm, by the plugin option) is asked, and its usage recorded', async () => {
    const r = await call(chat({ stream: true }), compatible('vllm'));
    expect(JSON.parse(r.seen.body).stream_options).toEqual({ include_usage: true });
    expect(r.text).not.toContain('"usage":{');
    expect(events(r.text)).toHaveLength(events(r.seen.sent).length - 1);
    expect(await entryOf(r.trace)).toMatchObject({ ...STORED, tokens_estimated: false });
  });
});

describe('azure-openai', () => {
  const azure = (apiVersion: string) => ({
    'x-gateway-config': JSON.stringify({ provider: 'azure-openai', api_key: 'azure-key-0001', custom_host: upstream.origin, deployment_id: 'dep', api_version: apiVersion }),
  });

  test('an API version that takes stream_options is asked: usage recorded, no usage event for the client', async () => {
    const r = await call(chat({ stream: true }), azure('2024-10-21'));
    expect(r.seen.path).toBe('/openai/deployments/dep/chat/completions');
    expect(JSON.parse(r.seen.body).stream_options).toEqual({ include_usage: true });
    const got = events(r.text).filter((e) => e !== '[DONE]').map((e) => JSON.parse(e) as Record<string, any>);
    expect(got.length).toBeGreaterThan(0);
    for (const c of got) {
      expect(c.choices.length).toBeGreaterThan(0);
      expect(c.usage ?? null).toBeNull();
    }
    expect(await entryOf(r.trace)).toMatchObject({ ...STORED, tokens_estimated: false });
  });

  test('the v1 API: the deployment as the model, and usage asked', async () => {
    const r = await call(chat({ stream: true }), azure('v1'));
    expect(r.seen.path).toBe('/openai/v1/chat/completions');
    expect(JSON.parse(r.seen.body)).toMatchObject({ model: 'dep', stream_options: { include_usage: true } });
    expect(await entryOf(r.trace)).toMatchObject({ ...STORED, tokens_estimated: false });
  });

  test('an older API version is not asked (it would refuse the field): counted and marked, as before', async () => {
    const r = await call(chat({ stream: true }), azure('2024-06-01'));
    expect(r.seen.body).toBe(r.raw);
    expect((await entryOf(r.trace)).tokens_estimated).toBe(true);
  });
});
