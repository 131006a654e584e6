import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { DEFAULT_CONFIG } from '../../../server/default-config.js';
import { GATEWAY_KEY, startTestServer, waitForLog } from '../../helpers/gateway.js';
import { startMockOpenAI, type MockUpstream } from '../../mocks/openai-upstream.js';

let mock: MockUpstream;
let gw: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  mock = await startMockOpenAI();
  gw = await startTestServer({
    config: {
      ...DEFAULT_CONFIG,
      configs: { 'cfg-saved': { provider: 'openai', api_key: 'sk-saved', custom_host: 'http://127.0.0.1:1/v1' } },
    },
  });
});
beforeEach(() => {
  mock.script.length = 0;
});
afterAll(async () => {
  await gw.close();
  await mock.close();
});

const openai = (extra: Record<string, unknown> = {}) => ({ provider: 'openai', api_key: 'sk-cfg', custom_host: mock.baseURL, ...extra });
const model = (name: string) => ({ override_params: { model: name } });

async function chat(config: unknown, headers: Record<string, string> = {}, body: Record<string, unknown> = {}) {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-gateway-api-key': GATEWAY_KEY,
      ...(config === undefined ? {} : { 'x-gateway-config': typeof config === 'string' ? config : JSON.stringify(config) }),
      ...headers,
    },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], ...body }),
  });
  return { res, text: await res.text() };
}

describe('single', () => {
  test('provider + credentials from the config; response headers name what answered', async () => {
    const { res } = await chat(openai());
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gateway-provider')).toBe('openai');
    expect(res.headers.get('x-gateway-last-used-option-index')).toBe('0');
    expect(res.headers.get('x-gateway-trace-id')).toBeTruthy();
    expect(mock.requests.at(-1)!.headers.authorization).toBe('Bearer sk-cfg');
  });

  test('the config wins over x-gateway-provider and Authorization', async () => {
    await chat(openai(), { 'x-gateway-provider': 'nope', authorization: 'Bearer sk-header' });
    expect(mock.requests.at(-1)!.headers.authorization).toBe('Bearer sk-cfg');
  });

  test('mode single with targets uses the first', async () => {
    const { res } = await chat({ strategy: { mode: 'single' }, targets: [openai(), openai(model('error-500'))] });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gateway-last-used-option-index')).toBe('0');
  });

  test('override_params merge over the body, child over parent', async () => {
    await chat({ strategy: { mode: 'single' }, override_params: { temperature: 0.1, seed: 7 }, targets: [openai({ override_params: { temperature: 0.9 } })] });
    const sent = JSON.parse(mock.requests.at(-1)!.body);
    expect(sent).toMatchObject({ temperature: 0.9, seed: 7, model: 'gpt-4o-mini' });
  });

  test('forward_headers send the named client headers as received; never the gateway key', async () => {
    await chat(openai({ forward_headers: ['x-tenant', 'X-Gateway-Api-Key'] }), { 'x-tenant': 'acme', 'x-other': 'no' });
    const seen = mock.requests.at(-1)!.headers;
    expect(seen['x-tenant']).toBe('acme');
    expect(seen['x-other']).toBeUndefined();
    expect(seen['x-gateway-api-key']).toBeUndefined();
  });
});

describe('fallback', () => {
  test('moves on when a target errors, and reports the index that answered', async () => {
    const before = mock.requests.length;
    const { res, text } = await chat({ strategy: { mode: 'fallback' }, targets: [openai(model('error-503')), openai()] }, { 'x-gateway-trace-id': 'fb-1' });
    expect(res.status).toBe(200);
    expect(JSON.parse(text).object).toBe('chat.completion');
    expect(res.headers.get('x-gateway-last-used-option-index')).toBe('1');
    expect(mock.requests.length - before).toBe(2);
    const line = await waitForLog(gw.logs, (l) => l.trace_id === 'fb-1');
    expect(line.attempts.map((a: { target: string; status: number }) => [a.target, a.status])).toEqual([
      ['0', 503],
      ['1', 200],
    ]);
  });

  test('strategy.on_status_codes: only listed statuses move on', async () => {
    const { res } = await chat({ strategy: { mode: 'fallback', on_status_codes: [429] }, targets: [openai(model('error-503')), openai()] });
    expect(res.status).toBe(503);
    const moved = await chat({ strategy: { mode: 'fallback', on_status_codes: [429] }, targets: [openai(model('error-429')), openai()] });
    expect(moved.res.status).toBe(200);
  });

  test("a target's own on_status_codes win over the strategy's", async () => {
    const { res } = await chat({ strategy: { mode: 'fallback', on_status_codes: [429] }, targets: [openai({ ...model('error-400'), on_status_codes: [400] }), openai()] });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gateway-last-used-option-index')).toBe('1');
  });

  test('when the last target throws, its error names it in the headers', async () => {
    const { res, text } = await chat({ strategy: { mode: 'fallback' }, targets: [openai(model('error-503')), openai({ custom_host: 'http://127.0.0.1:1/v1' })] });
    expect(res.status).toBe(502);
    expect(JSON.parse(text).error.code).toBe('upstream_unreachable');
    expect(res.headers.get('x-gateway-last-used-option-index')).toBe('1');
    expect(res.headers.get('x-gateway-provider')).toBe('openai');
  });

  test('moves on after a network error', async () => {
    const { res } = await chat({ strategy: { mode: 'fallback' }, targets: [openai({ custom_host: 'http://127.0.0.1:1/v1' }), openai()] });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gateway-last-used-option-index')).toBe('1');
  });

  test("when every target fails, the last target's error comes back as it came", async () => {
    // A key of its own: the routing plugin remembers the 429 (and its retry-after) the same target gave in an earlier test, and would skip it.
    const { res, text } = await chat({ strategy: { mode: 'fallback' }, targets: [openai(model('error-503')), openai({ ...model('error-429'), api_key: 'sk-fresh-429' })] });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(JSON.parse(text).error.message).toBe('Mock error 429');
    expect(res.headers.get('x-gateway-last-used-option-index')).toBe('1');
  });

  test('nested strategies report dotted paths and inherit settings', async () => {
    const config = {
      strategy: { mode: 'fallback' },
      provider: 'openai',
      api_key: 'sk-parent',
      custom_host: mock.baseURL,
      targets: [
        { strategy: { mode: 'fallback' }, targets: [{ provider: 'openai', ...model('error-500') }, { provider: 'openai', ...model('error-502') }] },
        { strategy: { mode: 'fallback' }, targets: [{ provider: 'openai', ...model('error-503') }, { provider: 'openai', name: 'ok' }] },
      ],
    };
    const { res } = await chat(config);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gateway-last-used-option-index')).toBe('1.1');
    expect(mock.requests.at(-1)!.headers.authorization).toBe('Bearer sk-parent');
  });

  test('a streamed request falls back before its first byte', async () => {
    const { res, text } = await chat({ strategy: { mode: 'fallback' }, targets: [openai(model('error-500')), openai()] }, {}, { stream: true });
    expect(res.status).toBe(200);
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
  });
});

describe('loadbalance', () => {
  test('weight 0 is never chosen; the chosen index is reported', async () => {
    for (let i = 0; i < 10; i++) {
      const { res } = await chat({ strategy: { mode: 'loadbalance' }, targets: [openai({ ...model('error-500'), weight: 0 }), openai({ weight: 1 })] });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-gateway-last-used-option-index')).toBe('1');
    }
  });
});

describe('conditional', () => {
  const config = () => ({
    strategy: {
      mode: 'conditional',
      conditions: [
        { query: { 'metadata.plan': 'pro' }, then: 'pro' },
        { query: { 'params.temperature': { $gte: 1 } }, then: 'creative' },
      ],
      default: 'base',
    },
    targets: [openai({ name: 'base' }), openai({ name: 'pro' }), openai({ name: 'creative' })],
  });

  test('routes on metadata', async () => {
    const { res } = await chat(config(), { 'x-gateway-metadata': '{"plan":"pro"}' });
    expect(res.headers.get('x-gateway-last-used-option-index')).toBe('1');
  });

  test('routes on params', async () => {
    const { res } = await chat(config(), {}, { temperature: 1.5 });
    expect(res.headers.get('x-gateway-last-used-option-index')).toBe('2');
  });

  test('falls to default', async () => {
    const { res } = await chat(config(), { 'x-gateway-metadata': '{"plan":"free"}' }, { temperature: 0.2 });
    expect(res.headers.get('x-gateway-last-used-option-index')).toBe('0');
  });

  test('an unknown operator is a 400 naming the path', async () => {
    const bad = { ...config(), strategy: { ...config().strategy, conditions: [{ query: { 'metadata.plan': { $like: 'x' } }, then: 'pro' }] } };
    const { res, text } = await chat(bad);
    expect(res.status).toBe(400);
    expect(JSON.parse(text).error.message).toContain('strategy.conditions[0].query.metadata.plan.$like');
  });
});

describe('retry, timeout and the carrier', () => {
  test('retries on the listed statuses and counts them in a header', async () => {
    mock.script.push({ status: 503 }, { status: 502 });
    const before = mock.requests.length;
    const { res } = await chat(openai({ ...model('queued'), retry: { attempts: 3 } }));
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gateway-retry-attempt-count')).toBe('2');
    expect(mock.requests.length - before).toBe(3);
  });

  test('stops after attempts and returns the last answer', async () => {
    mock.script.push({ status: 500 }, { status: 500 }, { status: 500 });
    const { res } = await chat(openai({ ...model('queued'), retry: { attempts: 1 } }));
    expect(res.status).toBe(500);
    expect(res.headers.get('x-gateway-retry-attempt-count')).toBe('1');
  });

  test('a status outside on_status_codes is not retried', async () => {
    mock.script.push({ status: 503 });
    const { res } = await chat(openai({ ...model('queued'), retry: { attempts: 3, on_status_codes: [429] } }));
    expect(res.status).toBe(503);
    expect(res.headers.get('x-gateway-retry-attempt-count')).toBe('0');
  });

  test('request_timeout answers 408 with the envelope', async () => {
    const { res, text } = await chat(openai({ ...model('slow-1500'), request_timeout: 100 }));
    expect(res.status).toBe(408);
    expect(JSON.parse(text).error).toMatchObject({ code: 'request_timeout', type: 'timeout_error' });
  });

  test('a timeout triggers fallback', async () => {
    const { res } = await chat({ strategy: { mode: 'fallback' }, request_timeout: 100, targets: [openai(model('slow-1500')), openai()] });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gateway-last-used-option-index')).toBe('1');
  });

  test('passthrough: the provider comes from the request headers, settings from the config', async () => {
    mock.script.push({ status: 503 });
    const { res } = await chat(
      { passthrough: true, retry: { attempts: 2 } },
      { 'x-gateway-provider': 'openai', authorization: 'Bearer sk-pass', 'x-gateway-custom-host': mock.baseURL },
      { model: 'queued' },
    );
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gateway-retry-attempt-count')).toBe('1');
    expect(mock.requests.at(-1)!.headers.authorization).toBe('Bearer sk-pass');
  });

  test('a settings-only config takes its provider from the headers', async () => {
    mock.script.push({ status: 500 });
    const headers = { 'x-gateway-provider': 'openai', authorization: 'Bearer sk-h', 'x-gateway-custom-host': mock.baseURL };
    const { res } = await chat({ retry: { attempts: 1 } }, headers, { model: 'queued' });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gateway-retry-attempt-count')).toBe('1');
    const missing = await chat({ retry: { attempts: 1 } });
    expect(missing.res.status).toBe(400);
    expect(JSON.parse(missing.text).error.code).toBe('provider_required');
  });

  test('a saved config by id', async () => {
    const { res, text } = await chat('cfg-saved');
    // The saved config points at a closed port: proof that it was used.
    expect(res.status).toBe(502);
    expect(JSON.parse(text).error.message).toContain('127.0.0.1:1');
  });

  test.each([
    ['not JSON', '{nope', 'invalid_header'],
    ['schema violation', JSON.stringify({ provider: 'openai', api_key: 'k', cb_config: { failure_threshold: 1, cooldown_interval: 10 } }), 'invalid_request'],
  ])('a bad config header (%s) is a 400', async (_name, header, code) => {
    const { res, text } = await chat(header);
    expect(res.status).toBe(400);
    const err = JSON.parse(text).error;
    expect(err.code).toBe(code);
    expect(err.param).toBe('x-gateway-config');
  });

  test('an unknown saved config id is a 404 naming the header', async () => {
    const { res, text } = await chat('cfg-missing');
    expect(res.status).toBe(404);
    expect(JSON.parse(text).error).toMatchObject({ code: 'not_found', param: 'x-gateway-config' });
  });

  test('the schema error names the path and the rule', async () => {
    const { text } = await chat({ strategy: { mode: 'fallback' }, targets: [openai(), openai({ cb_config: { failure_threshold: 1, cooldown_interval: 1000 } })] });
    expect(JSON.parse(text).error.message).toContain('targets[1].cb_config.cooldown_interval');
  });
});
