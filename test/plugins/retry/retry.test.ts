import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { config } from '../../../plugins/config/index.js';
import { openai } from '../../../plugins/providers/openai/index.js';
import { retry } from '../../../plugins/retry/index.js';
import { retryAfterMs } from '../../../sdk/index.js';
import { serveGateway } from '../../helpers/serve.js';
import { startMockOpenAI, type MockUpstream } from '../../mocks/openai-upstream.js';

describe('retryAfterMs', () => {
  const now = Date.parse('2026-11-21T12:00:00Z');
  test.each([
    [{ 'retry-after-ms': '250' }, 250],
    [{ 'retry-after-ms': '250', 'retry-after': '9' }, 250],
    [{ 'retry-after': '2' }, 2000],
    [{ 'retry-after': '1.5' }, 1500],
    [{ 'retry-after': 'Sat, 21 Nov 2026 12:00:03 GMT' }, 3000],
    [{ 'retry-after': 'Sat, 21 Nov 2026 11:00:00 GMT' }, 0],
    [{ 'retry-after': 'soon' }, null],
    [{ 'retry-after-ms': '-5' }, null],
    [{}, null],
  ])('%j → %s', (headers, expected) => {
    expect(retryAfterMs(headers, now)).toBe(expected);
  });
});

describe('the retry interceptor (fake sleep)', () => {
  let mock: MockUpstream;
  let gw: Awaited<ReturnType<typeof serveGateway>>;
  const waits: number[] = [];
  /** A fake clock that only the waits move, for the retry time bound. */
  let clock = 1_000_000;

  beforeAll(async () => {
    mock = await startMockOpenAI();
    gw = await serveGateway({
      plugins: [
        openai(),
        config(),
        retry({
          baseDelayMs: 100,
          maxDelayMs: 1000,
          maxRetryAfterMs: 5000,
          maxRetryTimeMs: 5000,
          random: () => 0.5,
          now: () => clock,
          sleep: async (ms) => {
            waits.push(ms);
            clock += ms;
          },
        }),
      ],
    });
  });
  beforeEach(() => {
    waits.length = 0;
    mock.script.length = 0;
  });
  afterAll(async () => {
    await gw.close();
    await mock.close();
  });

  const send = (retryConfig: Record<string, unknown>) =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-gateway-config': JSON.stringify({ provider: 'openai', api_key: 'sk', custom_host: mock.baseURL, retry: retryConfig }),
      },
      body: JSON.stringify({ model: 'queued', messages: [{ role: 'user', content: 'hi' }] }),
    });

  test('exponential backoff with jitter between attempts', async () => {
    mock.script.push({ status: 500 }, { status: 500 }, { status: 500 }, { status: 500 });
    const res = await send({ attempts: 4 });
    expect(res.status).toBe(200);
    // base 100 doubling, capped at 1000; with jitter 0.5 each wait is 75% of its ceiling.
    expect(waits).toEqual([75, 150, 300, 600]);
  });

  test('retry-after-ms and retry-after are honoured when asked', async () => {
    mock.script.push({ status: 429, headers: { 'retry-after-ms': '1234' } }, { status: 503, headers: { 'retry-after': '2' } });
    const res = await send({ attempts: 3, use_retry_after_headers: true });
    expect(res.status).toBe(200);
    expect(waits).toEqual([1234, 2000]);
  });

  test('a retry-after shorter than the backoff waits the backoff', async () => {
    mock.script.push({ status: 429, headers: { 'retry-after-ms': '0' } }, { status: 503, headers: { 'retry-after-ms': '500' } });
    const res = await send({ attempts: 2, use_retry_after_headers: true });
    expect(res.status).toBe(200);
    expect(waits).toEqual([75, 500]);
  });

  test('a large count is taken, and retrying stops at maxRetryTimeMs', async () => {
    mock.script.push(...Array.from({ length: 30 }, () => ({ status: 500 })));
    const before = mock.requests.length;
    const res = await send({ attempts: 100 });
    // Waits 75, 150, 300, 600, then 750 each (capped at 1000, jitter 0.5): nine of them fit in 5000 ms, a tenth would end at 5625.
    expect(res.status).toBe(500);
    expect(waits).toEqual([75, 150, 300, 600, 750, 750, 750, 750, 750]);
    expect(res.headers.get('x-gateway-retry-attempt-count')).toBe('9');
    expect(mock.requests.length - before).toBe(10);
  });

  test('retry-after is ignored unless use_retry_after_headers is set', async () => {
    mock.script.push({ status: 429, headers: { 'retry-after': '3' } });
    await send({ attempts: 1 });
    expect(waits).toEqual([75]);
  });

  test('a retry-after above the cap returns the answer instead of waiting', async () => {
    mock.script.push({ status: 429, headers: { 'retry-after': '60' } });
    const res = await send({ attempts: 3, use_retry_after_headers: true });
    expect(res.status).toBe(429);
    expect(res.headers.get('x-gateway-retry-attempt-count')).toBe('0');
    expect(waits).toEqual([]);
  });

  test('network errors are retried too', async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-config': JSON.stringify({ provider: 'openai', api_key: 'sk', custom_host: 'http://127.0.0.1:1/v1', retry: { attempts: 2 } }) },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status).toBe(502);
    expect(waits).toHaveLength(2);
  });
});

describe('a count above the former cap of 5 (real waits, short backoff)', () => {
  let mock: MockUpstream;
  let gw: Awaited<ReturnType<typeof serveGateway>>;

  beforeAll(async () => {
    mock = await startMockOpenAI();
    gw = await serveGateway({ plugins: [openai(), config(), retry({ baseDelayMs: 1, maxDelayMs: 2 })] });
  });
  beforeEach(() => {
    mock.script.length = 0;
  });
  afterAll(async () => {
    await gw.close();
    await mock.close();
  });

  const send = () =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-gateway-config': JSON.stringify({ provider: 'openai', api_key: 'sk', custom_host: mock.baseURL, retry: { attempts: 10 } }),
      },
      body: JSON.stringify({ model: 'queued', messages: [{ role: 'user', content: 'hi' }] }),
    });

  test('attempts: 10 retries ten times: ten failures, then the answer', async () => {
    mock.script.push(...Array.from({ length: 10 }, () => ({ status: 503 })));
    const before = mock.requests.length;
    const res = await send();
    expect(res.status).toBe(200);
    expect((await res.json()).object).toBe('chat.completion');
    expect(res.headers.get('x-gateway-retry-attempt-count')).toBe('10');
    expect(mock.requests.length - before).toBe(11);
  });

  test('and no more: an eleventh failure is returned', async () => {
    mock.script.push(...Array.from({ length: 11 }, () => ({ status: 503 })));
    const before = mock.requests.length;
    const res = await send();
    expect(res.status).toBe(503);
    expect(res.headers.get('x-gateway-retry-attempt-count')).toBe('10');
    expect(mock.requests.length - before).toBe(11);
  });
});
