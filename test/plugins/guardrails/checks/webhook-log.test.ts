import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import * as v from 'valibot';
import { GatewayError, UpstreamClient, type HostResolver } from '../../../../core/index.js';
import { createLogCheck } from '../../../../plugins/guardrails/checks/log.js';
import { webhook } from '../../../../plugins/guardrails/checks/webhook.js';
import { sendJson, startEndpoint } from './endpoint-server.js';
import { inputOf, refused, runCheck, testUpstream } from './helpers.js';

type Endpoint = Awaited<ReturnType<typeof startEndpoint>>;
let endpoint: Endpoint;
/** An endpoint that drops every connection as it opens: unreachable, deterministically. */
let refusing: Endpoint;
let closedPort: string;

beforeAll(async () => {
  endpoint = await startEndpoint((call, res) => {
    const p = call.path;
    if (p === '/pass') return sendJson(res, { verdict: true, explanation: 'looks fine', data: { score: 0.1 } });
    if (p === '/fail') return sendJson(res, { verdict: false, explanation: 'too rude' });
    if (p === '/transform') return sendJson(res, { verdict: true, transformed: { ...call.body.request, messages: [{ role: 'user', content: 'rewritten' }] } });
    if (p === '/500') return sendJson(res, { error: 'boom' }, 500);
    if (p === '/not-json') return sendJson(res, 'not json at all');
    if (p === '/wrong-shape') return sendJson(res, { ok: true });
    if (p === '/stall-body') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"verdict":');
      return; // never finishes
    }
    if (p === '/hang') return; // never answers
    sendJson(res, { verdict: true });
  });
  refusing = await startEndpoint(() => undefined);
  refusing.server.on('connection', (socket) => socket.destroy());
  closedPort = refusing.url;
});
afterAll(async () => {
  await endpoint.close();
  await refusing.close();
  await testUpstream().close();
});

const hook = (path: string, extra: Record<string, unknown> = {}) => ({ url: `${endpoint.url}${path}`, ...extra });

describe('default.webhook', () => {
  test('POSTs the event as JSON with the configured headers; the verdict and explanation come from the answer', async () => {
    const before = endpoint.calls.length;
    const input = inputOf('hello there', { metadata: { team: 'a' } });
    const r = await runCheck(webhook, hook('/pass', { headers: { Authorization: 'Bearer wh-secret-token', 'x-team': 'a' } }), input);
    expect(r).toEqual({ verdict: true, explanation: 'looks fine', data: { status: 200, webhook: { score: 0.1 } } });
    const call = endpoint.calls[before]!;
    expect(call.headers['content-type']).toBe('application/json');
    expect(call.headers.authorization).toBe('Bearer wh-secret-token');
    expect(call.headers['x-team']).toBe('a');
    expect(call.body).toEqual({ phase: 'input', route: 'chat.completions', model: 'gpt-4o-mini', text: 'hello there', request: input.request, response: null, metadata: { team: 'a' } });
    expect(JSON.stringify(r)).not.toContain('wh-secret-token');
  });

  test('a false verdict fails the check', async () => {
    expect(await runCheck(webhook, hook('/fail'), inputOf('x'))).toMatchObject({ verdict: false, explanation: 'too rude' });
  });

  test('a transformed body is returned as the transformation', async () => {
    const r = await runCheck(webhook, hook('/transform'), inputOf('x'));
    expect(r.transformed).toEqual({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'rewritten' }] });
  });

  test('timeout: a webhook that never answers fails closed after timeoutMs', async () => {
    const t0 = performance.now();
    const r = await runCheck(webhook, hook('/hang', { timeoutMs: 150 }), inputOf('x'));
    const ms = performance.now() - t0;
    expect(ms).toBeGreaterThanOrEqual(140);
    expect(ms).toBeLessThan(2000);
    expect(r.verdict).toBe(false);
    expect(r.explanation).toBe(`The webhook at ${endpoint.url} failed (it did not answer within 150 ms); failed closed.`);
    expect(r.data).toMatchObject({ failedOpen: false });
  });

  test('timeout with failOpen: the check passes and says it failed open', async () => {
    const r = await runCheck(webhook, hook('/hang', { timeoutMs: 100, failOpen: true }), inputOf('x'));
    expect(r.verdict).toBe(true);
    expect(r.explanation).toContain('failed open');
    expect(r.data).toMatchObject({ failedOpen: true, reason: 'it did not answer within 100 ms' });
  });

  test('the timeout covers the body too', async () => {
    const r = await runCheck(webhook, hook('/stall-body', { timeoutMs: 150 }), inputOf('x'));
    expect(r).toMatchObject({ verdict: false, data: { reason: 'it did not answer within 150 ms' } });
  });

  test.each([
    ['/500', 'it answered status 500'],
    ['/not-json', 'its answer is not JSON'],
    ['/wrong-shape', 'its answer is not { verdict, explanation?, transformed? }: verdict is required'],
  ])('%s: fails closed (%s), passes with failOpen', async (path, reason) => {
    const closed = await runCheck(webhook, hook(path), inputOf('x'));
    expect(closed).toMatchObject({ verdict: false, data: { failedOpen: false, reason } });
    const open = await runCheck(webhook, hook(path, { failOpen: true }), inputOf('x'));
    expect(open).toMatchObject({ verdict: true, data: { failedOpen: true, reason } });
  });

  test('an unreachable webhook: fail closed or open', async () => {
    const closed = await runCheck(webhook, { url: `${closedPort}/x` }, inputOf('x'));
    expect(closed.verdict).toBe(false);
    expect(closed.explanation).toMatch(/failed \(it could not be reached( \(\w+\))?\); failed closed\.$/);
    expect((await runCheck(webhook, { url: `${closedPort}/x`, failOpen: true }, inputOf('x'))).verdict).toBe(true);
  });

  test('explanations name the origin only, never the path or query', async () => {
    const r = await runCheck(webhook, hook('/500?token=abc'), inputOf('x'));
    expect(r.explanation).not.toContain('token=abc');
    expect(r.explanation).not.toContain('/500');
  });

  test('bad parameters', () => {
    expect(refused(webhook, {})).toContain('url is required');
    expect(refused(webhook, { url: 'not a url' })).toContain('url must be an absolute http(s) URL');
    expect(refused(webhook, { url: 'ftp://x.example/hook' })).toContain('url must use http or https');
    expect(refused(webhook, { url: 'https://user:pw@x.example/hook' })).toContain('url must not contain credentials');
    expect(refused(webhook, { url: 'https://x.example', headers: { a: 1 } })).toContain('each header value must be a string');
    expect(refused(webhook, { url: 'https://x.example', headers: { 'bad name': 'x' } })).toContain('a header name must be an HTTP token');
    expect(refused(webhook, { url: 'https://x.example', headers: { Host: 'x' } })).toContain('set by the gateway');
    expect(refused(webhook, { url: 'https://x.example', headers: { a: 'x\r\ny: z' } })).toContain('must not contain line breaks');
    expect(refused(webhook, { url: 'https://x.example', timeoutMs: 0 })).toContain('timeoutMs must be at least 1');
    expect(refused(webhook, { url: 'https://x.example', timeoutMs: 30_001 })).toContain('timeoutMs must be at most 30000');
    expect(refused(webhook, { url: 'https://x.example', timeoutMs: 1.5 })).toContain('timeoutMs must be a whole number');
    expect(refused(webhook, { url: 'https://x.example', failOpen: 'yes' })).toContain('failOpen must be true or false');
  });

  test('defaults: 3000 ms, fail closed, no headers', () => {
    const p = v.parse(webhook.parameters, { url: 'https://x.example/hook' });
    expect(p).toMatchObject({ timeoutMs: 3000, failOpen: false, headers: {} });
  });
});

describe('a host the outbound policy refuses', () => {
  // Names resolve through this table: rebind.test to a private address (never contacted), ok.test to loopback.
  const resolve: HostResolver = async (name) => [{ address: name === 'rebind.test' ? '10.0.0.1' : '127.0.0.1', family: 4 }];
  let strict: UpstreamClient;
  beforeAll(() => {
    strict = new UpstreamClient({ connections: 2, headersTimeoutMs: 5000, bodyTimeoutMs: 5000, outbound: { resolve } });
  });
  afterAll(() => strict.close());
  const port = () => new URL(endpoint.url).port;

  test('webhook: not a verdict, even failing open, but the 400 host_not_allowed; nothing is sent', async () => {
    const before = endpoint.calls.length;
    for (const url of [`${endpoint.url}/pass`, `http://rebind.test:${port()}/pass`]) {
      const err = await runCheck(webhook, { url, failOpen: true }, inputOf('x', { upstream: strict })).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(GatewayError);
      expect((err as GatewayError).code).toBe('host_not_allowed');
    }
    expect(endpoint.calls.length).toBe(before);
  });

  test('log: an address is refused before anything is sent; a name found to resolve to one is a failed delivery', async () => {
    const warn = vi.fn();
    const check = createLogCheck(warn);
    const before = endpoint.calls.length;
    await expect(runCheck(check, { url: `${endpoint.url}/log` }, inputOf('x', { upstream: strict }))).rejects.toMatchObject({ code: 'host_not_allowed', status: 400 });
    expect((await runCheck(check, { url: `http://rebind.test:${port()}/log` }, inputOf('x', { upstream: strict }))).verdict).toBe(true);
    await vi.waitFor(() => expect(warn).toHaveBeenCalledTimes(1));
    expect(warn.mock.calls[0]![0]).toMatchObject({ check: 'default.log', reason: 'its host resolves only to addresses the outbound policy refuses' });
    expect(endpoint.calls.length).toBe(before);
  });
});

describe('default.log', () => {
  test('passes at once without waiting for the endpoint; the event arrives', async () => {
    const warn = vi.fn();
    const check = createLogCheck(warn);
    const before = endpoint.calls.length;
    const t0 = performance.now();
    const r = await runCheck(check, { url: `${endpoint.url}/hang`, headers: { authorization: 'Bearer log-token' } }, inputOf('logged text'));
    expect(performance.now() - t0).toBeLessThan(50);
    expect(r).toEqual({ verdict: true, explanation: `The event is being sent to ${endpoint.url} (not awaited).` });
    await endpoint.waitForCalls(before + 1);
    expect(endpoint.calls[before]!.body).toMatchObject({ phase: 'input', text: 'logged text' });
    expect(endpoint.calls[before]!.headers.authorization).toBe('Bearer log-token');
    expect(warn).not.toHaveBeenCalled();
  });

  test('failures are swallowed: one warning, then silence until a delivery succeeds', async () => {
    const warn = vi.fn();
    const check = createLogCheck(warn);
    const params = v.parse(check.parameters, { url: `${closedPort}/log`, headers: { authorization: 'Bearer log-token' } });
    for (let i = 0; i < 3; i++) expect((await check.run(params, inputOf('x'))).verdict).toBe(true);
    await vi.waitFor(() => expect(warn).toHaveBeenCalledTimes(1));
    await new Promise((r) => setTimeout(r, 100));
    expect(warn).toHaveBeenCalledTimes(1);
    const [fields, message] = warn.mock.calls[0]!;
    expect(fields).toMatchObject({ check: 'default.log', origin: closedPort, reason: expect.stringMatching(/^it could not be reached/) });
    expect(message).toContain('could not be delivered');
    expect(JSON.stringify(warn.mock.calls)).not.toContain('log-token');
  });

  test('bad parameters', () => {
    const check = createLogCheck();
    expect(refused(check, {})).toContain('url is required');
    expect(refused(check, { url: 'mailto:a@b.example' })).toContain('url must use http or https');
    expect(refused(check, { url: 'https://x.example', headers: 'token' })).toContain('headers must be an object');
    expect(refused(check, { url: 'https://x.example', timeoutMs: 5 })).toContain('unknown parameter "timeoutMs"');
  });
});
