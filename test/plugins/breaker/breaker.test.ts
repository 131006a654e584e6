import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { breaker } from '../../../plugins/breaker/index.js';
import { redisBreakerState } from '../../../plugins/breaker/redis-state.js';
import { redisConnection } from '../../../sdk/index.js';
import { memoryBreakerState, type BreakerState } from '../../../plugins/breaker/state.js';
import { config } from '../../../plugins/config/index.js';
import { openai } from '../../../plugins/providers/openai/index.js';
import { fallbackStrategy } from '../../../plugins/strategies/fallback/index.js';
import { timeout } from '../../../plugins/timeout/index.js';
import { serveGateway } from '../../helpers/serve.js';
import { REDIS_URL, requireService, uniquePrefix } from '../../helpers/services.js';
import { startMockOpenAI, type MockUpstream } from '../../mocks/openai-upstream.js';

let mock: MockUpstream;
beforeAll(async () => {
  mock = await startMockOpenAI();
});
afterAll(() => mock.close());

const CB = { failure_threshold: 2, cooldown_interval: 30_000 };

describe('breaker in a gateway (fake clock)', () => {
  let clock = 1_000_000;
  let gw: Awaited<ReturnType<typeof serveGateway>>;
  beforeAll(async () => {
    gw = await serveGateway({ plugins: [openai(), config(), fallbackStrategy(), breaker({ now: () => clock }), timeout()] });
  });
  afterAll(() => gw.close());

  const target = (extra: Record<string, unknown> = {}) => ({ provider: 'openai', api_key: 'sk-cb', custom_host: mock.baseURL, cb_config: CB, ...extra });
  const send = async (cfg: unknown, model = 'queued') => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-config': JSON.stringify(cfg) },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
    });
    return { res, body: await res.json() };
  };

  test('closed → open after the threshold; open skips the upstream; half-open trial closes or re-opens', async () => {
    mock.script.push({ status: 503 }, { status: 503 });
    expect((await send(target())).res.status).toBe(503);
    expect((await send(target())).res.status).toBe(503);

    // Open: answered by the gateway, the upstream is not called.
    const before = mock.requests.length;
    const open = await send(target());
    expect(open.res.status).toBe(503);
    expect(open.body.error.code).toBe('circuit_open');
    expect(open.body.error.message).toContain('open');
    expect(Number(open.res.headers.get('retry-after'))).toBe(30);
    expect(mock.requests.length).toBe(before);

    // Cooldown not over yet.
    clock += 29_000;
    expect((await send(target())).body.error.code).toBe('circuit_open');

    // Half-open: one trial; it fails, so the breaker re-opens.
    clock += 1_001;
    mock.script.push({ status: 502 });
    expect((await send(target())).res.status).toBe(502);
    expect((await send(target())).body.error.code).toBe('circuit_open');

    // Next trial succeeds: closed again, and failures count from zero.
    clock += 30_001;
    expect((await send(target())).res.status).toBe(200);
    mock.script.push({ status: 503 });
    expect((await send(target())).res.status).toBe(503);
    expect((await send(target())).res.status).toBe(200);
  });

  test('fallback skips an open target', async () => {
    const bad = target({ api_key: 'sk-other', override_params: { model: 'error-503' } });
    await send(bad);
    await send(bad);
    expect((await send(bad)).body.error.code).toBe('circuit_open');
    const before = mock.requests.length;
    const { res } = await send({ strategy: { mode: 'fallback' }, targets: [bad, { provider: 'openai', api_key: 'sk-ok', custom_host: mock.baseURL }] });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gateway-last-used-option-index')).toBe('1');
    expect(mock.requests.length - before).toBe(1);
  });

  test('default failure codes are those above 500; failure_status_codes replaces them', async () => {
    const t = target({ api_key: 'sk-500' });
    mock.script.push({ status: 500 }, { status: 500 }, { status: 500 });
    for (let i = 0; i < 3; i++) expect((await send(t)).res.status).toBe(500);
    const custom = target({ api_key: 'sk-429', cb_config: { ...CB, failure_status_codes: [429] } });
    mock.script.push({ status: 429 }, { status: 429 });
    await send(custom);
    await send(custom);
    expect((await send(custom)).body.error.code).toBe('circuit_open');
  });

  test('a fractional failure_threshold opens at the next whole count of failures: 1.5 after 2', async () => {
    const t = target({ api_key: 'sk-fraction', cb_config: { ...CB, failure_threshold: 1.5 } });
    mock.script.push({ status: 503 }, { status: 503 });
    const before = mock.requests.length;
    expect((await send(t)).res.status).toBe(503);
    // One failure is below 1.5: still closed, so the upstream is asked again.
    expect((await send(t)).res.status).toBe(503);
    expect(mock.requests.length - before).toBe(2);
    expect((await send(t)).body.error.code).toBe('circuit_open');
    expect(mock.requests.length - before).toBe(2);
  });

  test('timeouts and network errors count as failures', async () => {
    const slow = target({ api_key: 'sk-slow', request_timeout: 50 });
    expect((await send(slow, 'slow-500')).res.status).toBe(408);
    expect((await send(slow, 'slow-500')).res.status).toBe(408);
    expect((await send(slow, 'slow-500')).body.error.code).toBe('circuit_open');
    const down = target({ api_key: 'sk-down', custom_host: 'http://127.0.0.1:1/v1' });
    await send(down);
    await send(down);
    expect((await send(down)).body.error.code).toBe('circuit_open');
  });
});

/** The same state-machine contract for every breaker store. */
function stateContract(name: string, make: () => Promise<BreakerState | null>) {
  describe(`${name} breaker state`, () => {
    test('admit / failure / success / single trial', async () => {
      const state = await make();
      if (state === null) return;
      const key = 'k1';
      expect(await state.admit(key, 30_000, 0)).toEqual({ state: 'closed', failures: 0 });
      await state.failure(key, 2, 10, false);
      expect(await state.admit(key, 30_000, 20)).toEqual({ state: 'closed', failures: 1 });
      await state.failure(key, 2, 30, false);
      expect(await state.admit(key, 30_000, 40)).toEqual({ state: 'open', retryInMs: 29_990 });
      expect(await state.admit(key, 30_000, 30_030)).toEqual({ state: 'trial' });
      // While the trial runs, everyone else still sees it open.
      expect((await state.admit(key, 30_000, 30_031)).state).toBe('open');
      await state.failure(key, 2, 30_040, true);
      expect(await state.admit(key, 30_000, 30_050)).toEqual({ state: 'open', retryInMs: 29_990 });
      expect(await state.admit(key, 30_000, 60_040)).toEqual({ state: 'trial' });
      // A trial given back lets the next caller try, and the breaker stays open until a real answer.
      await state.release(key);
      expect(await state.admit(key, 30_000, 60_041)).toEqual({ state: 'trial' });
      await state.success(key);
      expect(await state.admit(key, 30_000, 60_050)).toEqual({ state: 'closed', failures: 0 });
    });
  });
}

stateContract('memory', async () => memoryBreakerState());

describe('redis', async () => {
  const available = await requireService('Redis', REDIS_URL);
  const clients: Redis[] = [];
  afterAll(async () => {
    for (const c of clients) await c.quit();
  });
  stateContract('redis', async () => {
    if (!available) return null;
    const client = new Redis(REDIS_URL);
    clients.push(client);
    return redisBreakerState(redisConnection(client, uniquePrefix('breaker-contract'), false));
  });
});
