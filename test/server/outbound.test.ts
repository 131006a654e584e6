import { generateKeyPairSync } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { HostResolver } from '../../core/index.js';
import { config } from '../../plugins/config/index.js';
import { guardrailChecks } from '../../plugins/guardrails/checks/index.js';
import { guardrails } from '../../plugins/guardrails/index.js';
import { providerHeaders } from '../../plugins/provider-headers/index.js';
import { openai } from '../../plugins/providers/openai/index.js';
import { proxy } from '../../plugins/proxy/index.js';
import { requestLog } from '../../plugins/request-log/index.js';
import { singleStrategy } from '../../plugins/strategies/single/index.js';
import { fallbackStrategy } from '../../plugins/strategies/fallback/index.js';
import { trace } from '../../plugins/trace/index.js';
import { DEFAULT_CONFIG } from '../../server/default-config.js';
import { startServer } from '../../server/server.js';
import { GATEWAY_KEY, memoryLogger, startTestServer, waitForLog } from '../helpers/gateway.js';
import { serveGateway } from '../helpers/serve.js';
import { startMockOpenAI, type MockUpstream } from '../mocks/openai-upstream.js';

/*
 * Defect 1 of issue 15: with no allow-list, every URL a caller chooses
 * (custom hosts in headers and in configs at any depth, the generic proxy,
 * the webhook and log guardrails) connected wherever it pointed. The mocks
 * here are on loopback, the one network a test may touch; the policy is the
 * same for private ranges, which its unit tests cover without sockets.
 */

let mock: MockUpstream;
/** A webhook/log endpoint on loopback, counting what reaches it. */
let hook: Server;
let hookURL: string;
let hookHits = 0;

beforeAll(async () => {
  mock = await startMockOpenAI({ record: true });
  hook = createServer((req, res) => {
    hookHits++;
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"verdict":true}');
  });
  await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
  hookURL = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`;
});

afterAll(async () => {
  await mock.close();
  hook.closeAllConnections();
  await new Promise((r) => hook.close(r));
});

const chat = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };

function call(url: string, headers: Record<string, string>, init: { method?: string; path?: string; body?: unknown } = {}) {
  return fetch(`${url}${init.path ?? '/v1/chat/completions'}`, {
    method: init.method ?? 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': GATEWAY_KEY, authorization: 'Bearer sk-up', ...headers },
    body: init.method === 'GET' ? undefined : JSON.stringify(init.body ?? chat),
  });
}

async function expectRefused(res: Response, host: string, param: string | null = null) {
  expect(res.status).toBe(400);
  const body = (await res.json()) as { error: { message: string; type: string; param: string | null; code: string } };
  expect(body.error).toMatchObject({ code: 'host_not_allowed', type: 'invalid_request_error', param });
  expect(body.error.message).toContain(`does not connect to ${host}`);
  expect(body.error.message).toContain('GATEWAY_ALLOW_HOSTS');
  return body.error;
}

describe('the bundled server refuses private hosts by default', () => {
  let gw: Awaited<ReturnType<typeof startTestServer>>;
  let mockHost: string;

  beforeAll(async () => {
    // No GATEWAY_ALLOW_HOSTS: the default of `npm start`.
    gw = await startTestServer({ env: { GATEWAY_ALLOW_HOSTS: '' } });
    mockHost = new URL(mock.baseURL).host;
  });
  afterAll(() => gw.close());

  test('x-gateway-custom-host on loopback, in any spelling: 400 naming the header, nothing sent', async () => {
    const port = new URL(mock.baseURL).port;
    const seen = mock.requests.length;
    for (const [host, shown] of [
      [mockHost, mockHost],
      [`0x7f.1:${port}`, mockHost],
      [`2130706433:${port}`, mockHost],
      [`[::ffff:127.0.0.1]:${port}`, `[::ffff:7f00:1]:${port}`],
    ] as const) {
      await expectRefused(await call(gw.url, { 'x-gateway-provider': 'openai', 'x-gateway-custom-host': `http://${host}/v1` }), shown, 'x-gateway-custom-host');
    }
    expect(mock.requests.length).toBe(seen);
  });

  test('a config custom_host, top level and nested: 400, and the log line says why', async () => {
    const seen = mock.requests.length;
    const nested = { strategy: { mode: 'fallback' }, targets: [{ strategy: { mode: 'single' }, targets: [{ provider: 'openai', api_key: 'k', custom_host: mock.baseURL }] }] };
    for (const cfg of [{ provider: 'openai', api_key: 'k', custom_host: mock.baseURL }, nested]) {
      await expectRefused(await call(gw.url, { 'x-gateway-config': JSON.stringify(cfg), 'x-gateway-trace-id': 'trace-outbound-config' }), mockHost);
    }
    expect(mock.requests.length).toBe(seen);
    const line = await waitForLog(gw.logs, (l) => l.trace_id === 'trace-outbound-config');
    expect(line.error.code).toBe('host_not_allowed');
  });

  test('the generic proxy', async () => {
    const seen = mock.requests.length;
    await expectRefused(await call(gw.url, { 'x-gateway-provider': 'openai', 'x-gateway-custom-host': mock.baseURL }, { method: 'GET', path: '/v1/assistants' }), mockHost, 'x-gateway-custom-host');
    const cfg = JSON.stringify({ provider: 'openai', api_key: 'k', custom_host: mock.baseURL });
    await expectRefused(await call(gw.url, { 'x-gateway-config': cfg }, { method: 'GET', path: '/v1/assistants' }), mockHost);
    expect(mock.requests.length).toBe(seen);
  });

  test("a provider's own files, batches and fine-tuning APIs", async () => {
    const seen = mock.requests.length;
    for (const path of ['/v1/fine_tuning/jobs', '/v1/batches', '/v1/files']) {
      await expectRefused(await call(gw.url, { 'x-gateway-provider': 'openai', 'x-gateway-custom-host': mock.baseURL }, { method: 'GET', path }), mockHost, 'x-gateway-custom-host');
      const cfg = JSON.stringify({ provider: 'openai', api_key: 'k', custom_host: mock.baseURL });
      await expectRefused(await call(gw.url, { 'x-gateway-config': cfg }, { method: 'GET', path }), mockHost);
    }
    expect(mock.requests.length).toBe(seen);
  });

  test('the default.webhook and default.log guardrail URLs', async () => {
    // Only the mock upstream is allowed, so the request would go on if a guardrail did not refuse its URL.
    const only = await startTestServer({ env: { GATEWAY_ALLOW_HOSTS: mockHost } });
    try {
      const hits = hookHits;
      const webhookHost = new URL(hookURL).host;
      for (const guardrail of [
        { id: 'w', deny: true, 'default.webhook': { url: hookURL } },
        { id: 'w-open', deny: true, 'default.webhook': { url: hookURL, failOpen: true } },
        { id: 'l', 'default.log': { url: hookURL } },
      ]) {
        const cfg = { provider: 'openai', api_key: 'k', custom_host: mock.baseURL, input_guardrails: [guardrail] };
        await expectRefused(await call(only.url, { 'x-gateway-config': JSON.stringify(cfg) }), webhookHost);
      }
      expect(hookHits).toBe(hits);
    } finally {
      await only.close();
    }
  });

  test("a Vertex service account's token_uri", async () => {
    const pem = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const account = { type: 'service_account', client_email: 'sa@p.iam.gserviceaccount.com', private_key: pem, token_uri: `${mock.baseURL}/token` };
    const cfg = { provider: 'vertex-ai', vertex_region: 'us-central1', vertex_project_id: 'p', vertex_service_account_json: account };
    const seen = mock.requests.length;
    await expectRefused(await call(gw.url, { 'x-gateway-config': JSON.stringify(cfg) }), mockHost);
    expect(mock.requests.length).toBe(seen);
  });

  test('a provider whose default base URL is loopback (ollama → localhost:11434) is refused when it connects', async () => {
    await expectRefused(await call(gw.url, { 'x-gateway-provider': 'ollama' }), 'localhost:11434');
  });
});

describe('allowing a self-hosted model', () => {
  const mockPort = () => Number(new URL(mock.baseURL).port);

  test('GATEWAY_ALLOW_HOSTS=127.0.0.1:<port> allows that address and port only', async () => {
    const gw = await startTestServer({ env: { GATEWAY_ALLOW_HOSTS: ` 127.0.0.1:${mockPort()} , ollama.lan` } });
    try {
      expect((await call(gw.url, { 'x-gateway-provider': 'openai', 'x-gateway-custom-host': mock.baseURL })).status).toBe(200);
      await expectRefused(await call(gw.url, { 'x-gateway-provider': 'openai', 'x-gateway-custom-host': `http://127.0.0.1:${mockPort() + 1}/v1` }), `127.0.0.1:${mockPort() + 1}`, 'x-gateway-custom-host');
    } finally {
      await gw.close();
    }
  });

  test('outbound.allowHosts in the server config, with the environment adding to it', async () => {
    const gw = await startTestServer({ config: { ...DEFAULT_CONFIG, outbound: { allowHosts: [`127.0.0.1:${mockPort()}`] } }, env: { GATEWAY_ALLOW_HOSTS: '' } });
    try {
      const cfg = JSON.stringify({ provider: 'openai', api_key: 'k', custom_host: mock.baseURL });
      expect((await call(gw.url, { 'x-gateway-config': cfg })).status).toBe(200);
    } finally {
      await gw.close();
    }
  });

  test('GATEWAY_ALLOW_PRIVATE_HOSTS=1 allows every address; =0 wins over the config file', async () => {
    const open = await startTestServer({ env: { GATEWAY_ALLOW_HOSTS: '', GATEWAY_ALLOW_PRIVATE_HOSTS: '1' } });
    try {
      expect((await call(open.url, { 'x-gateway-provider': 'openai', 'x-gateway-custom-host': mock.baseURL })).status).toBe(200);
    } finally {
      await open.close();
    }
    const closed = await startTestServer({ config: { ...DEFAULT_CONFIG, outbound: { allowPrivateHosts: true } }, env: { GATEWAY_ALLOW_HOSTS: '', GATEWAY_ALLOW_PRIVATE_HOSTS: '0' } });
    try {
      expect((await call(closed.url, { 'x-gateway-provider': 'openai', 'x-gateway-custom-host': mock.baseURL })).status).toBe(400);
    } finally {
      await closed.close();
    }
  });

  test('a bad allow-list entry stops the start, naming it', async () => {
    const start = (env: Record<string, string>, outbound?: { allowHosts: string[] }) =>
      startServer({ env: { GATEWAY_DATA_DIR: '/nonexistent', ...env }, config: { ...DEFAULT_CONFIG, outbound }, port: 0, host: '127.0.0.1', logger: memoryLogger().logger });
    await expect(start({ GATEWAY_ALLOW_HOSTS: 'http://ollama.lan:11434' })).rejects.toThrow(/GATEWAY_ALLOW_HOSTS: "http:\/\/ollama.lan:11434" is a URL/);
    await expect(start({ GATEWAY_ALLOW_PRIVATE_HOSTS: 'yes' })).rejects.toThrow(/GATEWAY_ALLOW_PRIVATE_HOSTS must be 1 or 0/);
  });
});

describe('a name that resolves to a refused address: found when connecting, answered with the same 400', () => {
  // An injected resolver maps names; nothing but 127.0.0.1 is ever connected to.
  const resolve: HostResolver = async (name) => {
    if (name === 'rebind.test') return [{ address: '10.0.0.1', family: 4 }];
    if (name === 'mock.test') return [{ address: '127.0.0.1', family: 4 }];
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
  };
  let gw: Awaited<ReturnType<typeof serveGateway>>;

  beforeAll(async () => {
    gw = await serveGateway({
      plugins: [trace(), config(), providerHeaders(), singleStrategy(), fallbackStrategy(), openai(), proxy(), guardrailChecks(), guardrails(), requestLog()],
      options: { outbound: { resolve, allowHosts: ['127.0.0.1'] } },
    });
  });
  afterAll(() => gw.close());

  test('custom host, proxy and webhook: 400 host_not_allowed, not 502', async () => {
    const port = new URL(mock.baseURL).port;
    const seen = mock.requests.length;
    const custom = `http://rebind.test:${port}/v1`;
    await expectRefused(await call(gw.url, { 'x-gateway-provider': 'openai', 'x-gateway-custom-host': custom, 'x-gateway-trace-id': 'trace-rebind' }), `rebind.test:${port}`);
    await expectRefused(await call(gw.url, { 'x-gateway-provider': 'openai', 'x-gateway-custom-host': custom }, { method: 'GET', path: '/v1/models/x' }), `rebind.test:${port}`);
    const webhook = { provider: 'openai', api_key: 'k', custom_host: `http://mock.test:${port}/v1`, input_guardrails: [{ id: 'w', deny: true, 'default.webhook': { url: `http://rebind.test:${port}/hook`, failOpen: true } }] };
    await expectRefused(await call(gw.url, { 'x-gateway-config': JSON.stringify(webhook) }), `rebind.test:${port}`);
    expect(mock.requests.length).toBe(seen);
    const line = await waitForLog(gw.logs, (l) => l.trace_id === 'trace-rebind');
    expect(line.status).toBe(400);
    expect(line.error.code).toBe('host_not_allowed');
  });

  test('a name that resolves to an allowed address goes through', async () => {
    const port = new URL(mock.baseURL).port;
    const res = await call(gw.url, { 'x-gateway-provider': 'openai', 'x-gateway-custom-host': `http://mock.test:${port}/v1` });
    expect(res.status).toBe(200);
  });

  test('fallback moves past a refused target', async () => {
    const port = new URL(mock.baseURL).port;
    const cfg = { strategy: { mode: 'fallback' }, targets: [{ provider: 'openai', api_key: 'k', custom_host: `http://rebind.test:${port}/v1` }, { provider: 'openai', api_key: 'k', custom_host: `http://mock.test:${port}/v1` }] };
    const res = await call(gw.url, { 'x-gateway-config': JSON.stringify(cfg) });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gateway-last-used-option-index')).toBe('1');
  });
});
