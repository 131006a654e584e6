import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadServerConfig } from '../../../server/config.js';
import type { ServerConfig } from '../../../server/schema.js';
import { BOOTSTRAP_KEY, startTestServer } from '../../helpers/gateway.js';
import { segmentText } from '../../helpers/log-segments.js';
import { startMockOpenAI, type MockUpstream } from '../../mocks/openai-upstream.js';

/**
 * Secrets never leave the control plane: integration keys and secret
 * settings, and the secrets of created or rotated API keys, appear in no
 * admin response (only masked), in no pino line, in no stored log entry, and
 * not in clear in the SQLite file. Each absence is paired with a positive
 * control showing the place looked at does hold the surrounding data.
 */

/** Key-shaped: the log redactor would also catch it by its shape. */
const INTEGRATION_KEY = 'sk-secret-integration-123456789abcdef';
/** Not key-shaped: only never capturing it keeps it out (the redactor does not know its shape). */
const PLAIN_KEY = 'plainvalue-zebra-orchid-7741-quartz';
const AWS_SECRET = 'wJalrXUtnFEMIK7MDENGbPxRfiCYsecretzz42';
const SESSION_TOKEN = 'sessiontokenvalue-quokka-5501-ember';
const UPSTREAM_SECRETS = { INTEGRATION_KEY, PLAIN_KEY, AWS_SECRET, SESSION_TOKEN };

type Server = Awaited<ReturnType<typeof startTestServer>>;

let gw: Server;
let mock: MockUpstream;
let dataDir: string;
let closed = false;

interface Call {
  label: string;
  status: number;
  text: string;
  /** Gateway key secrets this response may show (its create or rotate answer). */
  shows: string[];
}
const adminCalls: Call[] = [];

let integration: any;
let plainIntegration: any;
let serviceKey: any;
let orgKey: any;
let rotated: any;
/** Every gateway key secret handed out: created, rotated, and the one rotated away. */
const gatewaySecrets: Record<string, string> = {};

async function call(label: string, method: string, path: string, body?: unknown, key = BOOTSTRAP_KEY): Promise<{ status: number; body: any; text: string }> {
  const res = await fetch(`${gw.url}/v1${path}`, {
    method,
    headers: { 'x-gateway-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let json: unknown = null;
  try {
    json = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: res.status, body: json, text };
}

/** An admin call, recorded for the response scan; it must succeed unless `expectStatus` says otherwise. */
async function admin(label: string, method: string, path: string, body?: unknown, options: { key?: string; expectStatus?: number } = {}): Promise<any> {
  const res = await call(label, method, path, body, options.key);
  expect(res.status, `${label}: ${res.text}`).toBe(options.expectStatus ?? 200);
  const shows = res.body !== null && typeof res.body?.key === 'string' && res.body.key.startsWith('gwk-') ? [res.body.key] : [];
  adminCalls.push({ label, status: res.status, text: res.text, shows });
  return res.body;
}

function sdk(apiKey: string, headers: Record<string, string>): OpenAI {
  return new OpenAI({ apiKey: 'unused', baseURL: `${gw.url}/v1`, maxRetries: 0, defaultHeaders: { 'x-gateway-api-key': apiKey, ...headers } });
}

const messages = [{ role: 'user' as const, content: 'say hello to the vault' }];

/** The secret and the forms a careless store would leave it in: base64 and base64url (any alignment, edges cut) and hex. */
function encodings(secret: string): string[] {
  const forms = [secret, Buffer.from(secret).toString('hex')];
  for (const pad of ['', 'x', 'xx']) {
    for (const encoding of ['base64', 'base64url'] as const) forms.push(Buffer.from(pad + secret).toString(encoding).slice(4, -4));
  }
  return forms;
}

/** The database's files (WAL included), and the log's body segments beside them as the text they hold. */
async function databaseFiles(): Promise<Array<{ name: string; bytes: Buffer }>> {
  const names = (await readdir(dataDir)).filter((n) => n.startsWith('gateway.db') && n !== 'gateway.db.bodies');
  const files = await Promise.all(names.map(async (name) => ({ name, bytes: await readFile(join(dataDir, name)) })));
  return [...files, { name: 'gateway.db.bodies', bytes: await segmentText(join(dataDir, 'gateway.db.bodies')) }];
}

let logList: any[] = [];
let logEntries: any[] = [];
let logTexts: string[] = [];

beforeAll(async () => {
  mock = await startMockOpenAI();
  dataDir = await mkdtemp(join(tmpdir(), 'gw-secrets-'));
  const full = await loadServerConfig(undefined);
  expect(full.plugins.map((p) => p.name)).toContain('log-store');
  // Whole bodies are kept (the strictest capture), and written quickly.
  const config: ServerConfig = {
    ...full,
    plugins: full.plugins.map((p) => (p.name === 'log-store' ? { ...p, options: { ...p.options, capture: 'full', flushIntervalMs: 20 } } : p)),
  };
  gw = await startTestServer({ config, env: { GATEWAY_DATA_DIR: dataDir } });

  const ws = await admin('workspace create', 'POST', '/workspaces', { name: 'Vault team', slug: 'vault-team' });
  integration = await admin('integration create', 'POST', '/integrations', {
    name: 'Vault OpenAI',
    slug: 'vault-openai-integration',
    ai_provider_id: 'openai',
    key: INTEGRATION_KEY,
    configurations: { custom_host: mock.baseURL, aws_secret_access_key: AWS_SECRET, aws_session_token: SESSION_TOKEN },
    workspace_id: ws.id,
    create_default_provider: true,
    default_provider_slug: 'vault-openai',
  });
  plainIntegration = await admin('plain integration create', 'POST', '/integrations', {
    name: 'Plain OpenAI',
    ai_provider_id: 'openai',
    key: PLAIN_KEY,
    configurations: { custom_host: mock.baseURL },
    workspace_id: ws.id,
    create_default_provider: true,
    default_provider_slug: 'plain-openai',
  });
  // A rejected create that carried the key: its error must not echo it.
  await admin(
    'integration create rejected',
    'POST',
    '/integrations',
    { name: 'Bad', ai_provider_id: 'no-such-provider', key: INTEGRATION_KEY, configurations: { aws_secret_access_key: AWS_SECRET } },
    { expectStatus: 400 },
  );
  await admin('integration create rejected (bad host)', 'POST', '/integrations', { name: 'Bad', ai_provider_id: 'openai', key: PLAIN_KEY, configurations: { custom_host: 'ftp://x' } }, { expectStatus: 400 });

  await admin('integration get', 'GET', `/integrations/${integration.id}`);
  await admin('integration list', 'GET', '/integrations');
  await admin('integration list (workspace)', 'GET', `/integrations?workspace_id=${ws.id}`);
  await admin('integration rename', 'PUT', `/integrations/${integration.id}`, { name: 'Vault OpenAI (renamed)' });
  await admin('integration same key again', 'PUT', `/integrations/${integration.id}`, { key: INTEGRATION_KEY });
  await admin('integration settings update', 'PUT', `/integrations/${integration.id}`, {
    configurations: { custom_host: mock.baseURL, aws_secret_access_key: AWS_SECRET, aws_session_token: SESSION_TOKEN },
  });
  await admin('integration get after updates', 'GET', `/integrations/${integration.id}`);
  await admin('integration models', 'GET', `/integrations/${integration.id}/integration-models`);
  await admin('providers list', 'GET', `/providers?workspace_id=${ws.id}`);

  serviceKey = await admin('service key create', 'POST', '/api-keys', { type: 'workspace-service', name: 'Vault service', workspace_id: ws.id });
  orgKey = await admin('org key create', 'POST', '/api-keys', { type: 'organisation-service', name: 'Vault org' });
  rotated = await admin('service key rotate', 'POST', `/api-keys/${serviceKey.id}/rotate`);
  gatewaySecrets.created = serviceKey.key;
  gatewaySecrets.org = orgKey.key;
  gatewaySecrets.rotated = rotated.key;
  await admin('api key get', 'GET', `/api-keys/${serviceKey.id}`);
  await admin('api key list', 'GET', '/api-keys');
  await admin('api key update', 'PUT', `/api-keys/${serviceKey.id}`, { name: 'Vault service (renamed)' });
  await admin('api key list with the org key', 'GET', '/api-keys', undefined, { key: orgKey.key });
  await admin('integration get with the service key', 'GET', `/integrations/${integration.id}`, undefined, { key: rotated.key });
  await admin('integration list with the service key', 'GET', '/integrations', undefined, { key: rotated.key });
});

afterAll(async () => {
  if (!closed) await gw?.close();
  await mock?.close();
});

describe('admin responses', () => {
  test('integration keys and secret settings are masked to their last four characters', () => {
    expect(integration.masked_key).toBe(`****${INTEGRATION_KEY.slice(-4)}`);
    expect(integration.configurations).toEqual({
      custom_host: mock.baseURL,
      aws_secret_access_key: `****${AWS_SECRET.slice(-4)}`,
      aws_session_token: `****${SESSION_TOKEN.slice(-4)}`,
    });
    expect(plainIntegration.masked_key).toBe(`****${PLAIN_KEY.slice(-4)}`);
    for (const c of adminCalls.filter((c) => c.label.startsWith('integration get') || c.label === 'integration settings update')) {
      const body = JSON.parse(c.text);
      expect(body.masked_key, c.label).toBe(`****${INTEGRATION_KEY.slice(-4)}`);
      expect(body.configurations.aws_secret_access_key, c.label).toBe(`****${AWS_SECRET.slice(-4)}`);
      expect(body.configurations.aws_session_token, c.label).toBe(`****${SESSION_TOKEN.slice(-4)}`);
    }
    const list = JSON.parse(adminCalls.find((c) => c.label === 'integration list')!.text);
    expect(list.data.map((i: any) => i.masked_key).sort()).toEqual([`****${INTEGRATION_KEY.slice(-4)}`, `****${PLAIN_KEY.slice(-4)}`].sort());
  });

  test('no admin response holds an integration secret, in any encoding', () => {
    expect(adminCalls.length).toBeGreaterThan(20);
    for (const c of adminCalls) {
      for (const [name, secret] of Object.entries(UPSTREAM_SECRETS)) {
        for (const form of encodings(secret)) expect(c.text.includes(form), `${name} in the "${c.label}" response: ${c.text}`).toBe(false);
      }
    }
    // The rejected creates were rejected for the reason given, not for the key.
    expect(adminCalls.find((c) => c.label === 'integration create rejected')!.text).toContain('ai_provider_id');
  });

  test('gateway key secrets appear only in the create and rotate answers', () => {
    expect(serviceKey.key).toMatch(/^gwk-/);
    expect(rotated.key).toMatch(/^gwk-/);
    expect(rotated.key).not.toBe(serviceKey.key);
    expect(rotated.masked_key).toBe(`gwk-****${rotated.key.slice(-4)}`);
    const shown = adminCalls.filter((c) => c.shows.length > 0).map((c) => c.label);
    expect(shown.sort()).toEqual(['org key create', 'service key create', 'service key rotate']);
    for (const c of adminCalls) {
      for (const [name, secret] of Object.entries(gatewaySecrets)) {
        if (c.shows.includes(secret)) continue;
        expect(c.text.includes(secret), `the ${name} key secret in the "${c.label}" response`).toBe(false);
      }
      expect(c.text.includes(BOOTSTRAP_KEY), `the bootstrap key in the "${c.label}" response`).toBe(false);
    }
    const listed = JSON.parse(adminCalls.find((c) => c.label === 'api key list')!.text);
    expect(listed.data.length).toBeGreaterThanOrEqual(3);
    for (const k of listed.data) {
      expect(k.key).toBeUndefined();
      expect(k.masked_key).toMatch(/\*\*\*\*/);
    }
  });
});

describe('a caller cannot send an integration key to a host of its choosing', () => {
  // A workspace key with only `completions.write` must not learn the integration key, which even
  // admins only see masked. Pointing the slug at its own host would hand it over in `Authorization`.
  let evil: MockUpstream;
  beforeAll(async () => {
    evil = await startMockOpenAI();
  });
  afterAll(async () => {
    await evil?.close();
  });

  test('x-gateway-custom-host with x-gateway-provider: @slug does not carry the integration key elsewhere', async () => {
    const chatOnly = await admin('chat-only key create', 'POST', '/api-keys', {
      type: 'workspace-service',
      name: 'Chat only',
      workspace_id: integration.workspace_id,
      scopes: ['completions.write'],
    });
    gatewaySecrets.chatOnly = chatOnly.key;
    await sdk(chatOnly.key, { 'x-gateway-provider': '@vault-openai', 'x-gateway-custom-host': evil.baseURL })
      .chat.completions.create({ model: 'gpt-4o-mini', messages })
      .catch(() => undefined);
    await sdk(chatOnly.key, { 'x-gateway-config': JSON.stringify({ provider: '@vault-openai', custom_host: evil.baseURL }) })
      .chat.completions.create({ model: 'gpt-4o-mini', messages })
      .catch(() => undefined);
    const leaked = evil.requests.map((r) => r.headers.authorization).filter((a) => a?.includes(INTEGRATION_KEY));
    expect(leaked, 'the integration key reached a host the caller chose').toEqual([]);
  });
});

describe('requests through the slugs, then logs and storage', () => {
  let oldSecretWorked = false;

  beforeAll(async () => {
    const client = sdk(rotated.key, { 'x-gateway-provider': '@vault-openai' });
    const answer = await client.chat.completions.create({ model: 'gpt-4o-mini', messages });
    expect(answer.choices[0]!.message.content).toBe('Hello from the mock!');
    const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', messages, stream: true, stream_options: { include_usage: true } });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('Hello!');
    // Upstream errors: a 500 and an auth failure of the integration key.
    const e500 = await client.chat.completions.create({ model: 'error-500', messages }).catch((e: unknown) => e);
    expect(e500).toBeInstanceOf(OpenAI.InternalServerError);
    const e401 = await client.chat.completions.create({ model: 'error-401', messages }).catch((e: unknown) => e);
    expect(e401).toBeInstanceOf(OpenAI.AuthenticationError);
    const stream429 = await client.chat.completions.create({ model: 'error-429', messages, stream: true }).catch((e: unknown) => e);
    expect(stream429).toBeInstanceOf(OpenAI.RateLimitError);

    // The rotated-away secret still works during its transition period.
    const old = await sdk(serviceKey.key, { 'x-gateway-provider': '@vault-openai' }).chat.completions.create({ model: 'gpt-4o-mini', messages }).withResponse();
    oldSecretWorked = old.response.headers.get('x-gateway-api-key-expires-at') !== null;

    // The plain (not key-shaped) integration key, by slug and via an inline config.
    await sdk(rotated.key, { 'x-gateway-provider': '@plain-openai' }).chat.completions.create({ model: 'gpt-4o-mini', messages });
    await sdk(rotated.key, { 'x-gateway-config': JSON.stringify({ provider: '@plain-openai' }) }).chat.completions.create({ model: 'gpt-4o-mini', messages });

    // The generic proxy with a slug: the mock echoes the request headers back, the integration key among them.
    for (const slug of ['vault-openai', 'plain-openai']) {
      const res = await fetch(`${gw.url}/v1/models`, { headers: { 'x-gateway-api-key': rotated.key, 'x-gateway-provider': `@${slug}` } });
      expect(res.status).toBe(200);
      const echoed = (await res.json()) as { headers: Record<string, string> };
      // Positive control: this response body does carry the key (the mock echoed it), so the log store saw it.
      expect(echoed.headers.authorization).toBe(`Bearer ${slug === 'vault-openai' ? INTEGRATION_KEY : PLAIN_KEY}`);
    }

    // Read the stored entries with the organisation key: wait until every request above is written
    // (8 chats and 2 proxied lists with this key; its admin reads are logged too).
    const written = () => ({
      chats: logList.filter((e) => e.route === 'chat.completions').length,
      proxied: logList.filter((e) => e.path === '/v1/models').length,
    });
    const until = Date.now() + 5000;
    for (;;) {
      const page = await call('logs list', 'GET', `/logs?limit=500&api_key=${serviceKey.id}`, undefined, orgKey.key);
      expect(page.status).toBe(200);
      logList = page.body.data;
      logTexts = [page.text];
      if ((written().chats >= 8 && written().proxied >= 2) || Date.now() > until) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(written()).toEqual({ chats: 8, proxied: 2 });
    // Every entry, the admin requests' included.
    const all = await call('logs list (all)', 'GET', '/logs?limit=500', undefined, BOOTSTRAP_KEY);
    expect(all.status).toBe(200);
    logTexts.push(all.text);
    logEntries = [];
    for (const item of all.body.data) {
      const one = await call('log get', 'GET', `/logs/${item.id}`, undefined, BOOTSTRAP_KEY);
      expect(one.status).toBe(200);
      logEntries.push(one.body);
      logTexts.push(one.text);
    }
  });

  test('the mock received the integration keys (so their absence elsewhere means something)', () => {
    const auths = mock.requests.map((r) => r.headers.authorization);
    expect(auths).toContain(`Bearer ${INTEGRATION_KEY}`);
    expect(auths).toContain(`Bearer ${PLAIN_KEY}`);
    expect(auths).not.toContain('Bearer unused');
    expect(oldSecretWorked).toBe(true);
  });

  test('stored log entries hold the bodies, but no integration secret and no gateway key secret', () => {
    const chats = logEntries.filter((e) => e.route === 'chat.completions' && e.api_key_id === serviceKey.id);
    expect(chats).toHaveLength(8);
    // Positive controls: bodies are captured, errors recorded, and the admin routes logged without bodies.
    expect(chats.some((e) => e.status === 200 && e.request_body?.includes('say hello to the vault') && e.response_body?.includes('Hello from the mock!'))).toBe(true);
    expect(chats.some((e) => e.stream === true && e.status === 200 && e.response_body !== null)).toBe(true);
    expect(chats.some((e) => e.status === 500 && e.response_body?.includes('Mock error 500'))).toBe(true);
    expect(chats.some((e) => e.status === 401)).toBe(true);
    const proxied = logEntries.filter((e) => e.path === '/v1/models' && e.api_key_id === serviceKey.id);
    expect(proxied).toHaveLength(2);
    expect(proxied.every((e) => typeof e.response_body === 'string' && e.response_body.includes('/v1/models'))).toBe(true);
    const adminEntries = logEntries.filter((e) => typeof e.route === 'string' && e.route.startsWith('admin.'));
    expect(adminEntries.map((e) => e.route)).toEqual(expect.arrayContaining(['admin.integrations.create', 'admin.api_keys.create', 'admin.api_keys.rotate']));
    for (const e of adminEntries) {
      expect(e.request_body, e.route).toBeNull();
      expect(e.response_body, e.route).toBeNull();
    }

    expect(logTexts.length).toBe(logEntries.length + 2);
    for (const text of logTexts) {
      for (const [name, secret] of Object.entries({ ...UPSTREAM_SECRETS, ...gatewaySecrets, BOOTSTRAP_KEY })) {
        for (const form of encodings(secret)) expect(text.includes(form), `${name} in a stored log entry: ${text.slice(0, 2000)}`).toBe(false);
      }
    }
  });

  test('no pino line holds a secret', () => {
    const text = gw.logs.text();
    // Positive control: the request lines of the chats and the admin calls are there.
    const lines = gw.logs.lines().filter((l) => l.msg === 'request');
    expect(lines.filter((l) => l.route === 'chat.completions' && l.key_id === serviceKey.id).length).toBeGreaterThanOrEqual(8);
    expect(lines.some((l) => l.route === 'admin.integrations.create')).toBe(true);
    expect(lines.some((l) => l.route === 'admin.api_keys.rotate')).toBe(true);
    expect(lines.some((l) => l.route === 'chat.completions' && l.status === 500 && l.model === 'error-500')).toBe(true);
    for (const [name, secret] of Object.entries({ ...UPSTREAM_SECRETS, ...gatewaySecrets, BOOTSTRAP_KEY })) {
      for (const form of encodings(secret)) expect(text.includes(form), `${name} in the pino output`).toBe(false);
    }
  });

  test('the SQLite file holds no secret in clear, while holding the data around it', async () => {
    const check = async (when: string) => {
      const files = await databaseFiles();
      expect(files.map((f) => f.name)).toContain('gateway.db');
      const all = Buffer.concat(files.map((f) => f.bytes));
      // Positive controls: the integration row, the masked key beside the sealed one, a key hash, the stored log bodies.
      expect(all.includes('vault-openai-integration'), when).toBe(true);
      expect(all.includes(`****${INTEGRATION_KEY.slice(-4)}`), when).toBe(true);
      expect(all.includes(createHash('sha256').update(rotated.key).digest('hex')), when).toBe(true);
      expect(all.includes('say hello to the vault'), when).toBe(true);
      for (const [name, secret] of Object.entries({ ...UPSTREAM_SECRETS, ...gatewaySecrets, BOOTSTRAP_KEY })) {
        for (const form of encodings(secret)) expect(all.includes(form), `${name} (${form}) in the database files ${when}`).toBe(false);
      }
    };
    await check('while running');
    closed = true;
    await gw.close();
    await check('after close');
  });
});
