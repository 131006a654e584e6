import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startProcess, type GatewayProcess } from '../helpers/process.js';
import { startMockOpenAI, type MockUpstream } from '../mocks/openai-upstream.js';

/*
 * A client's pattern runs on RE2, so `^(a+)+$` against a's and a `!` cannot
 * stall the gateway: on JavaScript's engine 27 a's took about a second and
 * each more doubled it, blocking /health with the rest. The gateway runs in
 * its own process here, so a stalled one fails these tests by their bounds
 * instead of stalling the test runner with it.
 */
const KEY = 'bounded-regex-key-0001';
const EVIL = '^(a+)+$';
const INPUT = `${'a'.repeat(40)}!`;
const HANG_BOUND_MS = 2_000;

let mock: MockUpstream;
let gw: GatewayProcess;
let url: string;

beforeAll(async () => {
  mock = await startMockOpenAI();
  gw = await startProcess([], { GATEWAY_API_KEYS: KEY, GATEWAY_ALLOW_PRIVATE_HOSTS: '1' });
  url = `http://127.0.0.1:${gw.port}`;
}, 30_000);

afterAll(async () => {
  gw?.child.kill('SIGKILL');
  await gw?.exited;
  await mock.close();
});

function chat(config: unknown, model: string, content = 'hi'): Promise<Response> {
  return fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': KEY, 'x-gateway-config': JSON.stringify(config) },
    body: JSON.stringify({ model, messages: [{ role: 'user', content }] }),
    signal: AbortSignal.timeout(10_000),
  });
}

/** Sends `request` and, while it runs, GET /health; both must finish, /health within the bound. */
async function whileHealthy(request: () => Promise<Response>): Promise<Response> {
  const pending = request();
  const started = performance.now();
  const health = await fetch(`${url}/health`, { signal: AbortSignal.timeout(10_000) });
  const healthMs = performance.now() - started;
  expect(health.status).toBe(200);
  expect(healthMs).toBeLessThan(HANG_BOUND_MS);
  return pending;
}

const leaf = (name: string) => ({ name, provider: 'openai', api_key: 'sk-up', custom_host: mock.baseURL });

describe('client-supplied patterns run in linear time', () => {
  test('a conditional $regex with ^(a+)+$ answers while /health stays responsive', async () => {
    const config = {
      strategy: { mode: 'conditional', conditions: [{ query: { 'params.model': { $regex: EVIL } }, then: 'evil' }], default: 'plain' },
      targets: [leaf('evil'), leaf('plain')],
    };
    for (let i = 0; i < 3; i++) {
      const res = await whileHealthy(() => chat(config, INPUT));
      expect(res.status).toBe(200);
      expect(res.headers.get('x-gateway-last-used-option-index')).toBe('1');
      await res.text();
    }
  });

  test('the default.regexMatch check with ^(a+)+$ answers while /health stays responsive', async () => {
    const config = {
      ...leaf('only'),
      before_request_hooks: [{ id: 'h', checks: [{ id: 'default.regexMatch', parameters: { rule: EVIL } }], on_fail: { deny: true } }],
    };
    const res = await whileHealthy(() => chat(config, 'gpt-4o-mini', INPUT));
    expect(res.status).toBe(446);
    const body = await res.json();
    expect(body.hook_results.before_request_hooks[0].checks[0]).toMatchObject({ id: 'default.regexMatch', verdict: false });
  });

  // `a[ab]{200}b$` defeats RE2's DFA on a random run of a's and b's: 2 MB of it would take seconds. The text is refused instead of scanned.
  test('a text too long for its pattern fails the check at once, and a routed value too long is a 400', async () => {
    let seed = 7;
    const long = Array.from({ length: 2_000_000 }, () => ((seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) < 1_073_741_824 ? 'a' : 'b')).join('');
    const check = { ...leaf('a'), before_request_hooks: [{ id: 'h', checks: [{ id: 'default.regexMatch', parameters: { rule: 'a[ab]{200}b$' } }], on_fail: { deny: true } }] };
    const res = await whileHealthy(() => chat(check, 'gpt-4o-mini', long));
    expect(res.status).toBe(446);
    const outcome = (await res.json()).hook_results.before_request_hooks[0].checks[0];
    expect(outcome.verdict).toBe(false);
    expect(outcome.error).toContain('scans at most');

    const conditional = {
      strategy: { mode: 'conditional', conditions: [{ query: { 'params.model': { $regex: 'a[ab]{200}b$' } }, then: 'a' }], default: 'a' },
      targets: [leaf('a')],
    };
    const routed = await whileHealthy(() => chat(conditional, long));
    expect(routed.status).toBe(400);
    const { error } = await routed.json();
    expect(error.param).toBe('params.model');
    expect(error.message).toContain('scans at most');
  });

  test('a pattern RE2 refuses is a 400 naming the field', async () => {
    const conditional = {
      strategy: { mode: 'conditional', conditions: [{ query: { 'params.model': { $regex: '(a)\\1' } }, then: 'a' }], default: 'a' },
      targets: [leaf('a')],
    };
    const res = await chat(conditional, 'gpt-4o-mini');
    expect(res.status).toBe(400);
    const { error } = await res.json();
    expect(error.param).toBe('x-gateway-config');
    expect(error.message).toContain('strategy.conditions[0].query.params.model.$regex');
    expect(error.message).toContain('RE2');

    const check = { ...leaf('a'), before_request_hooks: [{ id: 'h', checks: [{ id: 'default.regexMatch', parameters: { rule: '(?=lookahead)' } }] }] };
    const refused = await chat(check, 'gpt-4o-mini');
    expect(refused.status).toBe(400);
    expect((await refused.json()).error.message).toContain('before_request_hooks[0].checks[0].parameters');
  });

  test('an over-long or over-large pattern is a 400', async () => {
    for (const rule of ['a'.repeat(600), '(?:abcdefgh){1000}']) {
      const check = { ...leaf('a'), before_request_hooks: [{ id: 'h', checks: [{ id: 'default.regexMatch', parameters: { rule } }] }] };
      const res = await chat(check, 'gpt-4o-mini');
      expect(res.status).toBe(400);
      expect((await res.json()).error.message).toMatch(/longer than 512 characters|instructions/);
    }
  });
});
