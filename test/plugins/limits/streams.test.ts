import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { REDIS_URL, requireService, uniquePrefix, clearRedisPrefix } from '../../helpers/services.js';
import { chat, eventually, limitsGateway, type Json, type LimitsGateway } from './helpers.js';

/**
 * An upstream whose streams take a while (so 20 of them overlap) and end with a usage chunk:
 * `prompt_tokens` as the gateway estimates it (characters / 4), `completion_tokens` as the model says:
 * - `fits`: `max_tokens` minus 0, 1 or 2 (never more than reserved);
 * - `over-<n>`: n, whatever `max_tokens` (a provider that goes past the bound);
 * - `fail`: a 500; `hang`: nothing for 3 s.
 */
async function startStreamingUpstream(): Promise<{ baseURL: string; close(): Promise<void> }> {
  let seq = 0;
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      const body = JSON.parse(raw) as Json;
      const model = String(body.model);
      if (model === 'fail') {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'boom', type: 'server_error', param: null, code: null } }));
        return;
      }
      if (model === 'hang') {
        setTimeout(() => res.destroy(), 3000).unref();
        return;
      }
      const chars = (body.messages as Json[]).reduce((n, m) => n + String(m.content).length, 0);
      const prompt = Math.ceil(chars / 4);
      const completion = model.startsWith('over-') ? Number(model.slice(5)) : Number(body.max_tokens) - (seq++ % 3);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const base = { id: 'chatcmpl-s', object: 'chat.completion.chunk', created: 1, model };
      let i = 0;
      const tick = setInterval(() => {
        if (res.destroyed) return clearInterval(tick);
        if (i < 5) {
          res.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { content: `part ${i} ` }, finish_reason: null }] })}\n\n`);
          i++;
          return;
        }
        clearInterval(tick);
        res.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`);
        res.write(`data: ${JSON.stringify({ ...base, choices: [], usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion } })}\n\n`);
        res.end('data: [DONE]\n\n');
      }, 40);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    baseURL: `${url}/v1`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** A stream read to its end; its status and the tokens its usage chunk reports (0 when refused). */
async function stream(gw: LimitsGateway, upstream: string, body: Json, headers: Record<string, string> = {}): Promise<{ status: number; tokens: number }> {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': 'limits-admin-bootstrap-key-0001', 'x-gateway-config': JSON.stringify({ provider: 'openai', api_key: 'sk-s', custom_host: upstream }), ...headers },
    // The client asks for the usage chunk: it counts what it was charged from it (the gateway records it either way).
    body: JSON.stringify({ messages: [{ role: 'user', content: 'Count to five, please' }], stream: true, stream_options: { include_usage: true }, ...body }),
  });
  const text = await res.text();
  const usage = /"usage":\{"prompt_tokens":(\d+),"completion_tokens":(\d+)/.exec(text);
  return { status: res.status, tokens: usage === null ? 0 : Number(usage[1]) + Number(usage[2]) };
}

function suite(name: string, setup: () => Promise<{ redis?: { url: string; prefix: string } } | null>) {
  describe(`a token budget under concurrent streams (${name} store)`, () => {
    const clock = { now: Date.parse('2026-03-11T10:00:00Z') };
    let gw: LimitsGateway | null = null;
    let upstream: Awaited<ReturnType<typeof startStreamingUpstream>>;

    beforeAll(async () => {
      const options = await setup();
      if (options === null) return;
      upstream = await startStreamingUpstream();
      gw = await limitsGateway({ clock, redis: options.redis, limits: { store: options.redis === undefined ? 'memory' : 'redis', reservationTtlMs: 60_000 } });
    });
    afterAll(async () => {
      await gw?.close();
      await upstream?.close();
    });

    const budget = async (case_: string, credit: number) =>
      gw!.admin('POST', '/policies/usage-limits', { name: case_, type: 'tokens', credit_limit: credit, conditions: [{ key: 'metadata.case', value: case_ }] });
    const counters = async (id: string) => (await gw!.admin('GET', `/policies/usage-limits/${id}/usage`)).data[0] ?? { used: 0, reserved: 0 };

    test('20 at once: what they spend never exceeds the budget when the output stays within max_tokens, and nothing stays reserved', async (ctx) => {
      if (gw === null) ctx.skip();
      const b = await budget('fits', 1000);
      const meta = { 'x-gateway-metadata': JSON.stringify({ case: 'fits' }) };
      // Each reserves 6 (prompt) + 100.
      const results = await Promise.all(Array.from({ length: 20 }, () => stream(gw!, upstream.baseURL, { model: 'fits', max_tokens: 100 }, meta)));
      const ok = results.filter((r) => r.status === 200);
      expect(ok.length).toBe(9);
      expect(results.filter((r) => r.status === 429)).toHaveLength(11);
      const spent = ok.reduce((n, r) => n + r.tokens, 0);
      const final = await eventually(async () => {
        const c = await counters(b.id);
        expect(c.reserved).toBe(0);
        return c;
      });
      expect(final.used).toBe(spent);
      expect(spent).toBeLessThanOrEqual(1000);
    });

    test('a provider that goes past max_tokens overshoots by at most (real - reserved) per request admitted at once', async (ctx) => {
      if (gw === null) ctx.skip();
      const b = await budget('over', 200);
      const meta = { 'x-gateway-metadata': JSON.stringify({ case: 'over' }) };
      // Each reserves 6 + 10 = 16 and spends 6 + 30 = 36, 20 over: 12 admitted while all are in flight (fewer
      // when an early one settles before the last are checked), and every one of them may overshoot.
      const results = await Promise.all(Array.from({ length: 20 }, () => stream(gw!, upstream.baseURL, { model: 'over-30', max_tokens: 10 }, meta)));
      const admitted = results.filter((r) => r.status === 200).length;
      expect(admitted).toBeGreaterThanOrEqual(6);
      expect(admitted).toBeLessThanOrEqual(12);
      const final = await eventually(async () => {
        const c = await counters(b.id);
        expect(c.reserved).toBe(0);
        return c;
      });
      expect(final.used).toBe(admitted * 36);
      expect(final.used - 200).toBeLessThanOrEqual(admitted * (36 - 16));
      // Spent: the next request is refused outright.
      expect((await stream(gw!, upstream.baseURL, { model: 'over-30', max_tokens: 10 }, meta)).status).toBe(429);
    });

    test('no reservation outlives its request: a stream the client cuts, an upstream 500, a timeout', async (ctx) => {
      if (gw === null) ctx.skip();
      const b = await budget('leaks', 10_000);
      const meta = { 'x-gateway-metadata': JSON.stringify({ case: 'leaks' }) };

      // The client leaves after the first event: what was streamed is counted (estimated from the text), the rest released.
      const abort = new AbortController();
      const res = await fetch(`${gw!.url}/v1/chat/completions`, {
        method: 'POST',
        signal: abort.signal,
        headers: { 'content-type': 'application/json', 'x-gateway-api-key': 'limits-admin-bootstrap-key-0001', 'x-gateway-config': JSON.stringify({ provider: 'openai', api_key: 'sk-s', custom_host: upstream.baseURL }), ...meta },
        body: JSON.stringify({ model: 'fits', max_tokens: 500, stream: true, messages: [{ role: 'user', content: 'Count to five, please' }] }),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-ratelimit-remaining-usage-tokens')).toBe(String(10_000 - 506));
      const reader = res.body!.getReader();
      await reader.read();
      abort.abort();
      const cut = await eventually(async () => {
        const c = await counters(b.id);
        expect(c.reserved).toBe(0);
        return c;
      });
      expect(cut.used).toBeGreaterThan(0);
      expect(cut.used).toBeLessThan(506);

      const failed = await chat(gw!, upstream.baseURL, { body: { model: 'fail', max_tokens: 500 }, headers: meta });
      expect(failed.status).toBe(500);
      const timedOut = await chat(gw!, upstream.baseURL, { body: { model: 'hang', max_tokens: 500 }, headers: meta, config: { request_timeout: 200 } });
      expect(timedOut.status).toBe(408);
      const final = await eventually(async () => {
        const c = await counters(b.id);
        expect(c.reserved).toBe(0);
        return c;
      });
      expect(final.used).toBe(cut.used);
    });
  });
}

suite('memory', async () => ({}));
const prefix = uniquePrefix('limits-streams');
suite('Redis', async () => ((await requireService('Redis', REDIS_URL)) ? { redis: { url: REDIS_URL, prefix } } : null));

afterAll(async () => {
  if (!(await requireService('Redis', REDIS_URL).catch(() => false))) return;
  await clearRedisPrefix(prefix);
});
