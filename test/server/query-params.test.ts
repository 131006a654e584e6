import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { BOOTSTRAP_KEY, startTestServer } from '../helpers/gateway.js';

let gw: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  gw = await startTestServer();
});

afterAll(async () => {
  await gw.close();
});

/*
 * Unknown query parameters are a 400 on every control-plane list. Names that
 * are also properties of Object.prototype used to slip through: copying the
 * query into a plain object with `raw[name] = value` sets the prototype for
 * `__proto__` instead of adding a key the strict schema could refuse.
 */
describe('query parameters named after Object.prototype members', () => {
  const routes = ['/v1/workspaces', '/v1/api-keys', '/v1/models', '/v1/configs', '/v1/integrations', '/v1/providers'];
  const names = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty'];
  for (const route of routes) {
    test.each(names)(`${route}?%s=1 is a 400 naming the parameter`, async (name) => {
      const res = await fetch(`${gw.url}${route}?${name}=1`, { headers: { 'x-gateway-api-key': BOOTSTRAP_KEY } });
      expect(res.status).toBe(400);
      const body = await res.json();
      expect(body.error.code).toBe('invalid_request');
      expect(body.error.param).toBe(name);
      expect(body.error.message).toMatch(new RegExp(`^Unknown query parameter '${name}'; known: `));
    });
  }

  test('a known parameter still works, and a repeated one keeps its last value', async () => {
    const res = await fetch(`${gw.url}/v1/workspaces?page_size=500&page_size=5`, { headers: { 'x-gateway-api-key': BOOTSTRAP_KEY } });
    expect(res.status).toBe(200);
  });
});
