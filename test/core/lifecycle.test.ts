import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createGateway, createHooks, jsonResponse, RequestContext, stateKey, STAGES, type GatewayPlugin, type RouteDefinition } from '../../core/index.js';
import { entryStages, LIFECYCLE, runStages, type Stage, type StageHost } from '../../core/lifecycle/table.js';
import { openai } from '../../plugins/providers/openai/index.js';
import { memoryLogger } from '../helpers/gateway.js';
import { serveGateway } from '../helpers/serve.js';
import { startMockOpenAI, type MockUpstream } from '../mocks/openai-upstream.js';

let mock: MockUpstream;
beforeAll(async () => {
  mock = await startMockOpenAI();
});
afterAll(() => mock.close());

const names = (stages: readonly Stage[]) => stages.map((s) => s.name);
const chat = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };

describe('the lifecycle table', () => {
  test('is listed once; each entry point runs it less the stages it skips, in table order', () => {
    const hooks = createHooks();
    // Unused hooks cost nothing: with no request or log taps, those stages are left out at boot.
    hooks.request.tap('t', () => undefined);
    hooks.log.tap('t', () => undefined);
    expect(names(LIFECYCLE)).toEqual(['request', 'route', 'auth', 'scope', 'body', 'handler', 'resolveProvider', 'beforeRequest', 'strategy', 'afterResponse', 'log']);
    const process = entryStages('process', hooks);
    expect(names(process.answer)).toEqual(['request', 'route', 'auth', 'scope', 'body', 'handler', 'resolveProvider', 'beforeRequest', 'strategy', 'afterResponse']);
    expect(names(process.delivered)).toEqual(['log']);
    expect(names(entryStages('internal', hooks).answer)).toEqual(['strategy']);
    expect(names(entryStages('detached', hooks).answer)).toEqual(['request', 'route', 'resolveProvider', 'beforeRequest', 'strategy', 'afterResponse']);
    const bare = entryStages('process', createHooks());
    expect(names(bare.answer)).not.toContain('request');
    expect(bare.delivered).toEqual([]);
  });

  test('a stage added to the table runs for all three entry points, in its place', async () => {
    const ran: string[] = [];
    const extra: Stage = { name: 'audit', skippedBy: [], run: (_h, _ctx, entry) => void ran.push(`audit:${entry}`) };
    const table = [...LIFECYCLE.slice(0, 8), extra, ...LIFECYCLE.slice(8)];
    for (const entry of ['process', 'internal', 'detached'] as const) {
      const stages = entryStages(entry, createHooks(), table).answer;
      expect(names(stages)).toContain('audit');
      expect(names(stages).indexOf('audit')).toBe(names(stages).indexOf('strategy') - 1);
      // Run just the new stage and a strategy stand-in, through the same runner the pipeline uses.
      const strategy: Stage = { name: 'strategy', skippedBy: [], run: () => jsonResponse(200, { ok: true }) };
      const ctx = new RequestContext('POST', '/x', {}, null, memoryLogger().logger);
      const answer = await runStages([extra, strategy], {} as StageHost, ctx, entry, null);
      expect(answer?.status).toBe(200);
    }
    expect(ran).toEqual(['audit:process', 'audit:internal', 'audit:detached']);
  });

  test('an answer from an ending stage (a handler) ends the run; a synchronous stage is not awaited', async () => {
    const ran: string[] = [];
    const stage = (name: string, answer?: number, ends?: boolean): Stage => ({ name, skippedBy: [], ...(ends ? { ends } : {}), run: () => (ran.push(name), answer === undefined ? undefined : jsonResponse(answer, {})) });
    const ctx = new RequestContext('GET', '/x', {}, null, memoryLogger().logger);
    const answer = await runStages([stage('a'), stage('handler', 201, true), stage('after')], {} as StageHost, ctx, 'process', null);
    expect(answer?.status).toBe(201);
    expect(ran).toEqual(['a', 'handler']);
  });

  test('every entry point runs its stages in order, on a real gateway', async () => {
    const events: string[] = [];
    let api: Parameters<GatewayPlugin['apply']>[0] | null = null;
    const recorder: GatewayPlugin = {
      name: 'recorder',
      apply(a) {
        api = a;
        a.hooks.request.tap('recorder', () => void events.push('request'));
        a.hooks.auth.tap('recorder', () => (events.push('auth'), { keyId: 'k', workspaceId: null, scopes: ['*'] }));
        a.hooks.resolveProvider.tap('recorder', () => (events.push('resolveProvider'), { provider: 'openai', custom_host: mock.baseURL }));
        a.hooks.beforeRequest.tap('recorder', () => void events.push('beforeRequest'));
        a.hooks.resolveTarget.tap('recorder', (t) => (events.push('resolveTarget'), t));
        a.hooks.afterResponse.tap('recorder', (r) => (events.push('afterResponse'), r));
        a.hooks.log.tap('recorder', (ctx) => void events.push(ctx.internal ? 'log:internal' : 'log'));
      },
    };
    const gw = await serveGateway({ plugins: [openai(), recorder] });
    try {
      const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(chat) });
      await res.text();
      await new Promise((r) => setTimeout(r, 20));
      expect(events.splice(0)).toEqual(['request', 'auth', 'resolveProvider', 'beforeRequest', 'resolveTarget', 'afterResponse', 'log']);

      await api!.internalRequest({ route: 'chat.completions', target: { provider: 'openai', custom_host: mock.baseURL }, body: chat });
      await new Promise((r) => setTimeout(r, 20));
      expect(events.splice(0)).toEqual(['resolveTarget', 'log:internal']);

      const detached = await api!.runRequest({ path: '/v1/chat/completions', headers: {}, body: chat, auth: null, target: null });
      expect(detached.status).toBe(200);
      await new Promise((r) => setTimeout(r, 20));
      expect(events.splice(0)).toEqual(['request', 'resolveProvider', 'beforeRequest', 'resolveTarget', 'afterResponse', 'log']);
    } finally {
      await gw.close();
    }
  });
});

describe('route-filtered taps', () => {
  const route = (name: string, path: string, extra: Partial<RouteDefinition> = {}): RouteDefinition => ({
    name,
    method: 'POST',
    path,
    kind: 'handler',
    body: 'none',
    auth: true,
    handler: () => jsonResponse(200, { route: name }),
    ...extra,
  });

  test('a tap for route A never runs on route B; the filter is evaluated once per route at boot, never per request', async () => {
    const seen: string[] = [];
    let checks = 0;
    const plugin: GatewayPlugin = {
      name: 'filtered',
      apply(api) {
        api.routes.add(route('a', '/a'));
        api.routes.add(route('b', '/b'));
        api.routes.add(route('speaks-a', '/c', { api: 'a' }));
        api.hooks.auth.tap({ name: 'by-name', routes: ['a'] }, (ctx) => (seen.push(`name:${ctx.route!.name}`), { keyId: 'k', workspaceId: null, scopes: ['*'] }));
        api.hooks.log.tap({ name: 'by-predicate', routes: (r) => (checks++, r.name === 'b') }, (ctx) => void seen.push(`log:${ctx.route!.name}`));
      },
    };
    const gw = await serveGateway({ plugins: [plugin] });
    try {
      const atBoot = checks;
      expect(atBoot).toBeGreaterThan(0);
      for (const path of ['/a', '/b', '/c', '/b']) await (await fetch(`${gw.url}${path}`, { method: 'POST' })).text();
      await new Promise((r) => setTimeout(r, 20));
      // A name also serves the routes that speak that API (`api`); route b has no authenticator, so it is open.
      expect(seen.sort()).toEqual(['log:b', 'log:b', 'name:a', 'name:speaks-a']);
      expect(checks).toBe(atBoot);
    } finally {
      await gw.close();
    }
  });

  test("the 401 is the core's last auth tap, on the routes an authenticator serves only; the public hooks hold the plugins' taps alone", async () => {
    let hooks: ReturnType<typeof createHooks> | null = null;
    const plugin: GatewayPlugin = {
      name: 'guarded',
      apply(api) {
        hooks = api.hooks;
        api.routes.add(route('locked', '/locked'));
        api.routes.add(route('open', '/open'));
        api.hooks.auth.tap({ name: 'never-accepts', stage: STAGES.auth.MEMORY_KEYS, routes: ['locked'] }, () => undefined);
      },
    };
    const gw = await serveGateway({ plugins: [plugin] });
    try {
      expect((await fetch(`${gw.url}/locked`, { method: 'POST' })).status).toBe(401);
      expect((await fetch(`${gw.url}/open`, { method: 'POST' })).status).toBe(200);
      expect(hooks!.auth.taps.map((t) => t.name)).toEqual(['never-accepts']);
      expect(hooks!.resolveProvider.isUsed()).toBe(false);
    } finally {
      await gw.close();
    }
  });

  test('a plugin that calls a hook itself gets the filtered taps only where they apply', async () => {
    const plugin: GatewayPlugin = {
      name: 'direct',
      apply(api) {
        api.routes.add(route('a', '/a'));
        api.routes.add(route('b', '/b'));
        api.hooks.resolveProvider.tap({ name: 'only-a', routes: ['a'] }, () => ({ provider: 'x' }));
        api.hooks.afterResponse.tap({ name: 'only-a', routes: ['a'] }, () => jsonResponse(299, {}));
      },
    };
    const logger = memoryLogger().logger;
    const gw = createGateway({ plugins: [plugin], logger });
    await gw.ready;
    const onA = new RequestContext('POST', '/a', {}, null, logger);
    const onB = new RequestContext('POST', '/b', {}, null, logger);
    onA.route = { name: 'a', method: 'POST', path: '/a', kind: 'handler' };
    onB.route = { name: 'b', method: 'POST', path: '/b', kind: 'handler' };
    expect(await gw.hooks.resolveProvider.promise(onA)).toEqual({ provider: 'x' });
    expect(await gw.hooks.resolveProvider.promise(onB)).toBeUndefined();
    const passed = jsonResponse(200, {});
    expect((await gw.hooks.afterResponse.promise(passed, onA)).status).toBe(299);
    expect(await gw.hooks.afterResponse.promise(passed, onB)).toBe(passed);
    await gw.close();
  });

  test('the request hook takes no routes filter: it runs before a route is matched', () => {
    const plugin: GatewayPlugin = { name: 'early', apply: (api) => api.hooks.request.tap({ name: 'early', routes: ['a'] } as never, () => undefined) };
    expect(() => createGateway({ plugins: [plugin], logger: memoryLogger().logger })).toThrow('the request hook runs before a route is matched and takes no routes filter');
  });
});

describe('typed request state', () => {
  test('a key carries its type; one name is one key; keys of different names never meet', () => {
    const ctx = new RequestContext('GET', '/', {}, null, memoryLogger().logger);
    const count = stateKey<number>('test:count');
    const label = stateKey<string>('test:label');
    expect(ctx.get(count)).toBeUndefined();
    ctx.set(count, 2);
    ctx.set(label, 'two');
    const n: number | undefined = ctx.get(count);
    expect(n).toBe(2);
    expect(ctx.get(stateKey<number>('test:count'))).toBe(2);
    expect(ctx.get(label)).toBe('two');
    expect(ctx.has(count)).toBe(true);
    expect(ctx.has(stateKey<number>('test:other'))).toBe(false);
  });
});

test('a second route under a name stops the boot, naming both', () => {
  const twice: GatewayPlugin = {
    name: 'twice',
    apply(api) {
      api.routes.add({ name: 'dup', method: 'GET', path: '/one', kind: 'handler', handler: () => null });
      api.routes.add({ name: 'dup', method: 'POST', path: '/two', kind: 'handler', handler: () => null });
    },
  };
  expect(() => createGateway({ plugins: [twice], logger: memoryLogger().logger })).toThrow('route name "dup" is registered twice: GET /one and POST /two');
});
