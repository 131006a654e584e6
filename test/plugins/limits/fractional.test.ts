import { afterAll, beforeAll, expect, test } from 'vitest';
import { startMockOpenAI, type MockUpstream } from '../../mocks/openai-upstream.js';
import { chat, limitsGateway, type Json, type LimitsGateway } from './helpers.js';

/**
 * A rate-limit policy's `value` is a number (spec), not only an integer. Requests are counted whole,
 * so a fractional value admits what its whole part does: the policy stores and shows that whole part.
 */
const clock = { now: Date.parse('2026-03-11T10:00:15Z') };
let mock: MockUpstream;
let gw: LimitsGateway;
let key: string;

beforeAll(async () => {
  mock = await startMockOpenAI();
  gw = await limitsGateway({ clock });
  const ws = (await gw.admin('POST', '/workspaces', { name: 'fractions', slug: 'fractions' })).id;
  key = (await gw.admin('POST', '/api-keys', { type: 'workspace-service', name: 'fractions', workspace_id: ws, scopes: ['completions.write', 'policies.*'] })).key;
});
afterAll(async () => {
  await gw?.close();
  await mock?.close();
});

const post = (body: Json) =>
  fetch(`${gw.url}/v1/policies/rate-limits`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-gateway-api-key': key }, body: JSON.stringify(body) });

test('value 2.5 rpm is accepted and admits two requests a minute; the policy shows 2', async () => {
  const res = await post({ name: 'two and a half', type: 'requests', unit: 'rpm', value: 2.5 });
  expect(res.status).toBe(200);
  const created = await res.json();
  expect(created.value).toBe(2);
  expect((await gw.admin('GET', `/policies/rate-limits/${created.id}`, undefined, key)).value).toBe(2);

  expect((await chat(gw, mock.baseURL, { key })).status).toBe(200);
  expect((await chat(gw, mock.baseURL, { key })).status).toBe(200);
  const third = await chat(gw, mock.baseURL, { key });
  expect(third.status).toBe(429);
  expect(third.body.error.message).toContain('allows 2 requests per minute');

  // An update takes a number too.
  const updated = await gw.admin('PUT', `/policies/rate-limits/${created.id}`, { value: 3.9 }, key);
  expect(updated.value).toBe(3);
});

test('below 1 is still refused, naming value', async () => {
  const res = await post({ name: 'half', type: 'requests', unit: 'rpm', value: 0.5 });
  expect(res.status).toBe(400);
  const body = await res.json();
  expect(body.error).toMatchObject({ code: 'invalid_request', param: 'value' });
  expect(body.error.message).toContain('must be at least 1');
});
