import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createGateway, GatewayError, jsonResponse, STAGES, type GatewayPlugin, type GatewayResponse } from '../../core/index.js';
import { openai } from '../../plugins/providers/openai/index.js';
import { memoryLogger } from '../helpers/gateway.js';
import { serveGateway } from '../helpers/serve.js';
import { startMockOpenAI, type MockUpstream } from '../mocks/openai-upstream.js';

let mock: MockUpstream;
beforeAll(async () => {
  mock = await startMockOpenAI();
});
afterAll(() => mock.close());

const chat = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };
const post = (url: string, body: unknown = chat, headers: Record<string, string> = {}) =>
  fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

/** Records the order in which the lifecycle stages run. */
function recorder(events: string[]): GatewayPlugin {
  return {
    name: 'recorder',
    apply(api) {
      api.hooks.request.tap('recorder', () => void events.push('request'));
      api.hooks.auth.tap('recorder', () => {
        events.push('auth');
        return { keyId: 'k', workspaceId: null, scopes: ['*'] };
      });
      api.hooks.resolveProvider.tap('recorder', (ctx) => {
        events.push(`resolve:body=${ctx.body !== null}`);
        return { provider: 'openai', custom_host: mock.baseURL };
      });
      api.hooks.beforeRequest.tap('recorder', () => void events.push('before'));
      api.hooks.resolveTarget.tap('recorder', (target, ctx) => {
        events.push(`leaf:${ctx.targetPath}`);
        return target;
      });
      api.addInterceptor('recorder', (next) => async (ctx, target) => {
        events.push(`transport:${ctx.targetPath}`);
        return next(ctx, target);
      });
      api.hooks.afterResponse.tap('recorder', (response) => {
        events.push(`after:${response.status}`);
        return response;
      });
      api.hooks.log.tap('recorder', (ctx) => void events.push(`log:${ctx.status}`));
    },
  };
}

describe('lifecycle order', () => {
  test('request → auth → body → resolve → before → leaf target → transport → after → log', async () => {
    const events: string[] = [];
    const gw = await serveGateway({ plugins: [openai(), recorder(events)] });
    const res = await post(gw.url);
    expect(res.status).toBe(200);
    await res.text();
    await gw.close();
    expect(events).toEqual(['request', 'auth', 'resolve:body=true', 'before', 'leaf:0', 'transport:0', 'after:200', 'log:200']);
  });

  test('a beforeRequest tap that returns a response answers without calling upstream; after hooks still run', async () => {
    const events: string[] = [];
    const cached: GatewayPlugin = {
      name: 'cache-like',
      apply(api) {
        api.hooks.beforeRequest.tap({ name: 'cache-like', stage: STAGES.beforeRequest.VALIDATE }, () => jsonResponse(200, { cached: true }));
      },
    };
    const gw = await serveGateway({ plugins: [openai(), recorder(events), cached] });
    const before = mock.requests.length;
    const res = await post(gw.url);
    expect(await res.json()).toEqual({ cached: true });
    await gw.close();
    expect(mock.requests.length).toBe(before);
    expect(events).toEqual(['request', 'auth', 'resolve:body=true', 'after:200', 'log:200']);
  });

  test('after hooks can replace the response (waterfall)', async () => {
    const replace: GatewayPlugin = {
      name: 'replace',
      apply(api) {
        api.hooks.afterResponse.tap('replace', (response: GatewayResponse) => {
          const out = jsonResponse(246, { replaced: response.status });
          return out;
        });
      },
    };
    const gw = await serveGateway({ plugins: [openai({ baseURL: mock.baseURL }), replace] });
    const res = await post(gw.url);
    expect(res.status).toBe(246);
    expect(await res.json()).toEqual({ replaced: 200 });
    await gw.close();
  });

  test('interceptors compose by stage: lowest stage outermost', async () => {
    const order: string[] = [];
    const wrap = (name: string, stage: number): GatewayPlugin => ({
      name,
      apply(api) {
        api.addInterceptor(name, (next) => async (ctx, t) => {
          order.push(`${name}:in`);
          const r = await next(ctx, t);
          order.push(`${name}:out`);
          return r;
        }, stage);
      },
    });
    const gw = await serveGateway({ plugins: [openai({ baseURL: mock.baseURL }), wrap('inner', 10), wrap('outer', -10)] });
    await (await post(gw.url)).text();
    await gw.close();
    expect(order).toEqual(['outer:in', 'inner:in', 'inner:out', 'outer:out']);
  });
});

describe('auth hook semantics', () => {
  test('no auth plugin: requests are served (a build without auth is open)', async () => {
    const gw = await serveGateway({ plugins: [openai({ baseURL: mock.baseURL })] });
    expect((await post(gw.url)).status).toBe(200);
    await gw.close();
  });

  test('an auth tap that does not answer means 401', async () => {
    const silent: GatewayPlugin = { name: 'silent-auth', apply: (api) => api.hooks.auth.tap('silent-auth', () => undefined) };
    const gw = await serveGateway({ plugins: [openai({ baseURL: mock.baseURL }), silent] });
    const res = await post(gw.url);
    expect(res.status).toBe(401);
    expect((await res.json()).error.code).toBe('unauthorized');
    await gw.close();
  });
});

describe('errors', () => {
  test('an unexpected error is a 500 envelope with no stack trace, and is logged', async () => {
    const boom: GatewayPlugin = {
      name: 'boom',
      apply: (api) =>
        api.hooks.beforeRequest.tap('boom', () => {
          throw new TypeError('secret internals at /srv/app.js:1:1');
        }),
    };
    const gw = await serveGateway({ plugins: [openai({ baseURL: mock.baseURL }), boom] });
    const res = await post(gw.url);
    expect(res.status).toBe(500);
    const text = await res.text();
    expect(text).not.toContain('secret internals');
    expect(text).not.toMatch(/\bat .*:\d+:\d+/);
    expect(JSON.parse(text).error).toMatchObject({ type: 'server_error', code: 'internal_error' });
    await gw.close();
    expect(gw.logs.text()).toContain('unexpected error');
  });

  test('a GatewayError thrown by a plugin keeps its status, code, param and headers', async () => {
    const limit: GatewayPlugin = {
      name: 'limit',
      apply: (api) =>
        api.hooks.beforeRequest.tap('limit', () => {
          throw new GatewayError('rate_limited', 'Slow down.', { headers: { 'retry-after': '3' } });
        }),
    };
    const gw = await serveGateway({ plugins: [openai({ baseURL: mock.baseURL }), limit] });
    const res = await post(gw.url);
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('3');
    expect((await res.json()).error).toEqual({ message: 'Slow down.', type: 'rate_limit_error', param: null, code: 'rate_limited' });
    await gw.close();
  });

  test("a route with its own errorFormat answers every error in its shape, the auth hook's 401 included, with the status kept", async () => {
    const rpc: GatewayPlugin = {
      name: 'rpc',
      apply(api) {
        api.hooks.auth.tap('rpc', (ctx) => (ctx.header('x-gateway-api-key') === 'good-key' ? { keyId: 'k', workspaceId: null, scopes: ['*'] } : undefined));
        api.routes.add({
          name: 'rpc',
          method: 'POST',
          path: '/v1/rpc',
          kind: 'handler',
          handler: () => {
            throw new GatewayError('forbidden', 'Not you.');
          },
          errorFormat: { response: (err) => jsonResponse(err.status, { jsonrpc: '2.0', id: null, error: { code: -32000, message: err.message, data: { code: err.code } } }) },
        });
      },
    };
    const gw = await serveGateway({ plugins: [openai({ baseURL: mock.baseURL }), rpc] });
    const call = (key: string) => fetch(`${gw.url}/v1/rpc`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-gateway-api-key': key }, body: '{}' });
    const denied = await call('good-key');
    expect(denied.status).toBe(403);
    expect(await denied.json()).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Not you.', data: { code: 'forbidden' } } });
    const unknown = await call('bad-key');
    expect(unknown.status).toBe(401);
    expect((await unknown.json()).error.data).toEqual({ code: 'unauthorized' });
    // Other routes keep the envelope.
    const other = await post(gw.url, { model: 'x', messages: [] }, { 'x-gateway-api-key': 'bad-key' });
    expect((await other.json()).error.code).toBe('unauthorized');
    await gw.close();
  });

  test('a plugin whose onReady fails makes requests answer 503, and ready rejects', async () => {
    const broken: GatewayPlugin = { name: 'broken', apply: (api) => api.onReady(() => Promise.reject(new Error('no database'))) };
    const gw = await serveGateway({ plugins: [openai({ baseURL: mock.baseURL }), broken] });
    await expect(gw.gateway.ready).rejects.toThrow('no database');
    const res = await post(gw.url);
    expect(res.status).toBe(503);
    await gw.close();
  });
});

describe('boot rules', () => {
  test('registries and routes are frozen after boot', () => {
    let saved: Parameters<GatewayPlugin['apply']>[0] | undefined;
    const grab: GatewayPlugin = { name: 'grab', apply: (api) => void (saved = api) };
    const gw = createGateway({ plugins: [grab], logger: memoryLogger().logger });
    expect(() => saved!.providers.add('late', { name: 'late', baseURL: 'http://x', authHeaders: () => ({}), routes: {} })).toThrow(/frozen/);
    expect(() => saved!.routes.add({ name: 'late', method: 'GET', path: '/late', kind: 'handler' })).toThrow(/frozen/);
    expect(() => saved!.addInterceptor('late', (n) => n)).toThrow(/only allowed/);
    return gw.close(0);
  });

  test('a plugin applied twice is refused', () => {
    expect(() => createGateway({ plugins: [openai(), openai()], logger: memoryLogger().logger })).toThrow(/applied twice/);
  });

  test('bad plugin options fail at construction with the field path', () => {
    expect(() => openai({ baseURL: 'not a url' })).toThrow(/Invalid options for openai: baseURL/);
  });

  test('onClose runs in reverse order on close, after in-flight requests', async () => {
    const closed: string[] = [];
    const p = (name: string): GatewayPlugin => ({ name, apply: (api) => api.onClose(() => void closed.push(name)) });
    const gw = await serveGateway({ plugins: [openai({ baseURL: mock.baseURL }), p('a'), p('b')] });
    const pending = post(gw.url, { ...chat, model: 'slow-200' });
    await new Promise((r) => setTimeout(r, 50));
    expect(gw.gateway.inFlight).toBe(1);
    const closing = gw.gateway.close(5000);
    const res = await pending;
    expect(res.status).toBe(200);
    await res.text();
    await closing;
    expect(closed).toEqual(['b', 'a']);
    await gw.close();
  });
});

describe('internal requests', () => {
  test('run through interceptors and transport, are read whole, and are logged as internal', async () => {
    let api: Parameters<GatewayPlugin['apply']>[0] | undefined;
    const seen: string[] = [];
    const grab: GatewayPlugin = {
      name: 'grab',
      apply: (a) => {
        api = a;
        a.addInterceptor('seen', (next) => (ctx, t) => {
          seen.push(`${ctx.route!.name}:${ctx.internal}`);
          return next(ctx, t);
        });
        a.hooks.beforeRequest.tap('never-for-internal', () => {
          seen.push('before');
          return undefined;
        });
      },
    };
    const { requestLog } = await import('../../plugins/request-log/index.js');
    const gw = await serveGateway({ plugins: [openai(), grab, requestLog()] });
    await expect(gw.gateway.ready).resolves.toBeUndefined();
    const result = await api!.internalRequest({
      route: 'embeddings',
      target: { provider: 'openai', api_key: 'sk-internal', custom_host: mock.baseURL },
      body: { model: 'text-embedding-3-small', input: 'hello' },
    });
    expect(result.status).toBe(200);
    expect((result.body as { data: unknown[] }).data).toHaveLength(1);
    expect(seen).toEqual(['embeddings:true']);
    await new Promise((r) => setTimeout(r, 20));
    const line = gw.logs.lines().find((l) => l.msg === 'request');
    expect(line).toMatchObject({ route: 'embeddings', internal: true, status: 200, tokens: { prompt_tokens: 8 } });
    await gw.close();
  });
});

describe('clients that leave early', () => {
  test('a client gone before its answer: the request ends (not stuck in flight), logged as 499 aborted, not as an internal error', async () => {
    const { requestLog } = await import('../../plugins/request-log/index.js');
    const gw = await serveGateway({ plugins: [openai({ baseURL: mock.baseURL }), requestLog()] });
    const controller = new AbortController();
    const pending = fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...chat, model: 'slow-300' }),
      signal: controller.signal,
    }).catch(() => 'aborted');
    await new Promise((r) => setTimeout(r, 80));
    controller.abort();
    expect(await pending).toBe('aborted');
    for (let i = 0; i < 100 && gw.gateway.inFlight > 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(gw.gateway.inFlight).toBe(0);
    for (let i = 0; i < 100 && !gw.logs.lines().some((l) => l.msg === 'request'); i++) await new Promise((r) => setTimeout(r, 10));
    const line = gw.logs.lines().find((l) => l.msg === 'request')!;
    expect(line).toMatchObject({ status: 499, aborted: true, error: { code: 'client_closed_request' } });
    expect(gw.logs.text()).not.toContain('unexpected error');
    await gw.close();
  });
});

describe('runRequest: a request run later, without its connection (a batch line)', () => {
  test('goes through before hooks, the target, after hooks and the log hook with the given auth; answers read whole; refusals are answers, not throws', async () => {
    const events: string[] = [];
    let api: Parameters<GatewayPlugin['apply']>[0] | null = null;
    const probe: GatewayPlugin = {
      name: 'probe',
      apply(a) {
        api = a;
        a.hooks.beforeRequest.tap('probe', (ctx) => void events.push(`before:${ctx.auth?.keyId}`));
        a.hooks.afterResponse.tap('probe', (response) => {
          events.push(`after:${response.status}`);
          return response;
        });
        a.hooks.log.tap('probe', (ctx) => void events.push(`log:${ctx.status}:${ctx.auth?.keyId}`));
      },
    };
    const gw = await serveGateway({ plugins: [openai(), probe] });
    await gw.gateway.ready;
    const auth = { keyId: 'batch-owner', workspaceId: null, scopes: ['*'] };
    const answer = await api!.runRequest({ path: '/v1/chat/completions', headers: {}, body: chat, auth, target: { provider: 'openai', custom_host: mock.baseURL } });
    expect(answer.status).toBe(200);
    expect(answer.attempts).toBe(1);
    expect(answer.error).toBeNull();
    expect(JSON.parse(answer.body.toString()).object).toBe('chat.completion');
    await new Promise((r) => setTimeout(r, 10));
    expect(events).toEqual(['before:batch-owner', 'after:200', 'log:200:batch-owner']);

    const refused = await api!.runRequest({ path: '/v1/nothing', headers: {}, body: {}, auth, target: null });
    expect(refused.status).toBe(400);
    expect(refused.attempts).toBe(0);
    expect(JSON.parse(refused.body.toString()).error).toMatchObject({ code: 'invalid_request', param: 'url' });

    const controller = new AbortController();
    controller.abort();
    const aborted = await api!.runRequest({ path: '/v1/chat/completions', headers: {}, body: chat, auth, target: { provider: 'openai', custom_host: mock.baseURL }, signal: controller.signal });
    expect(aborted.status).toBe(499);
    await gw.close();
  });
});
