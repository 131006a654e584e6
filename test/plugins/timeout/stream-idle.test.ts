import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { DEFAULT_CONFIG } from '../../../server/default-config.js';
import { startRecordingServer } from '../../../server/testing/mock-http.js';
import { GATEWAY_KEY, startTestServer, waitForLog } from '../../helpers/gateway.js';

/**
 * `stream_idle_timeout` through the real server: an upstream that goes quiet before its first chunk
 * fails the attempt (a fallback answers); one that goes quiet mid-stream ends the client's stream with
 * a terminal error in its door's format, and its connection is closed.
 */
let upstream: Awaited<ReturnType<typeof startRecordingServer>>;
let gw: Awaited<ReturnType<typeof startTestServer>>;
const closed: Record<string, boolean> = {};

const chunk = (content: string) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;

function answer(res: ServerResponse, model: string) {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.on('close', () => (closed[model] = !res.writableEnded));
  // Headers, then silence: the first chunk never comes.
  if (model === 'quiet-first') return res.flushHeaders();
  res.write(chunk('one '));
  res.write(chunk('two '));
  // Two chunks, then silence.
  if (model.startsWith('quiet-mid')) return;
  res.write(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`);
  res.end('data: [DONE]\n\n');
}

beforeAll(async () => {
  upstream = await startRecordingServer((_req, res, seen) => answer(res, String((seen.body as { model?: string }).model)));
  gw = await startTestServer({ config: DEFAULT_CONFIG });
});
afterAll(async () => {
  await gw.close();
  await upstream.close();
});

const leaf = (model: string) => ({ provider: 'together-ai', api_key: 'k', custom_host: `${upstream.url}/v1`, override_params: { model } });

async function post(path: string, body: Record<string, unknown>, config: Record<string, unknown>, traceId: string) {
  const started = performance.now();
  const res = await fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-config': JSON.stringify(config), 'x-gateway-trace-id': traceId },
    body: JSON.stringify(body),
  });
  return { res, text: await res.text(), ms: performance.now() - started };
}

describe('stream_idle_timeout', () => {
  test('quiet before the first chunk: the attempt fails, the fallback answers the whole stream', async () => {
    const config = { strategy: { mode: 'fallback' }, stream_idle_timeout: 300, targets: [leaf('quiet-first'), leaf('fine')] };
    const { res, text } = await post('/v1/chat/completions', { model: 'x', stream: true, messages: [{ role: 'user', content: 'hi' }] }, config, 'idle-first');
    expect(res.status).toBe(200);
    expect(text).toContain('"content":"one "');
    expect(text.trim().endsWith('data: [DONE]')).toBe(true);
    await expect.poll(() => closed['quiet-first']).toBe(true);
    const line = await waitForLog(gw.logs, (l) => l.trace_id === 'idle-first');
    expect(line.status).toBe(200);
  });

  test('quiet before the first chunk with nothing to fall back on: a 504 in the envelope, not an open socket', async () => {
    const { res, text } = await post('/v1/chat/completions', { model: 'x', stream: true, messages: [{ role: 'user', content: 'hi' }] }, { ...leaf('quiet-first'), stream_idle_timeout: 200 }, 'idle-alone');
    expect(res.status).toBe(504);
    expect(JSON.parse(text).error.code).toBe('stream_idle_timeout');
  });

  test.each([
    ['chat', '/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }] }],
    ['responses', '/v1/responses', { input: 'hi' }],
    ['messages', '/v1/messages', { max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] }],
  ] as const)('quiet mid-stream on the %s door: the text so far, then the door\'s terminal error; the upstream hung up on', async (door, path, body) => {
    const model = `quiet-mid-${door}`;
    const { res, text, ms } = await post(path, { model: 'x', stream: true, ...body }, { ...leaf(model), stream_idle_timeout: 250 }, `idle-mid-${door}`);
    expect(res.status).toBe(200);
    expect(ms).toBeGreaterThanOrEqual(240);
    expect(text).toContain('two ');
    const blocks = text.trim().split('\n\n');
    if (door === 'chat') {
      expect(blocks.at(-1)).toBe('data: [DONE]');
      expect(JSON.parse(blocks.at(-2)!.slice(6)).error.code).toBe('stream_idle_timeout');
    } else if (door === 'responses') {
      expect(blocks.at(-1)).toMatch(/^event: response\.failed\n/);
      expect(blocks.at(-1)).toContain('"code":"stream_idle_timeout"');
    } else {
      expect(blocks.at(-1)).toMatch(/^event: error\n/);
      expect(blocks.at(-1)).toContain('sent nothing for 250 ms');
    }
    await expect.poll(() => closed[model]).toBe(true);
  });

  test('a bad value is a 400 naming the field', async () => {
    const { res, text } = await post('/v1/chat/completions', { model: 'x', messages: [{ role: 'user', content: 'hi' }] }, { ...leaf('fine'), stream_idle_timeout: 0 }, 'idle-bad');
    expect(res.status).toBe(400);
    expect(text).toContain('stream_idle_timeout');
  });
});
