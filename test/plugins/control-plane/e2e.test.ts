import OpenAI, { APIError } from 'openai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { BOOTSTRAP_KEY, startTestServer } from '../../helpers/gateway.js';
import { startMockOpenAI, type MockUpstream, type SeenRequest } from '../../mocks/openai-upstream.js';

/**
 * The control plane end to end: the real server with the default config, a
 * mock OpenAI upstream, the admin API driven with the bootstrap key, and
 * chats made with the official `openai` SDK using a workspace key. Tests run
 * in order and share the resources made in beforeAll; the ones that mutate
 * shared state (integration models) come after the ones that rely on it.
 */

const INTEGRATION_KEY = 'sk-team-integration-key-0123456789abcd';
const OTHER_KEY = 'sk-other-integration-key-9876543210zyxw';
const SDK_DUMMY_KEY = 'unused';

type Server = Awaited<ReturnType<typeof startTestServer>>;

let gw: Server;
let main: MockUpstream;
let modelHost: MockUpstream;
let other: MockUpstream;

let ws1: Record<string, any>;
let ws2: Record<string, any>;
let integration: Record<string, any>;
let savedConfig: Record<string, any>;
let key1: string;
let key2: string;

/** A call to the admin API; the JSON body and status. */
async function api(method: string, path: string, body?: unknown, key = BOOTSTRAP_KEY): Promise<{ status: number; body: any }> {
  const res = await fetch(`${gw.url}/v1${path}`, {
    method,
    headers: { 'x-gateway-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: res.status, body: json };
}

/** An admin call that must succeed; its JSON body. */
async function ok(method: string, path: string, body?: unknown, key = BOOTSTRAP_KEY): Promise<any> {
  const res = await api(method, path, body, key);
  expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).toBe(200);
  return res.body;
}

function sdk(headers: Record<string, string>): OpenAI {
  return new OpenAI({ apiKey: SDK_DUMMY_KEY, baseURL: `${gw.url}/v1`, maxRetries: 0, defaultHeaders: headers });
}

const messages = [{ role: 'user' as const, content: 'hi' }];

async function streamText(client: OpenAI, model: string): Promise<string> {
  const stream = await client.chat.completions.create({ model, messages, stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
  return text;
}

/** The requests a mock saw since `from` (an index into its requests). */
function since(mock: MockUpstream, from: number): SeenRequest[] {
  return mock.requests.slice(from);
}

/** The upstream request carries the integration's key and nothing the client sent as credentials. */
function expectIntegrationCredentials(seen: SeenRequest, key = INTEGRATION_KEY): void {
  expect(seen.path).toBe('/v1/chat/completions');
  expect(seen.headers.authorization).toBe(`Bearer ${key}`);
  const headerText = JSON.stringify(seen.headers);
  expect(headerText).not.toContain(SDK_DUMMY_KEY);
  expect(headerText).not.toContain(key1);
  expect(Object.keys(seen.headers).filter((h) => h.startsWith('x-gateway-'))).toEqual([]);
}

beforeAll(async () => {
  [main, modelHost, other] = await Promise.all([startMockOpenAI(), startMockOpenAI(), startMockOpenAI()]);
  gw = await startTestServer();

  ws1 = await ok('POST', '/workspaces', { name: 'Team A', slug: 'team-a' });
  ws2 = await ok('POST', '/workspaces', { name: 'Team B', slug: 'team-b' });
  integration = await ok('POST', '/integrations', {
    name: 'Team OpenAI',
    ai_provider_id: 'openai',
    key: INTEGRATION_KEY,
    configurations: { custom_host: main.baseURL },
    workspace_id: ws1.id,
    create_default_provider: true,
    default_provider_slug: 'team-openai',
  });
  savedConfig = await ok('POST', '/configs', { name: 'Team config', config: { provider: '@team-openai' }, workspace_id: ws1.id });
  const created1 = await ok('POST', '/api-keys', { type: 'workspace-service', name: 'Team A service', workspace_id: ws1.id });
  const created2 = await ok('POST', '/api-keys', { type: 'workspace-service', name: 'Team B service', workspace_id: ws2.id });
  key1 = created1.key;
  key2 = created2.key;
});

afterAll(async () => {
  await gw?.close();
  await Promise.all([main?.close(), modelHost?.close(), other?.close()]);
});

describe('control plane setup with the bootstrap key', () => {
  test('the created resources have the expected shape, the integration key masked', () => {
    expect(ws1).toMatchObject({ object: 'workspace', slug: 'team-a', status: 'active' });
    expect(integration).toMatchObject({
      object: 'integration',
      ai_provider_id: 'openai',
      workspace_id: ws1.id,
      masked_key: `****${INTEGRATION_KEY.slice(-4)}`,
      configurations: { custom_host: main.baseURL },
      default_provider: { object: 'provider', slug: 'team-openai', workspace_id: ws1.id, integration_id: integration.id, status: 'active' },
    });
    expect(JSON.stringify(integration)).not.toContain(INTEGRATION_KEY);
    expect(savedConfig).toMatchObject({ object: 'config', workspace_id: ws1.id, version: 1, config: { provider: '@team-openai' } });
    expect(savedConfig.id).toMatch(/^pc-/);
    expect(key1).toMatch(/^gwk-/);
    expect(key2).toMatch(/^gwk-/);
    expect(key1).not.toBe(key2);
  });
});

describe('chats with a workspace key and the openai SDK', () => {
  test('x-gateway-provider: @team-openai, non-stream: the integration key and custom host are used', async () => {
    const before = main.requests.length;
    const client = sdk({ 'x-gateway-api-key': key1, 'x-gateway-provider': '@team-openai' });
    const answer = await client.chat.completions.create({ model: 'gpt-4o-mini', messages });
    expect(answer.choices[0]!.message.content).toBe('Hello from the mock!');
    expect(answer.model).toBe('gpt-4o-mini');
    const seen = since(main, before);
    expect(seen).toHaveLength(1);
    expectIntegrationCredentials(seen[0]!);
    expect(JSON.parse(seen[0]!.body)).toEqual({ model: 'gpt-4o-mini', messages });
  });

  test('x-gateway-provider: @team-openai, stream', async () => {
    const before = main.requests.length;
    const client = sdk({ 'x-gateway-api-key': key1, 'x-gateway-provider': '@team-openai' });
    expect(await streamText(client, 'gpt-4o-mini')).toBe('Hello!');
    const seen = since(main, before);
    expect(seen).toHaveLength(1);
    expectIntegrationCredentials(seen[0]!);
    expect(JSON.parse(seen[0]!.body).stream).toBe(true);
  });

  test('x-gateway-config: <saved config id>, non-stream and stream', async () => {
    const before = main.requests.length;
    const client = sdk({ 'x-gateway-api-key': key1, 'x-gateway-config': savedConfig.id });
    const answer = await client.chat.completions.create({ model: 'gpt-4o-mini', messages });
    expect(answer.choices[0]!.message.content).toBe('Hello from the mock!');
    expect(await streamText(client, 'gpt-4o-mini')).toBe('Hello!');
    const seen = since(main, before);
    expect(seen).toHaveLength(2);
    for (const s of seen) expectIntegrationCredentials(s);
    expect(JSON.parse(seen[1]!.body).stream).toBe(true);
  });

  test('x-gateway-config by the config slug works too', async () => {
    const before = main.requests.length;
    const client = sdk({ 'x-gateway-api-key': key1, 'x-gateway-config': savedConfig.slug });
    const answer = await client.chat.completions.create({ model: 'gpt-4o-mini', messages });
    expect(answer.choices[0]!.message.content).toBe('Hello from the mock!');
    expect(since(main, before)).toHaveLength(1);
  });
});

describe('workspace isolation', () => {
  test("another workspace's key gets 404 for the slug and for the saved config, and nothing goes upstream", async () => {
    const before = main.requests.length;
    const bySlug = await sdk({ 'x-gateway-api-key': key2, 'x-gateway-provider': '@team-openai' })
      .chat.completions.create({ model: 'gpt-4o-mini', messages })
      .catch((e: unknown) => e);
    expect(bySlug).toBeInstanceOf(OpenAI.NotFoundError);
    expect((bySlug as APIError).status).toBe(404);

    const byConfig = await sdk({ 'x-gateway-api-key': key2, 'x-gateway-config': savedConfig.id })
      .chat.completions.create({ model: 'gpt-4o-mini', messages })
      .catch((e: unknown) => e);
    expect(byConfig).toBeInstanceOf(OpenAI.NotFoundError);
    expect((byConfig as APIError).status).toBe(404);

    const streamed = await streamText(sdk({ 'x-gateway-api-key': key2, 'x-gateway-provider': '@team-openai' }), 'gpt-4o-mini').catch((e: unknown) => e);
    expect(streamed).toBeInstanceOf(OpenAI.NotFoundError);

    expect(since(main, before)).toHaveLength(0);
  });

  test("another workspace's key cannot read the first workspace's config or integration through the admin API", async () => {
    expect((await api('GET', `/configs/${savedConfig.id}`, undefined, key2)).status).toBe(404);
    expect((await api('GET', `/integrations/${integration.id}`, undefined, key2)).status).toBe(404);
    // …while the owning workspace's key can.
    expect((await api('GET', `/configs/${savedConfig.id}`, undefined, key1)).status).toBe(200);
  });

  test('GET /v1/models for the other workspace lists none of the first workspace’s providers', async () => {
    const list = await ok('GET', '/models', undefined, key2);
    expect(list).toMatchObject({ object: 'list', total_count: 0, data: [] });
  });
});

describe('GET /v1/models', () => {
  test('with the workspace key: the catalog models of @team-openai, total_count is the filtered total', async () => {
    const list = await ok('GET', '/models', undefined, key1);
    expect(list.object).toBe('list');
    expect(list.total_count).toBeGreaterThan(1);
    expect(list.data.length).toBe(Math.min(list.total_count, 50));
    for (const m of list.data) {
      expect(m.id).toBe(`@team-openai/${m.slug}`);
      expect(m).toMatchObject({ object: 'model', provider_slug: 'team-openai', ai_provider_id: 'openai', integration_id: integration.id, source: 'catalog' });
    }
    expect(list.data.map((m: any) => m.id)).toContain('@team-openai/gpt-4o-mini');

    const paged = await ok('GET', '/models?page_size=2', undefined, key1);
    expect(paged.total_count).toBe(list.total_count);
    expect(paged.data).toHaveLength(2);

    const searched = await ok('GET', '/models?search=gpt-4o-mini', undefined, key1);
    expect(searched.total_count).toBeGreaterThanOrEqual(1);
    expect(searched.total_count).toBe(searched.data.length);
    for (const m of searched.data) expect(m.slug).toContain('gpt-4o-mini');
  });

  test('with x-gateway-provider: openai and Authorization, it is the upstream list, through the proxy', async () => {
    const before = main.requests.length;
    const res = await fetch(`${gw.url}/v1/models`, {
      headers: { 'x-gateway-api-key': key1, 'x-gateway-provider': 'openai', 'x-gateway-custom-host': main.baseURL, authorization: 'Bearer sk-client-direct-key-00000000' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-echo')).toBe('yes');
    const echoed = (await res.json()) as { method: string; path: string; headers: Record<string, string> };
    expect(echoed).toMatchObject({ method: 'GET', path: '/v1/models' });
    expect(echoed.headers.authorization).toBe('Bearer sk-client-direct-key-00000000');
    const seen = since(main, before);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.path).toBe('/v1/models');
  });

  test('with x-gateway-provider: @team-openai, the proxied list uses the integration key and host', async () => {
    const before = main.requests.length;
    const res = await fetch(`${gw.url}/v1/models`, { headers: { 'x-gateway-api-key': key1, 'x-gateway-provider': '@team-openai', authorization: `Bearer ${SDK_DUMMY_KEY}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-echo')).toBe('yes');
    const seen = since(main, before);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.path).toBe('/v1/models');
    expect(seen[0]!.headers.authorization).toBe(`Bearer ${INTEGRATION_KEY}`);
  });
});

describe('integration models', () => {
  test('a model with its own custom_host goes to that host; other models to the integration host', async () => {
    const set = await ok('PUT', `/integrations/${integration.id}/integration-models`, {
      models: [{ slug: 'gpt-special', configurations: { custom_host: modelHost.baseURL } }, { slug: 'gpt-4o-mini' }],
    });
    expect(set.total_count).toBe(2);

    const client = sdk({ 'x-gateway-api-key': key1, 'x-gateway-provider': '@team-openai' });
    const mainBefore = main.requests.length;
    const hostBefore = modelHost.requests.length;

    const special = await client.chat.completions.create({ model: 'gpt-special', messages });
    expect(special.model).toBe('gpt-special');
    expect(since(modelHost, hostBefore)).toHaveLength(1);
    expect(since(main, mainBefore)).toHaveLength(0);
    expectIntegrationCredentials(modelHost.requests.at(-1)!);

    expect(await streamText(client, 'gpt-special')).toBe('Hello!');
    expect(since(modelHost, hostBefore)).toHaveLength(2);

    const plain = await client.chat.completions.create({ model: 'gpt-4o-mini', messages });
    expect(plain.model).toBe('gpt-4o-mini');
    // A model the integration does not list still goes to the integration's host.
    await client.chat.completions.create({ model: 'gpt-unlisted', messages });
    expect(since(main, mainBefore).map((r) => JSON.parse(r.body).model)).toEqual(['gpt-4o-mini', 'gpt-unlisted']);
    expect(since(modelHost, hostBefore)).toHaveLength(2);

    // Through the saved config as well.
    await sdk({ 'x-gateway-api-key': key1, 'x-gateway-config': savedConfig.id }).chat.completions.create({ model: 'gpt-special', messages });
    expect(since(modelHost, hostBefore)).toHaveLength(3);
  });

  test('a model custom_host on a host the outbound policy refuses is a 400 host_not_allowed when written, nothing stored or sent', async () => {
    // 127.0.0.2 is loopback but not on the test server's allow-list (127.0.0.1, ::1, localhost).
    const refused = `http://127.0.0.2:${new URL(modelHost.baseURL).port}/v1`;
    const models = [{ slug: 'gpt-special', configurations: { custom_host: modelHost.baseURL } }, { slug: 'gpt-4o-mini' }];
    const hostBefore = modelHost.requests.length;
    const put = await fetch(`${gw.url}/v1/integrations/${integration.id}/integration-models`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': BOOTSTRAP_KEY },
      body: JSON.stringify({ models: [...models, { slug: 'gpt-private', configurations: { custom_host: refused } }] }),
    });
    expect(put.status).toBe(400);
    expect((await put.json()).error).toMatchObject({ code: 'host_not_allowed', type: 'invalid_request_error', param: 'models[2].configurations.custom_host' });
    const list = await ok('GET', `/integrations/${integration.id}/integration-models`);
    expect(list.data.map((m: any) => m.slug)).not.toContain('gpt-private');
    expect(since(modelHost, hostBefore)).toHaveLength(0);
  });

  test('GET /v1/models now lists the integration models (source integration), not the catalog', async () => {
    const list = await ok('GET', '/models', undefined, key1);
    expect(list.total_count).toBe(2);
    expect(list.data.map((m: any) => m.id).sort()).toEqual(['@team-openai/gpt-4o-mini', '@team-openai/gpt-special']);
    for (const m of list.data) expect(m.source).toBe('integration');
  });
});

describe('cache invalidation on the same instance', () => {
  test('an updated saved config is used by the very next request', async () => {
    const cfg = await ok('POST', '/configs', { name: 'Switchable', config: { provider: '@team-openai' }, workspace_id: ws1.id });
    await ok('POST', '/integrations', {
      name: 'Other OpenAI',
      ai_provider_id: 'openai',
      key: OTHER_KEY,
      configurations: { custom_host: other.baseURL },
      workspace_id: ws1.id,
      create_default_provider: true,
      default_provider_slug: 'other-openai',
    });
    const client = sdk({ 'x-gateway-api-key': key1, 'x-gateway-config': cfg.id });

    // Warm the cache with version 1.
    const mainBefore = main.requests.length;
    await client.chat.completions.create({ model: 'gpt-4o-mini', messages });
    await client.chat.completions.create({ model: 'gpt-4o-mini', messages });
    expect(since(main, mainBefore)).toHaveLength(2);

    // Version 2 overrides the model.
    const v2 = await ok('PUT', `/configs/${cfg.id}`, { config: { provider: '@team-openai', override_params: { model: 'gpt-overridden' } } });
    expect(v2.version).toBe(2);
    await client.chat.completions.create({ model: 'gpt-4o-mini', messages });
    const afterV2 = since(main, mainBefore);
    expect(afterV2).toHaveLength(3);
    expect(JSON.parse(afterV2[2]!.body).model).toBe('gpt-overridden');

    // Version 3 points at another slug: another host and another key.
    const otherBefore = other.requests.length;
    const v3 = await ok('PUT', `/configs/${cfg.id}`, { config: { provider: '@other-openai' } });
    expect(v3.version).toBe(3);
    const answer = await client.chat.completions.create({ model: 'gpt-4o-mini', messages });
    expect(answer.choices[0]!.message.content).toBe('Hello from the mock!');
    expect(since(other, otherBefore)).toHaveLength(1);
    expect(other.requests.at(-1)!.headers.authorization).toBe(`Bearer ${OTHER_KEY}`);
    expect(since(main, mainBefore)).toHaveLength(3);

    // Archived: the next request is a 404.
    await ok('PUT', `/configs/${cfg.id}`, { status: 'archived' });
    const err = await client.chat.completions.create({ model: 'gpt-4o-mini', messages }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
  });

  test('an archived provider is a 404 on the very next @slug request, and works again once restored', async () => {
    const created = await ok('POST', '/providers', { name: 'Temporary', slug: 'temp-openai', integration_id: integration.id, workspace_id: ws1.id });
    const client = sdk({ 'x-gateway-api-key': key1, 'x-gateway-provider': '@temp-openai' });
    const before = main.requests.length;
    await client.chat.completions.create({ model: 'gpt-4o-mini', messages });
    await client.chat.completions.create({ model: 'gpt-4o-mini', messages });
    expect(since(main, before)).toHaveLength(2);
    expectIntegrationCredentials(main.requests.at(-1)!);

    const archived = await ok('PUT', `/providers/${created.id}`, { status: 'archived' }, key1);
    expect(archived.status).toBe('archived');
    const err = await client.chat.completions.create({ model: 'gpt-4o-mini', messages }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect((err as APIError).status).toBe(404);
    expect(since(main, before)).toHaveLength(2);

    await ok('PUT', `/providers/${created.id}`, { status: 'active' }, key1);
    await client.chat.completions.create({ model: 'gpt-4o-mini', messages });
    expect(since(main, before)).toHaveLength(3);
  });

  test('a new integration key is used by the very next request', async () => {
    const created = await ok('POST', '/integrations', {
      name: 'Rekeyed',
      ai_provider_id: 'openai',
      key: 'sk-rekey-first-000000000000000000',
      configurations: { custom_host: main.baseURL },
      workspace_id: ws1.id,
      create_default_provider: true,
      default_provider_slug: 'rekeyed',
    });
    const client = sdk({ 'x-gateway-api-key': key1, 'x-gateway-provider': '@rekeyed' });
    await client.chat.completions.create({ model: 'gpt-4o-mini', messages });
    expect(main.requests.at(-1)!.headers.authorization).toBe('Bearer sk-rekey-first-000000000000000000');
    await ok('PUT', `/integrations/${created.id}`, { key: 'sk-rekey-second-11111111111111111' });
    await client.chat.completions.create({ model: 'gpt-4o-mini', messages });
    expect(main.requests.at(-1)!.headers.authorization).toBe('Bearer sk-rekey-second-11111111111111111');
    // The custom host survived the key change (unsent settings stay).
    expect(main.requests.at(-1)!.path).toBe('/v1/chat/completions');
  });

  test('a disabled workspace key is refused on the very next request', async () => {
    const created = await ok('POST', '/api-keys', { type: 'workspace-service', name: 'Short-lived', workspace_id: ws1.id });
    const client = sdk({ 'x-gateway-api-key': created.key, 'x-gateway-provider': '@team-openai' });
    await client.chat.completions.create({ model: 'gpt-4o-mini', messages });
    await ok('PUT', `/api-keys/${created.id}`, { status: 'disabled' });
    const err = await client.chat.completions.create({ model: 'gpt-4o-mini', messages }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
  });
});
