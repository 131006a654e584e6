import { expect, test } from 'vitest';
import { Registry, RouteTable, type RouteDefinition } from '../../core/index.js';

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
