import OpenAI, { APIError } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import type { GatewayPlugin } from '../../../core/index.js';
import { defineCheck } from '../../../plugins/guardrails/index.js';
import { DEFAULT_CONFIG } from '../../../server/default-config.js';
import * as v from 'valibot';
import { GATEWAY_KEY, startTestServer, waitForLog } from '../../helpers/gateway.js';
import { serveGateway } from '../../helpers/serve.js';
import { startMockOpenAI, type MockUpstream } from '../../mocks/openai-upstream.js';
import { config } from '../../../plugins/config/index.js';
import { guardrails } from '../../../plugins/guardrails/index.js';
import { guardrailChecks } from '../../../plugins/guardrails/checks/index.js';
import { openai } from '../../../plugins/providers/openai/index.js';
import { requestLog } from '../../../plugins/request-log/index.js';
import { trace } from '../../../plugins/trace/index.js';

let mock: MockUpstream;
let gw: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  mock = await startMockOpenAI();
  gw = await startTestServer({
    config: {
      ...DEFAULT_CONFIG,
      guardrails: { 'no-secrets': { deny: true, 'default.contains': { words: ['secret'], operator: 'none' } } },
    },
  });
});
afterAll(async () => {
  await gw.close();
  await mock.close();
});

const target = () => ({ provider: 'openai', api_key: 'sk-g', custom_host: mock.baseURL });
async function chat(cfg: Record<string, unknown>, content = 'Hello there', extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-config': JSON.stringify({ ...target(), ...cfg }), ...headers },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }], ...extra }),
  });
  return { res, text: await res.text() };
}

const denyIfSecret = { id: 'h1', type: 'guardrail', checks: [{ id: 'default.regexMatch', parameters: { rule: '\\bsecret\\b', not: true } }], on_fail: { deny: true } };

describe('input hooks', () => {
  test('deny: 446 with the envelope and hook_results, and the provider never sees the request', async () => {
    const before = mock.requests.length;
    const { res, text } = await chat({ before_request_hooks: [denyIfSecret] }, 'tell me the secret');
    expect(res.status).toBe(446);
    const body = JSON.parse(text);
    expect(body.error).toMatchObject({ code: 'guardrail_denied', type: 'guardrail_error', param: null });
    expect(body.error.message).toContain('h1');
    const hook = body.hook_results.before_request_hooks[0];
    expect(hook).toMatchObject({ id: 'h1', verdict: false, deny: true });
    expect(hook.checks[0]).toMatchObject({ id: 'default.regexMatch', verdict: false });
    expect(typeof hook.checks[0].explanation).toBe('string');
    expect(typeof hook.checks[0].execution_time).toBe('number');
    expect(mock.requests.length).toBe(before);
  });

  test('a passing hook: 200, the answer, and hook_results alongside', async () => {
    const { res, text } = await chat({ before_request_hooks: [denyIfSecret] }, 'hello');
    expect(res.status).toBe(200);
    const body = JSON.parse(text);
    expect(body.choices[0].message.content).toBe('Hello from the mock!');
    expect(body.hook_results.before_request_hooks[0].verdict).toBe(true);
  });

  test('fail without deny: 246, the answer, hook_results, and the upstream status in a header', async () => {
    const { res, text } = await chat({ before_request_hooks: [{ ...denyIfSecret, on_fail: { deny: false, feedback: { value: -1, weight: 1 } } }] }, 'the secret');
    expect(res.status).toBe(246);
    expect(res.headers.get('x-gateway-upstream-status')).toBe('200');
    const body = JSON.parse(text);
    expect(body.choices[0].message.content).toBe('Hello from the mock!');
    expect(body.hook_results.before_request_hooks[0]).toMatchObject({ verdict: false, feedback: { value: -1, weight: 1 } });
  });

  test('the guardrail-entry form, and a string item naming a guardrail from the server config', async () => {
    const inline = await chat({ input_guardrails: [{ id: 'g1', deny: true, 'default.contains': { words: ['forbidden'], operator: 'none' } }] }, 'this is Forbidden');
    expect(inline.res.status).toBe(446);
    const named = await chat({ input_guardrails: ['no-secrets'] }, 'a secret');
    expect(named.res.status).toBe(446);
    expect(JSON.parse(named.text).hook_results.before_request_hooks[0].id).toBe('no-secrets');
    expect((await chat({ input_guardrails: ['no-secrets'] }, 'fine')).res.status).toBe(200);
    // A hook given only an id names a guardrail too.
    const hook = await chat({ before_request_hooks: [{ id: 'no-secrets' }] }, 'a secret');
    expect(hook.res.status).toBe(446);
    const unknown = await chat({ before_request_hooks: [{ id: 'nothing-by-this-name' }] }, 'a secret');
    expect(unknown.res.status).toBe(400);
    expect(JSON.parse(unknown.text).error.message).toContain('before_request_hooks[0]: no guardrail is named "nothing-by-this-name"');
  });

  test('bad check parameters are a 400 at config validation naming the path, not a crash', async () => {
    const bad = await chat({ before_request_hooks: [{ id: 'h', checks: [{ id: 'default.regexMatch', parameters: { rule: '(' } }] }] });
    expect(bad.res.status).toBe(400);
    expect(JSON.parse(bad.text).error.message).toContain('before_request_hooks[0].checks[0].parameters');
    const unknown = await chat({ input_guardrails: [{ id: 'g', 'acme.nothing': {} }] });
    expect(unknown.res.status).toBe(400);
    expect(JSON.parse(unknown.text).error.message).toContain('unknown check "acme.nothing"');
    const missing = await chat({ input_guardrails: ['not-defined'] });
    expect(JSON.parse(missing.text).error.message).toContain('no guardrail is named "not-defined"');
    const words = await chat({ input_guardrails: [{ id: 'g', 'default.contains': { words: [], operator: 'any' } }] });
    expect(JSON.parse(words.text).error.message).toContain('input_guardrails[0].default.contains.words');
  });

  test('hook results reach the request log', async () => {
    await chat({ before_request_hooks: [denyIfSecret] }, 'hello', {}, { 'x-gateway-trace-id': 'hooks-log' });
    const line = await waitForLog(gw.logs, (l) => l.trace_id === 'hooks-log');
    expect(line.hook_results.before_request_hooks[0]).toMatchObject({ id: 'h1', verdict: true });
  });
});

describe('output hooks', () => {
  test('deny on the answer: 446, the answer is never returned', async () => {
    const { res, text } = await chat({ output_guardrails: [{ id: 'o1', deny: true, 'default.contains': { words: ['mock'], operator: 'none' } }] });
    expect(res.status).toBe(446);
    expect(text).not.toContain('Hello from the mock!');
    expect(JSON.parse(text).hook_results.after_request_hooks[0]).toMatchObject({ id: 'o1', verdict: false });
  });

  test('after_request_hooks failing without deny give 246', async () => {
    const { res, text } = await chat({ after_request_hooks: [{ id: 'a1', checks: [{ id: 'default.contains', parameters: { words: ['mock'], operator: 'none' } }] }] });
    expect(res.status).toBe(246);
    expect(JSON.parse(text).hook_results.after_request_hooks[0].verdict).toBe(false);
  });

  test('a stream with an output guardrail that denies: the unchecked text is held, so the denied word never goes out; an error event, then [DONE]', async () => {
    const { res, text } = await chat({ output_guardrails: [{ id: 'o1', deny: true, 'default.contains': { words: ['hello'], operator: 'none' } }] }, 'hi', { stream: true });
    expect(res.status).toBe(200);
    const events = text.trim().split('\n\n');
    expect(events.at(-1)).toBe('data: [DONE]');
    const error = JSON.parse(events.at(-2)!.slice(6));
    expect(error.error.code).toBe('guardrail_denied');
    expect(error.hook_results.after_request_hooks[0].verdict).toBe(false);
    // Block mode holds text its window checks have not seen: "Hello" was judged (and failed) before it could go out.
    expect(text).not.toContain('"content":"Hello"');
  });

  test('a stream that passes its output guardrail ends normally; the SDK parses it', async () => {
    const client = new OpenAI({
      apiKey: 'sk',
      baseURL: `${gw.url}/v1`,
      maxRetries: 0,
      defaultHeaders: { 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-config': JSON.stringify({ ...target(), output_guardrails: [{ id: 'o', deny: true, 'default.contains': { words: ['bye'], operator: 'none' } }] }) },
    });
    const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream: true });
    let out = '';
    for await (const c of stream) out += c.choices[0]?.delta.content ?? '';
    expect(out).toBe('Hello!');
    const denyClient = client.withOptions({ defaultHeaders: { 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-config': JSON.stringify({ ...target(), output_guardrails: [{ id: 'o', deny: true, 'default.contains': { words: ['hello'], operator: 'none' } }] }) } });
    const denied = await denyClient.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream: true });
    await expect((async () => { for await (const _ of denied) void _; })()).rejects.toBeInstanceOf(APIError);
  });
});

describe('semantics with custom checks', () => {
  let custom: Awaited<ReturnType<typeof serveGateway>>;
  let releaseAsync: () => void = () => undefined;
  const events: string[] = [];

  const checks: GatewayPlugin = {
    name: 'test-checks',
    apply(api) {
      // Two checks that can only both finish if they run at the same time.
      let startedA!: () => void;
      let startedB!: () => void;
      const a = new Promise<void>((r) => (startedA = r));
      const b = new Promise<void>((r) => (startedB = r));
      const timeout = (p: Promise<void>) => Promise.race([p.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 2000))]);
      api.checks.add('test.waitsForB', defineCheck({ parameters: v.object({}), async run() { startedA(); return { verdict: await timeout(b) }; } }));
      api.checks.add('test.waitsForA', defineCheck({ parameters: v.object({}), async run() { startedB(); return { verdict: await timeout(a) }; } }));
      api.checks.add(
        'test.slowAsync',
        defineCheck({
          parameters: v.object({}),
          async run() {
            events.push('async-start');
            await new Promise<void>((r) => (releaseAsync = r));
            events.push('async-end');
            return { verdict: false, explanation: 'async says no' };
          },
        }),
      );
      api.checks.add(
        'test.redactDigits',
        defineCheck({
          parameters: v.object({}),
          run(_p, input) {
            const messages = (input.request.messages as Array<{ role: string; content: string }>).map((m) => ({ ...m, content: m.content.replace(/\d/g, '#') }));
            return { verdict: true, transformed: { ...input.request, messages } };
          },
        }),
      );
    },
  };

  beforeAll(async () => {
    custom = await serveGateway({ plugins: [trace(), config(), openai(), guardrailChecks(), checks, guardrails(), requestLog()] });
  });
  afterAll(() => custom.close());

  const send = (cfg: Record<string, unknown>, content = 'hi') =>
    fetch(`${custom.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-config': JSON.stringify({ ...target(), ...cfg }) },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }] }),
    });

  test("a hook's checks run in parallel", async () => {
    const res = await send({ before_request_hooks: [{ id: 'p', checks: [{ id: 'test.waitsForB', parameters: {} }, { id: 'test.waitsForA', parameters: {} }], on_fail: { deny: true } }] });
    expect(res.status).toBe(200);
  });

  test('an async after-hook does not hold the answer; its results go to the log', async () => {
    const res = await send({ after_request_hooks: [{ id: 'later', async: true, checks: [{ id: 'test.slowAsync', parameters: {} }] }] });
    // The answer is complete while the async check is still waiting.
    expect(res.status).toBe(200);
    expect((await res.json()).choices[0].message.content).toBe('Hello from the mock!');
    expect(events).toEqual(['async-start']);
    releaseAsync();
    await waitForLogMsg(custom.logs, 'async hook results');
    expect(events).toEqual(['async-start', 'async-end']);
    const line = custom.logs.lines().find((l) => l.msg === 'async hook results')!;
    expect(line.async_hook_results[0]).toMatchObject({ id: 'later', verdict: false, async: true });
  });

  test('a transforming check rewrites the request the provider sees, recorded as a transformation', async () => {
    const res = await send({ before_request_hooks: [{ id: 'redact', checks: [{ id: 'test.redactDigits', parameters: {} }] }] }, 'card 4111 1111');
    const body = await res.json();
    expect(JSON.parse(mock.requests.at(-1)!.body).messages[0].content).toBe('card #### ####');
    expect(body.hook_results.before_request_hooks[0]).toMatchObject({ transformed: true, checks: [{ transformed: true }] });
  });
});

async function waitForLogMsg(logs: { lines: () => Record<string, any>[] }, msg: string) {
  const until = Date.now() + 3000;
  while (!logs.lines().some((l) => l.msg === msg)) {
    if (Date.now() > until) throw new Error(`no "${msg}" log line`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('the generic proxy', () => {
  test('input hooks run on proxied requests too: allowedRequestTypes can block the proxy before the provider is called', async () => {
    const before = mock.requests.length;
    const res = await fetch(`${gw.url}/v1/models`, {
      headers: {
        'x-gateway-api-key': GATEWAY_KEY,
        'x-gateway-config': JSON.stringify({ ...target(), before_request_hooks: [{ id: 'no-proxy', checks: [{ id: 'default.allowedRequestTypes', parameters: { blocked: ['proxy'] } }], on_fail: { deny: true } }] }),
      },
    });
    expect(res.status).toBe(446);
    expect(mock.requests.length).toBe(before);
  });
});
