import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { config } from '../../../../plugins/config/index.js';
import { providerHeaders } from '../../../../plugins/provider-headers/index.js';
import { providerRegistry } from '../../../../plugins/provider-registry/index.js';
import { azureAI } from '../../../../plugins/providers/azure/ai/index.js';
import { azureOpenAI } from '../../../../plugins/providers/azure/openai/index.js';
import { proxy } from '../../../../plugins/proxy/index.js';
import { serveGateway } from '../../../helpers/serve.js';
import { AZURE_KEY, ENTRA, startAzureAIContractMock, startAzureOpenAIContractMock, type AzureMock } from '../../../mocks/contract/azure.js';

let oai: AzureMock;
let ai: AzureMock;
let gw: Awaited<ReturnType<typeof serveGateway>>;

beforeAll(async () => {
  oai = await startAzureOpenAIContractMock();
  ai = await startAzureAIContractMock({ deployment: 'blue' });
  const entra = { azure_entra_tenant_id: ENTRA.tenant, azure_entra_client_id: ENTRA.clientId, azure_entra_client_secret: ENTRA.clientSecret };
  gw = await serveGateway({
    plugins: [
      config(),
      providerHeaders(),
      providerRegistry({
        providers: {
          'az-entra': { provider: 'azure-openai', resource_name: 'contoso', deployment_id: 'dep', api_version: '2024-10-21', custom_host: oai.baseURL, ...entra },
          'az-bad-secret': { provider: 'azure-openai', resource_name: 'contoso', deployment_id: 'dep', api_version: '2024-10-21', custom_host: oai.baseURL, ...entra, azure_entra_client_secret: 'nope' },
          'az-ready': { provider: 'azure-openai', deployment_id: 'dep', api_version: '2024-10-21', custom_host: oai.baseURL, azure_ad_token: 'entra-token-ready' },
          'ai-entra': { provider: 'azure-ai', azure_deployment_type: 'serverless', custom_host: ai.baseURL, ...entra },
        },
      }),
      azureOpenAI({ entra: { authority: oai.tokenURL } }),
      azureAI({ entra: { authority: ai.tokenURL } }),
      proxy(),
    ],
  });
  oai.issued.push('entra-token-ready');
});
afterAll(async () => {
  await gw.close();
  await oai.close();
  await ai.close();
});

async function call(path: string, headers: Record<string, string>, body?: unknown, method = 'POST') {
  const res = await fetch(`${gw.url}${path}`, { method, headers: { 'content-type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, headers: res.headers, text: await res.text() };
}
const cfg = (c: Record<string, unknown>) => ({ 'x-gateway-config': JSON.stringify(c) });
const base = () => ({ provider: 'azure-openai', api_key: AZURE_KEY, resource_name: 'contoso', custom_host: oai.baseURL });
const chat = (extra: Record<string, unknown> = {}) => ({ model: 'gpt-4o', messages: [{ role: 'user', content: 'Hi' }], ...extra });

describe('azure-openai: Entra ID', () => {
  test('client credentials: one token fetch shared by concurrent requests, sent as a bearer, default scope', async () => {
    const before = oai.tokenRequests.length;
    const results = await Promise.all([1, 2, 3].map(() => call('/v1/chat/completions', { 'x-gateway-provider': '@az-entra' }, chat())));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(oai.tokenRequests.length - before).toBe(1);
    expect(oai.tokenRequests.at(-1)).toMatchObject({ tenant: ENTRA.tenant, grant_type: 'client_credentials', client_id: ENTRA.clientId, scope: 'https://cognitiveservices.azure.com/.default' });
    const seen = oai.requests.at(-1)!;
    expect(seen.headers.authorization).toBe(`Bearer ${oai.issued.at(-1)}`);
    expect(seen.headers['api-key']).toBeUndefined();
    // Cached: no new fetch.
    await call('/v1/chat/completions', { 'x-gateway-provider': '@az-entra' }, chat());
    expect(oai.tokenRequests.length - before).toBe(1);
  });

  test('azure_entra_scope overrides the scope (a separate cached token)', async () => {
    const r = await call('/v1/chat/completions', cfg({ virtual_key: 'az-entra', azure_entra_scope: 'https://ai.azure.com/.default' }), chat());
    expect(r.status).toBe(200);
    expect(oai.tokenRequests.at(-1)!.scope).toBe('https://ai.azure.com/.default');
  });

  test('refused client credentials: 401 naming the field, no model call, no secret in the message', async () => {
    const calls = oai.requests.filter((r) => r.path.startsWith('/openai')).length;
    const r = await call('/v1/chat/completions', { 'x-gateway-provider': '@az-bad-secret' }, chat());
    expect(r.status).toBe(401);
    expect(JSON.parse(r.text).error.param).toBe('azure_entra_client_id');
    expect(r.text).not.toContain('nope');
    expect(oai.requests.filter((x) => x.path.startsWith('/openai')).length).toBe(calls);
  });

  test('a ready azure_ad_token is sent as the bearer', async () => {
    const r = await call('/v1/chat/completions', { 'x-gateway-provider': '@az-ready' }, chat());
    expect(r.status).toBe(200);
    expect(oai.requests.at(-1)!.headers.authorization).toBe('Bearer entra-token-ready');
  });
});

describe('azure-openai: deployments, v1, proxy, quirks', () => {
  const deployments = [
    { deployment_id: 'gpt4o-east', alias: 'gpt-4o', api_version: '2024-10-21' },
    { deployment_id: 'mini-east', alias: 'gpt-4o-mini', api_version: '2025-04-01-preview', is_default: true },
  ];

  test('the request model picks the deployment by alias; an unknown model gets the default', async () => {
    await call('/v1/chat/completions', cfg({ ...base(), deployments }), chat({ model: 'gpt-4o' }));
    expect(oai.requests.at(-1)!.path).toBe('/openai/deployments/gpt4o-east/chat/completions?api-version=2024-10-21');
    await call('/v1/embeddings', cfg({ ...base(), deployments }), { model: 'text-embedding-3-small', input: 'x' });
    expect(oai.requests.at(-1)!.path).toBe('/openai/deployments/mini-east/embeddings?api-version=2025-04-01-preview');
    const r = await call('/v1/completions', cfg({ ...base(), deployments }), { model: 'gpt-4o', prompt: 'x' });
    expect(r.status).toBe(200);
    expect(oai.requests.at(-1)!.path).toBe('/openai/deployments/gpt4o-east/completions?api-version=2024-10-21');
  });

  test('the v1 API: no api-version, the deployment becomes the body model', async () => {
    const r = await call('/v1/chat/completions', cfg({ ...base(), deployment_id: 'dep-v1', api_version: 'v1' }), chat({ model: 'gpt-4o' }));
    expect(r.status).toBe(200);
    expect(oai.requests.at(-1)!.path).toBe('/openai/v1/chat/completions');
    expect(oai.requests.at(-1)!.body.model).toBe('dep-v1');
  });

  test('the generic proxy goes to {origin}/openai/<path> with the api-key', async () => {
    const r = await call('/v1/files?api-version=2024-10-21', cfg({ ...base(), api_version: '2024-10-21' }), undefined, 'GET');
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text)).toEqual({ object: 'list', data: [], api_version: '2024-10-21' });
    expect(oai.requests.at(-1)!.headers['api-key']).toBe(AZURE_KEY);
  });

  test('a stream is normalised: no prompt-filter chunk, no filter fields, no delta-less choice, ids filled, one [DONE]', async () => {
    oai.next({ kind: 'text' });
    const r = await call('/v1/chat/completions', cfg({ ...base(), deployment_id: 'dep', api_version: '2024-10-21' }), chat({ stream: true, stream_options: { include_usage: true } }));
    expect(r.text).not.toContain('filter');
    const events = r.text.split('\n\n').filter((e) => e !== '').map((e) => e.slice(6));
    expect(events.filter((e) => e === '[DONE]')).toHaveLength(1);
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
    for (const c of chunks) {
      expect(c.id).toBe('chatcmpl-AzureMock01');
      expect(c.object).toBe('chat.completion.chunk');
      expect(c.created).toBe(1736407895);
    }
    expect(chunks[0].choices[0].delta.role).toBe('assistant');
    expect(chunks.at(-1).usage).toMatchObject({ prompt_tokens: 9 });
  });

  test('non-stream answers pass through byte for byte (filter annotations included)', async () => {
    oai.next({ kind: 'text' });
    const r = await call('/v1/chat/completions', cfg({ ...base(), deployment_id: 'dep', api_version: '2024-10-21' }), chat());
    expect(JSON.parse(r.text).prompt_filter_results).toBeDefined();
    expect(r.headers.get('x-ms-region')).toBe('Sweden Central');
  });

  test('errors: string code 429 → rate_limit_error; named codes become the type; 401 for a bad key', async () => {
    oai.next({ kind: 'error', status: 429 });
    const r = await call('/v1/chat/completions', cfg({ ...base(), deployment_id: 'dep', api_version: '2024-10-21' }), chat());
    expect(r.status).toBe(429);
    expect(JSON.parse(r.text).error).toEqual({ message: 'Mock error 429', type: 'rate_limit_error', param: null, code: '429' });
    const missing = await call('/v1/chat/completions', cfg({ ...base(), deployment_id: 'missing', api_version: '2024-10-21' }), chat());
    expect(missing.status).toBe(404);
    expect(JSON.parse(missing.text).error).toMatchObject({ type: 'DeploymentNotFound', code: 'DeploymentNotFound' });
    const bad = await call('/v1/chat/completions', cfg({ ...base(), api_key: 'wrong', deployment_id: 'dep', api_version: '2024-10-21' }), chat());
    expect(bad.status).toBe(401);
    expect(JSON.parse(bad.text).error.type).toBe('authentication_error');
  });

  test('a missing api_version is a 400 before any call', async () => {
    const r = await call('/v1/chat/completions', cfg({ ...base(), deployment_id: 'dep' }), chat());
    expect(r.status).toBe(400);
    expect(JSON.parse(r.text).error.param).toBe('api_version');
  });
});

describe('azure-ai', () => {
  const serverless = () => ({ provider: 'azure-ai', api_key: AZURE_KEY, azure_deployment_type: 'serverless', azure_endpoint_name: 'ep', azure_region: 'eastus', custom_host: ai.baseURL });

  test('managed: /score with azureml-model-deployment, no extra-parameters header', async () => {
    ai.next({ kind: 'text' });
    const r = await call('/v1/chat/completions', cfg({ provider: 'azure-ai', api_key: AZURE_KEY, azure_deployment_type: 'managed', azure_endpoint_name: 'ep', azure_region: 'eastus', azure_deployment_name: 'blue', custom_host: ai.baseURL }), chat());
    expect(r.status).toBe(200);
    const seen = ai.requests.at(-1)!;
    expect(seen.path).toBe('/score');
    expect(seen.headers['azureml-model-deployment']).toBe('blue');
    expect(seen.headers['extra-parameters']).toBeUndefined();
    expect(JSON.parse(r.text).choices[0].message.content).toBe('Hello!');
  });

  test('serverless: OpenAI-only fields pass with extra-parameters: pass-through', async () => {
    const r = await call('/v1/chat/completions', cfg(serverless()), chat({ stream: true, stream_options: { include_usage: true }, user: 'u' }));
    expect(r.status).toBe(200);
    expect(ai.requests.at(-1)!.headers['extra-parameters']).toBe('pass-through');
  });

  test('embeddings on a serverless endpoint', async () => {
    const r = await call('/v1/embeddings', cfg(serverless()), { model: 'embed', input: ['a', 'b'] });
    expect(r.status).toBe(200);
    expect(ai.requests.at(-1)!.path).toBe('/embeddings');
    expect(JSON.parse(r.text).data).toHaveLength(2);
  });

  test('Entra ID on azure-ai too', async () => {
    const r = await call('/v1/chat/completions', { 'x-gateway-provider': '@ai-entra' }, chat());
    expect(r.status).toBe(200);
    expect(ai.requests.at(-1)!.headers.authorization).toBe(`Bearer ${ai.issued.at(-1)}`);
  });
});

describe('azure-ai with extraParameters: none', () => {
  test('an unknown field is refused upstream (Azure default) and the 400 comes back in the envelope', async () => {
    const local = await serveGateway({ plugins: [config(), azureAI({ extraParameters: 'none' })] });
    try {
      const res = await fetch(`${local.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...cfg({ provider: 'azure-ai', api_key: AZURE_KEY, custom_host: ai.baseURL }) },
        body: JSON.stringify(chat({ user: 'u' })),
      });
      expect(res.status).toBe(400);
      const body = (await res.json()) as { error: { message: string; type: string } };
      expect(body.error.message).toContain('Extra parameters user');
      expect(ai.requests.at(-1)!.headers['extra-parameters']).toBeUndefined();
    } finally {
      await local.close();
    }
  });
});

describe('Entra ID settings: the target\'s or the plugin\'s, never mixed', () => {
  const defaults = { tenantId: 'operator-tenant', clientId: 'operator-client', clientSecret: 'operator-secret' };
  test('a target with none of the three uses the plugin\'s defaults as a whole', async () => {
    const { entraClientOf } = await import('../../../../plugins/providers/azure/openai/index.js');
    expect(entraClientOf({ provider: 'azure-openai' }, defaults)).toMatchObject({ tenantId: 'operator-tenant', clientId: 'operator-client', clientSecret: 'operator-secret' });
    expect(entraClientOf({ provider: 'azure-openai' }, {})).toBeNull();
  });
  test('a target naming its own tenant or client must bring its own secret: the operator\'s is never paired with it', async () => {
    const { entraClientOf } = await import('../../../../plugins/providers/azure/openai/index.js');
    expect(() => entraClientOf({ azure_entra_tenant_id: 'attacker-tenant' }, defaults)).toThrow(/needs azure_entra_client_id/);
    expect(() => entraClientOf({ azure_entra_tenant_id: 't', azure_entra_client_id: 'c' }, defaults)).toThrow(/needs azure_entra_client_secret/);
    expect(entraClientOf({ azure_entra_tenant_id: 't', azure_entra_client_id: 'c', azure_entra_client_secret: 's' }, defaults)).toMatchObject({ tenantId: 't', clientId: 'c', clientSecret: 's' });
  });
});
