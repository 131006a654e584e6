import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { GatewayError, passThrough, type GatewayPlugin, type Provider, type Target } from '../../core/index.js';
import { proxy } from '../../plugins/proxy/index.js';
import { retry } from '../../plugins/retry/index.js';
import { fallbackStrategy } from '../../plugins/strategies/fallback/index.js';
import { serveGateway } from '../helpers/serve.js';
import { startMockOpenAI, type MockUpstream } from '../mocks/openai-upstream.js';

/*
 * The provider contract as the transport runs it: a base URL built from the
 * target, a body that may resolve later, headers every call carries, and
 * `prepare`, called once per attempt for its own provider only.
 */

let mock: MockUpstream;
beforeAll(async () => {
  mock = await startMockOpenAI();
});
afterAll(() => mock.close());

const chat = (model = 'gpt-4o-mini') => ({ model, messages: [{ role: 'user', content: 'hi' }] });

/** A provider `signed` whose calls count `prepare` and whose host comes from the target's `zone`. */
function signedProvider(calls: string[]): Provider {
  return {
    name: 'signed',
    baseURL: (target) => {
      if (target.zone !== 'mock') throw new GatewayError('invalid_request', 'zone must be mock', { param: 'zone' });
      return mock.baseURL;
    },
    authHeaders: () => ({ authorization: 'Bearer unsigned' }),
    async prepare(request, target, ctx) {
      calls.push(`${ctx.targetPath}:${request.method} ${request.url}`);
      await new Promise((r) => setTimeout(r, 1));
      request.headers.authorization = `Bearer signed-${calls.length}`;
      request.headers['x-signed-body'] = String(Buffer.byteLength(request.body ?? ''));
    },
    routes: {
      'chat.completions': {
        path: '/chat/completions',
        // A body that needs I/O first: resolved before prepare sees the request.
        body: async (ctx) => JSON.stringify({ ...ctx.body, user: 'resolved-later' }),
        response: (upstream) => passThrough(upstream),
      },
    },
  };
}

/** Registers providers and a fixed target tree for every request. */
function fixture(providers: Provider[], target: Target, extra: (api: Parameters<GatewayPlugin['apply']>[0]) => void = () => undefined): GatewayPlugin {
  return {
    name: 'fixture',
    apply(api) {
      for (const p of providers) api.providers.add(p.name, p);
      if (!api.routes.has('POST', '/v1/chat/completions')) api.routes.add({ name: 'chat.completions', method: 'POST', path: '/v1/chat/completions', kind: 'provider', body: 'json' });
      api.hooks.resolveProvider.tap('fixture', () => target);
      extra(api);
    },
  };
}

const plain: Provider = { name: 'plain', baseURL: 'http://127.0.0.1:1/never', authHeaders: () => ({}), routes: { 'chat.completions': { path: '/chat/completions' } } };

describe('prepare', () => {
  test('runs once per attempt with the request as built (URL from the target, resolved body), and may change it', async () => {
    const calls: string[] = [];
    const gw = await serveGateway({ plugins: [retry({ baseDelayMs: 0, maxDelayMs: 0 }), fixture([signedProvider(calls)], { provider: 'signed', zone: 'mock', retry: { attempts: 2 } })] });
    mock.script.push({ status: 503 }, { status: 502 });
    const before = mock.requests.length;
    const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(chat('queued')) });
    expect(res.status).toBe(200);
    await res.text();
    await gw.close();
    const seen = mock.requests.slice(before);
    expect(calls).toEqual(Array(3).fill(`0:POST ${mock.baseURL}/chat/completions`));
    expect(seen.map((r) => r.headers.authorization)).toEqual(['Bearer signed-1', 'Bearer signed-2', 'Bearer signed-3']);
    expect(seen.every((r) => JSON.parse(r.body).user === 'resolved-later' && r.headers['x-signed-body'] === String(Buffer.byteLength(r.body)))).toBe(true);
  });

  test("is called for its own provider's calls only, and a base URL function's error is the client's 400", async () => {
    const calls: string[] = [];
    const gw = await serveGateway({
      plugins: [
        fallbackStrategy(),
        fixture([signedProvider(calls), plain], { strategy: { mode: 'fallback' }, targets: [{ provider: 'plain' }, { provider: 'signed', zone: 'mock' }] }),
      ],
    });
    const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(chat()) });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gateway-last-used-option-index')).toBe('1');
    expect(calls).toEqual([`1:POST ${mock.baseURL}/chat/completions`]);
    await res.text();
    await gw.close();

    const bad = await serveGateway({ plugins: [fixture([signedProvider(calls)], { provider: 'signed', zone: 'elsewhere' })] });
    const refused = await fetch(`${bad.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(chat()) });
    expect(refused.status).toBe(400);
    expect((await refused.json()).error).toMatchObject({ param: 'zone', message: 'zone must be mock' });
    await bad.close();
  });

  test('runs on the generic proxy too, after the client headers are copied', async () => {
    const calls: string[] = [];
    const gw = await serveGateway({ plugins: [proxy(), fixture([signedProvider(calls)], { provider: 'signed', zone: 'mock' })] });
    const res = await fetch(`${gw.url}/v1/files?limit=2`, { headers: { 'x-client': 'c' } });
    const echoed = await res.json();
    await gw.close();
    expect(calls).toEqual([`0:GET ${mock.baseURL}/files?limit=2`]);
    expect(echoed.headers.authorization).toBe('Bearer signed-1');
    expect(echoed.headers['x-client']).toBe('c');
  });
});

test('ctx.upstreamHeaders reach every upstream call of the request, shaped and proxied', async () => {
  const headers: GatewayPlugin = {
    name: 'headers',
    apply(api) {
      api.hooks.request.tap('headers', (ctx) => void (ctx.upstreamHeaders = { 'x-request-wide': 'yes' }));
    },
  };
  const gw = await serveGateway({ plugins: [proxy(), fixture([signedProvider([])], { provider: 'signed', zone: 'mock' }), headers] });
  const before = mock.requests.length;
  await (await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(chat()) })).text();
  const echoed = await (await fetch(`${gw.url}/v1/models`)).json();
  await gw.close();
  expect(mock.requests[before]!.headers['x-request-wide']).toBe('yes');
  expect(echoed.headers['x-request-wide']).toBe('yes');
});

test('resolveTarget runs per leaf before the interceptors; the context keeps the leaf as named and as resolved', async () => {
  const seen: Array<[string | undefined, string | undefined]> = [];
  const resolver: GatewayPlugin = {
    name: 'resolver',
    apply(api) {
      api.hooks.resolveTarget.tap('resolver', (target) => (target.provider === '@alias' ? { ...target, provider: 'signed', zone: 'mock' } : target));
      api.addInterceptor('look', (next) => async (ctx, target) => {
        seen.push([target.provider, ctx.leafTarget?.provider as string | undefined]);
        return next(ctx, target);
      });
      api.hooks.log.tap('resolver', (ctx) => void seen.push([ctx.resolvedTarget?.provider, ctx.leafTarget?.provider as string | undefined]));
    },
  };
  const gw = await serveGateway({ plugins: [fixture([signedProvider([])], { provider: '@alias' }), resolver] });
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(chat()) });
  expect(res.status).toBe(200);
  await res.text();
  await gw.close();
  expect(seen).toEqual([
    ['signed', '@alias'],
    ['signed', '@alias'],
  ]);
});

test('api.resolveLeaf resolves a leaf before the strategy calls it, once: the call uses the same answer, a refusal included', async () => {
  let resolutions = 0;
  const early: Array<string | undefined> = [];
  const plugin: GatewayPlugin = {
    name: 'early',
    apply(api) {
      api.hooks.resolveTarget.tap('resolver', (target) => {
        resolutions++;
        if (target.provider === '@nowhere') throw new GatewayError('not_found', 'Unknown provider slug "@nowhere".', { param: 'provider' });
        return target.provider === '@alias' ? { ...target, provider: 'signed', zone: 'mock' } : target;
      });
      // A plugin keying state by what the target is: it resolves the leaf at beforeRequest, twice even.
      api.hooks.beforeRequest.tapPromise('early', async (ctx) => {
        for (let i = 0; i < 2; i++) early.push(await api.resolveLeaf(ctx, ctx.target!).then((t) => t.provider, (err: GatewayError) => err.code));
        return undefined;
      });
    },
  };
  const send = (target: Target) => serveGateway({ plugins: [fixture([signedProvider([])], target), plugin] });
  const gw = await send({ provider: '@alias' });
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(chat()) });
  expect(res.status).toBe(200);
  await res.text();
  await gw.close();
  expect(early).toEqual(['signed', 'signed']);
  expect(resolutions).toBe(1);

  resolutions = 0;
  early.length = 0;
  const refused = await send({ provider: '@nowhere' });
  const answer = await fetch(`${refused.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(chat()) });
  expect(answer.status).toBe(404);
  expect(((await answer.json()) as { error: { code: string } }).error.code).toBe('not_found');
  await refused.close();
  expect(early).toEqual(['not_found', 'not_found']);
  expect(resolutions).toBe(1);
});

test('a resolveTarget tap that hands on something else than a target is a 500 naming the hook', async () => {
  const broken: GatewayPlugin = {
    name: 'broken-resolver',
    apply(api) {
      // undefined would keep the target (a waterfall passes it on); null or a string is a plain-JS plugin's bug.
      api.hooks.resolveTarget.tap('broken-resolver', () => null as unknown as Target);
    },
  };
  const gw = await serveGateway({ plugins: [fixture([signedProvider([])], { provider: 'signed', zone: 'mock' }), broken] });
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(chat()) });
  expect(res.status).toBe(500);
  await gw.close();
  expect(gw.logs.text()).toContain('a resolveTarget tap returned no target');
});

test('forward_headers never forwards a framing or hop-by-hop header, even from a target no schema checked', async () => {
  const target: Target = { provider: 'signed', zone: 'mock', override_params: { temperature: 0 }, forward_headers: ['content-length', 'Host', 'expect', 'proxy-authorization', 'x-tenant'] };
  const gw = await serveGateway({ plugins: [fixture([signedProvider([])], target)] });
  const before = mock.requests.length;
  // The client's content-length is that of its own body; the body sent upstream is rewritten by override_params.
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-tenant': 't1', 'proxy-authorization': 'Basic eA==' },
    body: JSON.stringify(chat()),
  });
  expect(res.status).toBe(200);
  await res.text();
  await gw.close();
  const seen = mock.requests[before]!;
  expect(seen.headers['x-tenant']).toBe('t1');
  expect(seen.headers['proxy-authorization']).toBeUndefined();
  expect(seen.headers['content-length']).toBe(String(Buffer.byteLength(seen.body)));
  expect(seen.headers.host).toBe(new URL(mock.url).host);
});
