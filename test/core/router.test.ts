import { expect, test } from 'vitest';
import { Registry, RouteTable, type RequestContext, type RouteDefinition } from '../../core/index.js';

const route = (name: string, method: RouteDefinition['method'], path: string): RouteDefinition => ({ name, method, path, kind: 'handler' });

test('static, param and fallback routes', () => {
  const t = new RouteTable();
  const chat = route('chat', 'POST', '/v1/chat/completions');
  const rotate = route('rotate', 'POST', '/v1/api-keys/:id/rotate');
  const proxy = route('proxy', 'POST', '/v1/*');
  t.add(chat);
  t.add(rotate);
  t.setFallback('/v1/', ['GET', 'POST'], proxy);
  expect(t.match('POST', '/v1/chat/completions')).toEqual({ route: chat, params: null });
  expect(t.match('POST', '/v1/api-keys/k%201/rotate')).toEqual({ route: rotate, params: { id: 'k 1' } });
  expect(t.match('POST', '/v1/api-keys//rotate')).toEqual({ route: proxy, params: null });
  expect(t.match('POST', '/v1/api-keys/%E0%A4%A/rotate')).toEqual({ route: proxy, params: null });
  expect(t.match('GET', '/v1/models')).toEqual({ route: proxy, params: null });
  expect(t.match('PATCH', '/v1/models')).toBe('method_not_allowed');
  expect(t.match('GET', '/health')).toBeNull();
  expect(t.isFallback(proxy)).toBe(true);
  expect(t.has('POST', '/v1/chat/completions')).toBe(true);
  expect(() => t.add(chat)).toThrow(/twice/);
});

test('list: every route in registration order, then the fallback, flagged', () => {
  const t = new RouteTable();
  const health = route('health', 'GET', '/health');
  const rotate = route('rotate', 'POST', '/v1/api-keys/:id/rotate');
  const chat = route('chat', 'POST', '/v1/chat/completions');
  const proxy = route('proxy', 'POST', '/v1/*');
  t.add(health);
  t.add(rotate);
  t.setFallback('/v1/', ['GET', 'POST'], proxy);
  t.add(chat);
  expect(t.list()).toEqual([
    { route: health, fallback: null },
    { route: rotate, fallback: null },
    { route: chat, fallback: null },
    { route: proxy, fallback: { prefix: '/v1/', methods: ['GET', 'POST'] } },
  ]);
  expect(new RouteTable().list()).toEqual([]);
});

test('a known path with another method and no fallback is 405', () => {
  const t = new RouteTable();
  t.add(route('health', 'GET', '/health'));
  expect(t.match('POST', '/health')).toBe('method_not_allowed');
});

test('registry: duplicates refused, require names the missing item', () => {
  const r = new Registry<number>('provider');
  r.add('a', 1);
  expect(() => r.add('a', 2)).toThrow(/twice/);
  expect(() => r.require('b', 'provider')).toThrow(/Unknown provider "b". Known: a/);
  r.freeze();
  expect(() => r.add('c', 3)).toThrow(/frozen/);
});

test('a fallback that claims a request: every route it could serve defers to it then; matching, list and byName keep the routes as added', () => {
  const t = new RouteTable();
  const logs = route('logs', 'GET', '/v1/logs');
  const rotate = route('rotate', 'POST', '/v1/api-keys/:id/rotate');
  const models: RouteDefinition = { ...route('models', 'GET', '/v1/models'), deferToFallback: (ctx) => ctx.header('x-own') === '1' };
  const patch = route('patch', 'PATCH', '/v1/things');
  const health = route('health', 'GET', '/health');
  for (const r of [logs, rotate, models, patch, health]) t.add(r);
  t.setFallback('/v1/', ['GET', 'POST'], route('proxy', 'POST', '/v1/*'), (ctx) => ctx.header('x-claim') === 'yes');
  t.freeze();
  const ctx = (headers: Record<string, string>) => ({ header: (name: string) => headers[name] }) as unknown as RequestContext;
  const defers = (method: string, path: string, headers: Record<string, string>) => {
    const m = t.match(method, path);
    if (m === null || m === 'method_not_allowed') throw new Error(`no route for ${method} ${path}`);
    return t.defersToFallback(m.route, ctx(headers));
  };
  expect(defers('GET', '/v1/logs', { 'x-claim': 'yes' })).toBe(true);
  expect(defers('GET', '/v1/logs', {})).toBe(false);
  expect(defers('POST', '/v1/api-keys/k1/rotate', { 'x-claim': 'yes' })).toBe(true);
  // A route's own deferral still holds.
  expect(defers('GET', '/v1/models', { 'x-own': '1' })).toBe(true);
  expect(defers('GET', '/v1/models', { 'x-claim': 'yes' })).toBe(true);
  // A method the fallback does not serve, and a path outside its prefix, are left alone.
  expect(defers('PATCH', '/v1/things', { 'x-claim': 'yes' })).toBe(false);
  expect(defers('GET', '/health', { 'x-claim': 'yes' })).toBe(false);
  expect(t.list().map((e) => e.route).slice(0, 5)).toEqual([logs, rotate, models, patch, health]);
  expect(t.list()[0]!.route).toBe(logs);
  expect(t.byName('logs')).toBe(logs);
  // The route matched is the one registered (plugins compare ctx.route with their own routes).
  expect((t.match('GET', '/v1/logs') as { route: RouteDefinition }).route).toBe(logs);
  expect((t.match('POST', '/v1/api-keys/k1/rotate') as { route: RouteDefinition }).route).toBe(rotate);
});

test('route names are unique: a second route under a name is a boot error naming both', () => {
  const t = new RouteTable();
  t.add(route('chat.completions', 'POST', '/v1/chat/completions'));
  expect(() => t.add(route('chat.completions', 'POST', '/v1/prompts/:id/completions'))).toThrow(
    'route name "chat.completions" is registered twice: POST /v1/chat/completions and POST /v1/prompts/:id/completions',
  );
  t.add({ ...route('prompts.completions', 'POST', '/v1/prompts/:id/completions'), api: 'chat.completions' });
  expect(t.byName('prompts.completions')?.api).toBe('chat.completions');
});
