import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { BOOTSTRAP_KEY, startTestServer } from '../helpers/gateway.js';
import { startMockOpenAI, type MockUpstream } from '../mocks/openai-upstream.js';

/**
 * The trust boundaries between keys and between tenants, tried through the
 * real server as a hostile tenant would (issue: trust boundaries, defects 1-3):
 * a manager key cannot take an admin's key, a workspace cannot point the
 * operator's or another team's secret at a host of its choosing, and the
 * credentials in saved configs and stored guardrails are sealed at rest and
 * masked in every answer while requests still use them.
 */

type Json = Record<string, any>;
type Server_ = Awaited<ReturnType<typeof startTestServer>>;

let gw: Server_;
let mock: MockUpstream;
/** Requests the webhook guardrail endpoint received, with their headers. */
const hooks: IncomingHttpHeaders[] = [];
let hookServer: Server;
let hookUrl: string;

async function call(method: string, path: string, key: string | null, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: Json; text: string }> {
  const res = await fetch(`${gw.url}/v1${path}`, {
    method,
    headers: { ...(key === null ? {} : { 'x-gateway-api-key': key }), ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? {} : (JSON.parse(text) as Json), text };
}

async function ok(method: string, path: string, key: string, body?: unknown): Promise<Json> {
  const r = await call(method, path, key, body);
  expect(r.status, `${method} ${path}: ${r.text}`).toBe(200);
  return r.body;
}

const chat = (key: string, headers: Record<string, string>) => call('POST', '/chat/completions', key, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, headers);

const ids: Json = {};
const keys: Record<string, string> = {};

beforeAll(async () => {
  mock = await startMockOpenAI();
  hookServer = createServer((req, res) => {
    hooks.push(req.headers);
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"verdict":true}');
    });
  });
  await new Promise<void>((r) => hookServer.listen(0, '127.0.0.1', r));
  hookUrl = `http://127.0.0.1:${(hookServer.address() as AddressInfo).port}/hook`;
  gw = await startTestServer({ env: { GATEWAY_SECRET_TEAMB_OPENAI: 'sk-team-b-secret-0123456789abcdef' } });

  ids.ws = (await ok('POST', '/workspaces', BOOTSTRAP_KEY, { name: 'Team A', slug: 'team-a' })).id;
  // A manager key, as an organisation admin makes one without naming scopes: the manager role's defaults, api_keys.rotate among them.
  const manager = await ok('POST', '/api-keys', BOOTSTRAP_KEY, { type: 'workspace-service', name: 'ci', workspace_id: ids.ws });
  keys.manager = manager.key;
  ids.manager = manager.id;
  // A workspace-service key given every key and member scope: still a manager by its type.
  keys.keyAdmin = (await ok('POST', '/api-keys', BOOTSTRAP_KEY, { type: 'workspace-service', name: 'keys', workspace_id: ids.ws, scopes: ['api_keys.*', 'members.*', 'completions.write', 'logs.read', 'workspaces.read', 'providers.read', 'configs.read'] })).key;
  for (const [who, role] of [
    ['admin', 'admin'],
    ['member', 'member'],
  ] as const) {
    const m = await ok('POST', `/workspaces/${ids.ws}/members`, BOOTSTRAP_KEY, { email: `${who}@example.com`, role });
    const key = await ok('POST', '/api-keys', BOOTSTRAP_KEY, { type: 'workspace-user', name: `${who}'s key`, workspace_id: ids.ws, user_id: m.user_id });
    keys[who] = key.key;
    ids[who] = key.id;
    ids[`${who}User`] = m.user_id;
  }
});

afterAll(async () => {
  await gw?.close();
  await mock?.close();
  await new Promise((r) => hookServer?.close(r));
});

describe('a key never grants more than its caller holds', () => {
  test("a manager key cannot rotate, change or delete an admin's user key; the admin key and an organisation admin can", async () => {
    for (const [key, method, path, body] of [
      [keys.manager!, 'POST', `/api-keys/${ids.admin}/rotate`, undefined],
      [keys.keyAdmin!, 'POST', `/api-keys/${ids.admin}/rotate`, undefined],
      [keys.keyAdmin!, 'PUT', `/api-keys/${ids.admin}`, { status: 'disabled' }],
      [keys.keyAdmin!, 'DELETE', `/api-keys/${ids.admin}`, undefined],
    ] as const) {
      const r = await call(method, path, key, body);
      expect(r.status, `${method} ${path}`).toBe(403);
      expect(r.body.error).toMatchObject({ code: 'forbidden', type: 'permission_error', param: 'id' });
      expect(r.body.error.message).toMatch(/"admin" role/);
      expect(r.text).not.toMatch(/gwk-/);
    }
    // The admin's key still works: nothing was rotated or disabled.
    expect((await call('GET', '/workspaces', keys.admin!)).status).toBe(200);
    // Its own key may rotate itself, and an organisation admin may rotate it.
    const self = await ok('POST', `/api-keys/${ids.admin}/rotate`, keys.admin!);
    expect(self.key).toMatch(/^gwk-/);
    keys.admin = (await ok('POST', `/api-keys/${ids.admin}/rotate`, BOOTSTRAP_KEY)).key;
    expect((await call('GET', '/workspaces', keys.admin!)).status).toBe(200);
  });

  test("a manager key may act on a member's key (at most its own role, every scope held)", async () => {
    const rotated = await ok('POST', `/api-keys/${ids.member}/rotate`, keys.manager!);
    expect(rotated.key).toMatch(/^gwk-/);
    expect((await call('GET', '/configs', rotated.key)).status).toBe(200);
  });

  test("a manager key cannot make a key for an admin member, nor give the admin role, nor a scope it lacks", async () => {
    const forAdmin = await call('POST', '/api-keys', keys.keyAdmin!, { type: 'workspace-user', name: 'x', user_id: ids.adminUser });
    expect(forAdmin.status).toBe(403);
    expect(forAdmin.body.error).toMatchObject({ code: 'forbidden', param: 'user_id' });
    const promote = await call('PUT', `/workspaces/${ids.ws}/members/${ids.memberUser}`, keys.keyAdmin!, { role: 'admin' });
    expect(promote.status).toBe(403);
    expect(promote.body.error).toMatchObject({ code: 'forbidden', param: 'role' });
    const demote = await call('DELETE', `/workspaces/${ids.ws}/members/${ids.adminUser}`, keys.keyAdmin!);
    expect(demote.status).toBe(403);
    const wider = await call('POST', '/api-keys', keys.keyAdmin!, { type: 'workspace-service', name: 'x', scopes: ['integrations.*'] });
    expect(wider.status).toBe(403);
    expect(wider.body.error).toMatchObject({ code: 'forbidden', param: 'scopes' });
    expect(wider.body.error.message).toMatch(/integrations\.(create|read|update|delete)/);
    // Positive control: within its role and scopes it may act.
    expect((await call('POST', '/api-keys', keys.keyAdmin!, { type: 'workspace-user', name: 'x', user_id: ids.memberUser })).status).toBe(200);
  });
});

describe("a tenant cannot use another's secret", () => {
  test("a workspace integration naming the operator's or another team's env secret is refused; nothing is sent", async () => {
    const integration = (secret_reference: string) => ({
      name: 'mine',
      ai_provider_id: 'openai',
      configurations: { custom_host: mock.baseURL },
      secret_mappings: [{ target_field: 'key', secret_reference }],
      create_default_provider: true,
      default_provider_slug: 'stolen',
    });
    const before = mock.requests.length;
    // The workspace's admin key holds integrations.create.
    const r = await call('POST', '/integrations', keys.admin!, integration('env:GATEWAY_SECRET_TEAMB_OPENAI'));
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'invalid_request', param: 'secret_mappings[0].secret_reference' });
    expect(r.body.error.message).toMatch(/workspace/);
    // An organisation key making an integration for the workspace is held to the workspace's scope too.
    expect((await call('POST', '/integrations', BOOTSTRAP_KEY, { ...integration('env:GATEWAY_SECRET_TEAMB_OPENAI'), workspace_id: ids.ws })).status).toBe(400);
    // A file outside the workspace's folder cannot be reached either.
    expect((await call('POST', '/integrations', keys.admin!, integration('file:../team-b/openai'))).status).toBe(400);
    expect((await chat(keys.admin!, { 'x-gateway-provider': '@stolen' })).status).toBe(404);
    expect(mock.requests.length).toBe(before);
  });

  test('a mapping stored before references were scoped is refused when used, naming why, and the secret goes nowhere', async () => {
    const made = await ok('POST', '/integrations', keys.admin!, {
      name: 'legacy',
      ai_provider_id: 'openai',
      key: 'sk-team-a-own-key-0123456789',
      configurations: { custom_host: mock.baseURL },
      create_default_provider: true,
      default_provider_slug: 'legacy',
    });
    const db = new Database(join(gw.dataDir, 'gateway.db'));
    try {
      db.prepare('UPDATE cp_integrations SET secret_mappings = ? WHERE id = ?').run(JSON.stringify([{ target_field: 'key', secret_reference: 'env:GATEWAY_SECRET_TEAMB_OPENAI', value_format: 'string' }]), made.id);
    } finally {
      db.close();
    }
    await ok('PUT', `/integrations/${made.id}`, BOOTSTRAP_KEY, { name: 'legacy' }); // clears the cache
    const before = mock.requests.length;
    const r = await chat(keys.admin!, { 'x-gateway-provider': '@legacy' });
    expect(r.status).toBe(503);
    expect(r.body.error.message).toMatch(/workspace/);
    expect(r.text).not.toContain('sk-team-b-secret');
    expect(mock.requests.length).toBe(before);
  });

  test("a workspace integration reads its own folder's secrets", async () => {
    await mkdir(join(gw.dataDir, 'secrets', 'workspaces', 'team-a'), { recursive: true });
    await writeFile(join(gw.dataDir, 'secrets', 'workspaces', 'team-a', 'openai'), 'sk-team-a-from-file-0123456789\n');
    await ok('POST', '/integrations', keys.admin!, {
      name: 'own',
      ai_provider_id: 'openai',
      configurations: { custom_host: mock.baseURL },
      secret_mappings: [{ target_field: 'key', secret_reference: 'file:openai' }],
      create_default_provider: true,
      default_provider_slug: 'own',
    });
    expect((await chat(keys.admin!, { 'x-gateway-provider': '@own' })).status).toBe(200);
    expect(mock.requests.at(-1)!.headers.authorization).toBe('Bearer sk-team-a-from-file-0123456789');
  });
});

describe('stored credentials are sealed and masked', () => {
  const CONFIG_KEY = 'sk-saved-config-key-0123456789abcdef';
  const HOOK_TOKEN = 'Bearer hook-token-zebra-orchid-7741';

  test('a saved config with an inline api_key: masked on create, get, list and versions, sealed in the database, used by requests', async () => {
    const created = await ok('POST', '/configs', keys.admin!, { name: 'inline', slug: 'inline', config: { provider: 'openai', api_key: CONFIG_KEY, custom_host: mock.baseURL } });
    expect(created.config.api_key).toBe('****cdef');
    expect(created.config.custom_host).toBe(mock.baseURL);
    const answers = [
      created,
      await ok('GET', `/configs/${created.id}`, keys.member!),
      await ok('GET', '/configs', keys.member!),
      await ok('GET', `/configs/${created.id}/versions`, keys.member!),
    ];
    for (const a of answers) expect(JSON.stringify(a)).not.toContain(CONFIG_KEY);
    expect((await ok('GET', `/configs/${created.id}`, keys.member!)).config.api_key).toBe('****cdef');

    const r = await chat(keys.member!, { 'x-gateway-config': created.id });
    expect(r.status, r.text).toBe(200);
    expect(mock.requests.at(-1)!.headers.authorization).toBe(`Bearer ${CONFIG_KEY}`);

    // Written back as read (the mask in place of the key), a new version keeps the key.
    const got = await ok('GET', `/configs/${created.id}`, keys.admin!);
    const v2 = await ok('PUT', `/configs/${created.id}`, keys.admin!, { config: { ...got.config, override_params: { temperature: 0.5 } } });
    expect(v2.version).toBe(2);
    expect((await chat(keys.member!, { 'x-gateway-config': created.id })).status).toBe(200);
    expect(mock.requests.at(-1)!.headers.authorization).toBe(`Bearer ${CONFIG_KEY}`);
    // A mask that stands for nothing stored there is refused rather than saved as the key.
    const bad = await call('PUT', `/configs/${created.id}`, keys.admin!, { config: { provider: 'openai', api_key: '****zzzz', custom_host: mock.baseURL } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.param).toBe('config.api_key');
  });

  test("a stored guardrail's webhook headers: masked in every answer, sealed, sent to the webhook", async () => {
    const created = await ok('POST', '/guardrails', keys.admin!, { name: 'hook', slug: 'hook', 'default.webhook': { url: hookUrl, headers: { authorization: HOOK_TOKEN } }, deny: true });
    expect(created['default.webhook'].headers.authorization).toBe('****7741');
    for (const a of [created, await ok('GET', `/guardrails/${created.id}`, keys.member!), await ok('GET', '/guardrails', keys.member!), await ok('GET', `/guardrails/${created.id}/versions`, keys.member!)]) {
      expect(JSON.stringify(a)).not.toContain('zebra-orchid');
    }
    const r = await chat(keys.member!, { 'x-gateway-config': JSON.stringify({ provider: 'openai', api_key: 'sk-x', custom_host: mock.baseURL, input_guardrails: ['hook'] }) });
    expect(r.status, r.text).toBe(200);
    expect(hooks.at(-1)!.authorization).toBe(HOOK_TOKEN);
  });

  test('a config version stored before sealing: masked in answers, used by requests, sealed at the next start', async () => {
    const LEGACY_KEY = 'sk-legacy-plaintext-key-0123456789wxyz';
    const made = await ok('POST', '/configs', keys.admin!, { name: 'legacy', slug: 'legacy', config: { provider: 'openai', api_key: 'sk-placeholder-0123456789', custom_host: mock.baseURL } });
    const file = join(gw.dataDir, 'gateway.db');
    const db = new Database(file);
    try {
      // As the gateway wrote it before credentials were sealed: the key in clear, no sealed column value.
      db.prepare('UPDATE cp_config_versions SET body = ?, sealed = NULL WHERE config_id = ?').run(JSON.stringify({ provider: 'openai', api_key: LEGACY_KEY, custom_host: mock.baseURL }), made.id);
    } finally {
      db.close();
    }
    await ok('PUT', `/configs/${made.id}`, keys.admin!, { name: 'legacy' }); // clears the cache
    const got = await ok('GET', `/configs/${made.id}`, keys.member!);
    expect(got.config.api_key).toBe('****wxyz');
    expect(JSON.stringify(await ok('GET', `/configs/${made.id}/versions`, keys.member!))).not.toContain(LEGACY_KEY);
    expect((await chat(keys.member!, { 'x-gateway-config': made.id })).status).toBe(200);
    expect(mock.requests.at(-1)!.headers.authorization).toBe(`Bearer ${LEGACY_KEY}`);

    const dataDir = gw.dataDir;
    await gw.close();
    gw = await startTestServer({ env: { GATEWAY_DATA_DIR: dataDir } });
    const check = new Database(file, { readonly: true });
    try {
      const row = check.prepare('SELECT body, sealed FROM cp_config_versions WHERE config_id = ?').get(made.id) as { body: string; sealed: string | null };
      expect(row.sealed).toMatch(/^v1:/);
      expect(row.body).not.toContain(LEGACY_KEY);
    } finally {
      check.close();
    }
    expect((await chat(keys.member!, { 'x-gateway-config': made.id })).status).toBe(200);
    expect(mock.requests.at(-1)!.headers.authorization).toBe(`Bearer ${LEGACY_KEY}`);
  });

  test('no credential is in clear in the database', async () => {
    const bytes = await readFile(join(gw.dataDir, 'gateway.db'));
    const wal = await readFile(join(gw.dataDir, 'gateway.db-wal')).catch(() => Buffer.alloc(0));
    for (const secret of [CONFIG_KEY, 'zebra-orchid']) {
      expect(bytes.includes(secret)).toBe(false);
      expect(wal.includes(secret)).toBe(false);
    }
    // Positive control: the database does hold the configs' clear fields.
    expect(Buffer.concat([bytes, wal]).includes(mock.baseURL)).toBe(true);
  });
});

describe('smaller holes', () => {
  test('scope before input: a key without the scope gets 403 whatever its body or query says', async () => {
    const narrow = (await ok('POST', '/api-keys', BOOTSTRAP_KEY, { type: 'workspace-service', name: 'narrow', workspace_id: ids.ws, scopes: ['logs.read'] })).key;
    for (const [method, path, body, rawBody] of [
      ['POST', '/fine_tuning/jobs', { nonsense: true }, undefined],
      ['POST', '/fine_tuning/jobs', undefined, '{not json'],
      ['GET', '/fine_tuning/jobs?limit=banana', undefined, undefined],
      ['POST', '/configs', { bogus: 1 }, undefined],
      ['POST', '/api-keys', undefined, '[1,2'],
      ['POST', '/batches', { bogus: 1 }, undefined],
      ['POST', '/a2a/unknown', undefined, 'not json-rpc'],
    ] as const) {
      const res = await fetch(`${gw.url}/v1${path}`, {
        method,
        headers: { 'x-gateway-api-key': narrow, 'content-type': 'application/json' },
        body: rawBody ?? (body === undefined ? undefined : JSON.stringify(body)),
      });
      const text = await res.text();
      expect(res.status, `${method} ${path}: ${text}`).toBe(403);
      expect(text).toMatch(/scope/);
    }
  });

  test('a stored custom_host or webhook URL on a refused address is refused when written, naming the field', async () => {
    const refused = 'http://127.0.0.2:9/v1'; // loopback, not on the test server's allow-list
    const config = await call('POST', '/configs', keys.admin!, { name: 'x', config: { strategy: { mode: 'fallback' }, targets: [{ provider: 'openai', api_key: 'sk-x', custom_host: mock.baseURL }, { provider: 'openai', api_key: 'sk-y', custom_host: refused }] } });
    expect(config.status).toBe(400);
    expect(config.body.error).toMatchObject({ code: 'host_not_allowed', param: 'config.targets[1].custom_host' });
    const hook = await call('POST', '/configs', keys.admin!, { name: 'x', config: { provider: 'openai', api_key: 'sk-x', input_guardrails: [{ 'default.webhook': { url: 'http://127.0.0.2:9/h' } }] } });
    expect(hook.status).toBe(400);
    expect(hook.body.error).toMatchObject({ code: 'host_not_allowed', param: "config.input_guardrails[0].default.webhook.url" });
    const guardrail = await call('POST', '/guardrails', keys.admin!, { name: 'x', 'default.webhook': { url: refused } });
    expect(guardrail.status).toBe(400);
    expect(guardrail.body.error.code).toBe('host_not_allowed');
    const integration = await call('POST', '/integrations', keys.admin!, { name: 'x', ai_provider_id: 'openai', key: 'sk-x', configurations: { custom_host: refused } });
    expect(integration.status).toBe(400);
    expect(integration.body.error).toMatchObject({ code: 'host_not_allowed', param: 'configurations.custom_host' });
  });

  test('/metrics shows organisation-wide counters to organisation-level keys only', async () => {
    const wsMetrics = (await ok('POST', '/api-keys', BOOTSTRAP_KEY, { type: 'workspace-service', name: 'prom', workspace_id: ids.ws, scopes: ['metrics.read'] })).key;
    const denied = await fetch(`${gw.url}/metrics`, { headers: { 'x-gateway-api-key': wsMetrics } });
    expect(denied.status).toBe(403);
    const body = (await denied.json()) as Json;
    expect(body.error).toMatchObject({ code: 'forbidden' });
    expect(body.error.message).toMatch(/organisation-level/);
    const org = (await ok('POST', '/api-keys', BOOTSTRAP_KEY, { type: 'organisation-service', name: 'prom', scopes: ['metrics.read'] })).key;
    const allowed = await fetch(`${gw.url}/metrics`, { headers: { 'x-gateway-api-key': org } });
    expect(allowed.status).toBe(200);
    expect(await allowed.text()).toMatch(/gateway_requests_total/);
  });

  test('a key in a custom host\'s query string is not stored in the log', async () => {
    const SECRET = 'plainkey-quokka-3141-lantern';
    // (Whatever the upstream answers is its own; what the gateway keeps is checked here.)
    await chat(keys.member!, { 'x-gateway-provider': 'openai', authorization: 'Bearer sk-x', 'x-gateway-custom-host': `${mock.baseURL}?key=${SECRET}`, 'x-gateway-trace-id': 'query-key-trace' });
    let entry: Json | undefined;
    for (let i = 0; i < 100 && entry === undefined; i++) {
      const list = await ok('GET', '/logs?trace_id=query-key-trace', BOOTSTRAP_KEY);
      entry = list.data[0];
      if (entry === undefined) await new Promise((r) => setTimeout(r, 50));
    }
    expect(entry).toBeDefined();
    const full = await ok('GET', `/logs/${entry!.id}`, BOOTSTRAP_KEY);
    expect(full.request_headers['x-gateway-custom-host']).toBe(`${mock.baseURL}?key=[REDACTED]`);
    expect(JSON.stringify(full)).not.toContain(SECRET);
    const bytes = Buffer.concat([await readFile(join(gw.dataDir, 'gateway.db')), await readFile(join(gw.dataDir, 'gateway.db-wal')).catch(() => Buffer.alloc(0))]);
    expect(bytes.includes(SECRET)).toBe(false);
    expect(gw.logs.text()).not.toContain(SECRET);
  });
});
