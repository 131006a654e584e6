import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { BOOTSTRAP_KEY, GATEWAY_KEY, startTestServer } from '../helpers/gateway.js';
import { startMockOpenAI, type MockUpstream } from '../mocks/openai-upstream.js';

/*
 * JSON nested 10,000 levels deep used to reach the recursive walks after
 * parsing: JSON.stringify in the transport (with override_params) and the
 * cache's canonical key threw RangeError, a 500. Depth is now refused where
 * the JSON comes in, as a 400 naming the limit.
 */
let mock: MockUpstream;
let gw: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  mock = await startMockOpenAI();
  gw = await startTestServer({ env: { GATEWAY_ALLOW_PRIVATE_HOSTS: '1' } });
});

afterAll(async () => {
  await gw.close();
  await mock.close();
});

const nested = (levels: number) => '['.repeat(levels) + '1' + ']'.repeat(levels);
const deepBody = (levels: number) => `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"metadata_blob":${nested(levels)}}`;
const config = (extra: Record<string, unknown>) => JSON.stringify({ provider: 'openai', api_key: 'sk-up', custom_host: mock.baseURL, ...extra });

function post(body: string, headers: Record<string, string> = {}) {
  return fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-gateway-api-key': GATEWAY_KEY, ...headers }, body });
}

describe('a deeply nested body is a 400 naming the limit, never a 500', () => {
  test.each([
    ['override_params', { override_params: { temperature: 0 } }],
    ['a simple cache', { cache: { mode: 'simple' } }],
    ['no setting', {}],
  ])('10,000 levels with %s', async (_name, extra) => {
    const res = await post(deepBody(10_000), { 'x-gateway-config': config(extra) });
    expect(res.status).toBe(400);
    const { error } = await res.json();
    expect(error).toMatchObject({ code: 'json_too_deep', type: 'invalid_request_error', param: null });
    expect(error.message).toContain('deeper than 100 levels');
    expect(error.message).toContain('maxJsonDepth');
  });

  test('a body within the limit still goes through with override_params and a cache', async () => {
    const res = await post(deepBody(90), { 'x-gateway-config': config({ override_params: { temperature: 0 }, cache: { mode: 'simple' } }) });
    expect(res.status).toBe(200);
    await res.text();
  });

  test('x-gateway-metadata nested too deep is a 400 naming the header', async () => {
    const res = await post(deepBody(1), { 'x-gateway-config': config({}), 'x-gateway-metadata': `{"a":${nested(3000)}}` });
    expect(res.status).toBe(400);
    expect((await res.json()).error).toMatchObject({ code: 'json_too_deep', param: 'x-gateway-metadata' });
  });
});

describe('configs', () => {
  test('an inline config nested too deep is a 400 naming the limit', async () => {
    const res = await post(deepBody(1), { 'x-gateway-config': config({ override_params: { a: JSON.parse(nested(2000)) } }) });
    expect(res.status).toBe(400);
    const { error } = await res.json();
    expect(error.param).toBe('x-gateway-config');
    expect(error.message).toContain('deeper than 100 levels');
  });

  test('a saved config nested too deep or too large is a 400', async () => {
    const save = (cfg: unknown) =>
      fetch(`${gw.url}/v1/configs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-gateway-api-key': BOOTSTRAP_KEY },
        body: typeof cfg === 'string' ? `{"name":"deep","config":${cfg}}` : JSON.stringify({ name: 'deep', config: cfg }),
      });
    const deep = await save(`{"provider":"openai","api_key":"k","override_params":{"a":${nested(10_000)}}}`);
    expect(deep.status).toBe(400);
    expect((await deep.json()).error).toMatchObject({ code: 'json_too_deep' });
    const large = await save({ provider: 'openai', api_key: 'k', override_params: { stop: ['x'.repeat(300 * 1024)] } });
    expect(large.status).toBe(400);
    expect((await large.json()).error.message).toContain('larger than the limit of 262144');
  });
});
