import { afterAll, beforeAll, expect, test } from 'vitest';
import { DEFAULT_CONFIG } from '../../../server/default-config.js';
import { GATEWAY_KEY, startTestServer } from '../../helpers/gateway.js';
import { startMockOpenAI, type MockUpstream } from '../../mocks/openai-upstream.js';
import { providerRegistry } from '../../../plugins/provider-registry/index.js';

let mock: MockUpstream;
let gw: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  mock = await startMockOpenAI();
  gw = await startTestServer({
    config: {
      ...DEFAULT_CONFIG,
      providers: {
        'prod-openai': { provider: 'openai', api_key: 'sk-slug-secret', custom_host: mock.baseURL },
        'vk-legacy': { provider: 'openai', api_key: 'sk-vk-secret', custom_host: mock.baseURL },
      },
    },
  });
});
afterAll(async () => {
  await gw.close();
  await mock.close();
});

const chat = (headers: Record<string, string>) =>
  fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': GATEWAY_KEY, ...headers },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
  });

test('x-gateway-provider: @slug resolves to the registered provider and credentials (a dummy Authorization does not win)', async () => {
  const res = await chat({ 'x-gateway-provider': '@prod-openai', authorization: 'Bearer dummy-from-sdk' });
  expect(res.status).toBe(200);
  expect(res.headers.get('x-gateway-provider')).toBe('openai');
  expect(mock.requests.at(-1)!.headers.authorization).toBe('Bearer sk-slug-secret');
});

test('x-gateway-virtual-key and config virtual_key resolve too', async () => {
  expect((await chat({ 'x-gateway-virtual-key': 'vk-legacy' })).status).toBe(200);
  expect(mock.requests.at(-1)!.headers.authorization).toBe('Bearer sk-vk-secret');
  expect((await chat({ 'x-gateway-config': JSON.stringify({ virtual_key: 'vk-legacy' }) })).status).toBe(200);
  expect(mock.requests.at(-1)!.headers.authorization).toBe('Bearer sk-vk-secret');
});

test('a config provider slug resolves, and the config\'s own settings win', async () => {
  const res = await chat({ 'x-gateway-config': JSON.stringify({ provider: '@prod-openai', override_params: { model: 'error-418' } }) });
  expect(res.status).toBe(418);
  expect(mock.requests.at(-1)!.headers.authorization).toBe('Bearer sk-slug-secret');
});

test('an unknown slug or virtual key is a 404 naming it, and no secret leaks', async () => {
  const res = await chat({ 'x-gateway-provider': '@nope' });
  expect(res.status).toBe(404);
  const err = (await res.json()).error;
  expect(err.code).toBe('not_found');
  expect(err.param).toBe('provider');
  expect(err.message).toContain('@nope');
  const vk = await chat({ 'x-gateway-virtual-key': 'vk-missing' });
  expect(vk.status).toBe(404);
  expect((await vk.json()).error.param).toBe('virtual_key');
  expect(gw.logs.text()).not.toContain('sk-slug-secret');
});

test('a slug naming a provider that is not loaded fails at boot', async () => {
  const { serveGateway } = await import('../../helpers/serve.js');
  const gwBad = await serveGateway({ plugins: [providerRegistry({ providers: { x: { provider: 'nope' } } })] });
  await expect(gwBad.gateway.ready).rejects.toThrow(/not loaded/);
  await gwBad.close();
  expect(() => providerRegistry({ providers: { x: { provider: '@y' } } })).toThrow(/not another slug/);
});

test("a request cannot send a slug's credentials elsewhere: its own custom_host or key next to a slug is a 400", async () => {
  const before = mock.requests.length;
  const viaHeader = await chat({ 'x-gateway-provider': '@prod-openai', 'x-gateway-custom-host': 'http://127.0.0.1:9/v1' });
  expect(viaHeader.status).toBe(400);
  expect((await viaHeader.json()).error).toMatchObject({ code: 'invalid_request', param: 'x-gateway-custom-host' });
  const viaConfig = await chat({ 'x-gateway-config': JSON.stringify({ provider: '@prod-openai', api_key: 'sk-mine' }) });
  expect(viaConfig.status).toBe(400);
  expect((await viaConfig.json()).error.param).toBe('api_key');
  // The slug's own host, restated, is fine.
  expect((await chat({ 'x-gateway-config': JSON.stringify({ provider: '@prod-openai', custom_host: mock.baseURL }) })).status).toBe(200);
  expect(mock.requests.length).toBe(before + 1);
});

test('the fields a request may not set next to a slug are the declared credentials and placements, whoever declares them', async () => {
  const { createGateway, fieldSchema } = await import('../../../core/index.js');
  const { memoryLogger } = await import('../../helpers/gateway.js');
  let guarded: string[] = [];
  const probe = {
    name: 'probe',
    targetFields: { acme_token: { schema: fieldSchema.string(), credential: true }, acme_region: { schema: fieldSchema.string(), placement: true }, acme_tone: { schema: fieldSchema.string() } },
    apply(api: import('../../../core/index.js').PluginAPI) {
      guarded = api.targetFields.names((f) => f.credential === true || f.placement === true);
    },
  };
  createGateway({ plugins: [providerRegistry(), probe], logger: memoryLogger().logger });
  expect(guarded).toEqual(['api_key', 'custom_host', 'virtual_key', 'acme_token', 'acme_region']);
  // Through the server: a bundled plugin's credential (azure_ad_token, declared by azure-openai) next to a slug is refused.
  const res = await chat({ 'x-gateway-config': JSON.stringify({ provider: '@prod-openai', azure_ad_token: 'attacker-token' }) });
  expect(res.status).toBe(400);
  expect((await res.json()).error).toMatchObject({ param: 'azure_ad_token' });
});
