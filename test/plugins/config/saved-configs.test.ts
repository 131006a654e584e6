import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { GatewayPlugin } from '../../../core/index.js';
import { breaker } from '../../../plugins/breaker/index.js';
import { config } from '../../../plugins/config/index.js';
import { controlPlane } from '../../../plugins/control-plane/index.js';
import { providerHeaders } from '../../../plugins/provider-headers/index.js';
import { providerRegistry } from '../../../plugins/provider-registry/index.js';
import { openai } from '../../../plugins/providers/openai/index.js';
import { postgresStore } from '../../../plugins/stores/postgres/index.js';
import { sqliteStore } from '../../../plugins/stores/sqlite/index.js';
import { serveGateway } from '../../helpers/serve.js';
import { DATABASE_URL, dropSchema, requireService, uniqueSchema } from '../../helpers/services.js';
import { startMockOpenAI, type MockUpstream } from '../../mocks/openai-upstream.js';

/*
 * Saved configs of workspaces (the config plugin's, with the control plane
 * loaded): their admin routes' scopes, tenant isolation, validation, versions,
 * and their resolution on the request path (`x-gateway-config: <id or slug>`).
 * Moved from the control plane's admin API tests.
 */

const ADMIN = 'admin-bootstrap-key-0123456789';

type Json = Record<string, any>;
interface Reply {
  status: number;
  body: Json;
}

/** One gateway on a store: identity, saved configs, a provider slug through an integration. */
async function startGateway(store: () => GatewayPlugin, dataDir: string) {
  return serveGateway({
    plugins: [
      store(),
      controlPlane({ bootstrapKey: ADMIN, dataDir, announce: () => undefined }),
      config(),
      providerHeaders(),
      providerRegistry(),
      breaker(), // declares cb_config, which saved configs in these tests use
      openai({}),
    ],
  });
}

function suite(name: string, makeStore: () => Promise<(() => GatewayPlugin) | null>) {
  describe(`saved configs on ${name}`, () => {
    let store: (() => GatewayPlugin) | null = null;
    let gw: Awaited<ReturnType<typeof startGateway>>;
    let mock: MockUpstream;

    // Fixture: workspaces A and B, each with an admin-like workspace key, and A's resources.
    const ids: Json = {};
    const keys: Record<string, string> = {};

    const call = async (method: string, path: string, key: string | null, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> => {
      const res = await fetch(`${gw.url}/v1${path}`, {
        method,
        headers: { ...(key === null ? {} : { 'x-gateway-api-key': key }), ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, body: text === '' ? {} : JSON.parse(text) };
    };
    const expectOk = async (p: Promise<Reply>) => {
      const r = await p;
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body;
    };
    const chat = (key: string, headers: Record<string, string> = {}) =>
      call('POST', '/chat/completions', key, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, headers);

    beforeAll(async () => {
      store = await makeStore();
      if (store === null) return;
      mock = await startMockOpenAI();
      gw = await startGateway(store, await mkdtemp(join(tmpdir(), 'gw-cfg-')));
      await gw.gateway.ready;

      ids.A = (await expectOk(call('POST', '/workspaces', ADMIN, { name: 'Team A', slug: 'team-a' }))).id;
      ids.B = (await expectOk(call('POST', '/workspaces', ADMIN, { name: 'Team B', slug: 'team-b' }))).id;
      for (const ws of ['A', 'B']) {
        const key = await expectOk(call('POST', '/api-keys', ADMIN, { type: 'workspace-service', name: `${ws} admin`, workspace_id: ids[ws], scopes: ['integrations.*', 'providers.*', 'configs.*', 'completions.write'] }));
        keys[ws] = key.key;
      }
      keys.bare = (await expectOk(call('POST', '/api-keys', ADMIN, { type: 'workspace-service', name: 'no scopes', workspace_id: ids.A, scopes: ['completions.write'] }))).key;
      await expectOk(
        call('POST', '/integrations', keys.A!, { name: 'OpenAI A', slug: 'openai-a', ai_provider_id: 'openai', key: 'sk-integration-a-0123456789', configurations: { custom_host: mock.baseURL }, create_default_provider: true, default_provider_slug: 'oa' }),
      );
      ids.config = (await expectOk(call('POST', '/configs', keys.A!, { name: 'A config', slug: 'a-config', config: { provider: '@oa' } }))).id;
    });

    afterAll(async () => {
      if (store === null) return;
      await gw?.close();
      await mock?.close();
    });

    const skip = () => store === null;

    /** Every route: the scope it needs. A key holding only completions.write gets a 403 naming it. */
    const ROUTES: Array<[string, string, string, unknown?]> = [
      ['POST', '/configs', 'configs.create', { name: 'x', config: {} }],
      ['GET', '/configs', 'configs.read'],
      ['GET', '/configs/:config', 'configs.read'],
      ['GET', '/configs/:config/versions', 'configs.read'],
      ['PUT', '/configs/:config', 'configs.update', {}],
      ['DELETE', '/configs/:config', 'configs.delete'],
    ];
    const fill = (path: string) => path.replace(/:(\w+)/g, (_m, k: string) => ids[k]);

    test.each(ROUTES)('%s %s without its scope is a 403 naming %s', async (method, path, scope, body) => {
      if (skip()) return;
      const r = await call(method, fill(path), keys.bare!, body);
      expect(r.status).toBe(403);
      expect(r.body.error).toMatchObject({ code: 'forbidden', type: 'permission_error' });
      expect(r.body.error.message).toContain(`"${scope}"`);
    });

    /** Another workspace's config: 404, never its data. */
    const FOREIGN: Array<[string, string, unknown?]> = [
      ['POST', '/configs', { name: 'x', config: { provider: '@oa' }, workspace_id: ':A' }],
      ['GET', '/configs/:config'],
      ['GET', '/configs/:config/versions'],
      ['PUT', '/configs/:config', { name: 'stolen' }],
      ['DELETE', '/configs/:config'],
    ];

    test.each(FOREIGN)("%s %s on workspace A's resource with B's key is refused", async (method, path, body) => {
      if (skip()) return;
      const filled = body === undefined ? undefined : JSON.parse(fill(JSON.stringify(body)));
      const r = await call(method, fill(path), keys.B!, filled);
      expect([403, 404]).toContain(r.status);
      expect(JSON.stringify(r.body)).not.toContain('sk-integration-a');
      if (r.status === 404) expect(r.body.error.code).toBe('not_found');
    });

    test("lists show only the caller's workspace", async () => {
      if (skip()) return;
      expect((await expectOk(call('GET', '/configs', keys.B!))).data).toEqual([]);
      expect((await expectOk(call('GET', `/configs/${ids.config}`, keys.A!))).name).toBe('A config');
    });

    /** Validation: each bad input is a 400 whose param names the field. */
    const INVALID: Array<[string, string, unknown, string]> = [
      ['POST', '/configs', { name: 'x', config: { provider: 'openai', api_key: 'k', cb_config: { failure_threshold: 1, cooldown_interval: 10 } } }, 'config.cb_config.cooldown_interval'],
      ['PUT', '/configs/:config', { config: { strategy: { mode: 'fallback' } } }, 'config.targets'],
    ];

    test.each(INVALID)('%s %s with %j is refused naming %s', async (method, path, body, param) => {
      if (skip()) return;
      const r = await call(method, fill(path), ADMIN, body);
      expect([400, 404]).toContain(r.status);
      expect(r.body.error.param).toBe(param);
      if (r.status === 400) expect(r.body.error.type).toBe('invalid_request_error');
    });

    test('a duplicate slug is a 409', async () => {
      if (skip()) return;
      const r = await call('POST', '/configs', keys.A!, { name: 'again', slug: 'a-config', config: { provider: '@oa' } });
      expect(r.status).toBe(409);
      expect(r.body.error).toMatchObject({ code: 'conflict', param: 'slug' });
    });

    test('configs: CRUD, versions, and resolution on the request path', async () => {
      if (skip()) return;
      expect((await chat(keys.A!, { 'x-gateway-config': ids.config })).status).toBe(200);
      expect((await chat(keys.A!, { 'x-gateway-config': 'a-config' })).status).toBe(200); // by slug too
      expect((await chat(keys.B!, { 'x-gateway-config': ids.config })).status).toBe(404);

      const cfg = await expectOk(call('PUT', `/configs/${ids.config}`, keys.A!, { config: { provider: '@oa', override_params: { model: 'gpt-4o' } } }));
      expect(cfg.version).toBe(2);
      expect((await chat(keys.A!, { 'x-gateway-config': ids.config })).status).toBe(200);
      expect(JSON.parse(mock.requests.at(-1)!.body).model).toBe('gpt-4o'); // the new version at once on this instance
      const versions = await expectOk(call('GET', `/configs/${ids.config}/versions`, keys.A!));
      expect(versions.data.map((v: Json) => v.version)).toEqual([2, 1]);
      expect(versions.data[1].config).toEqual({ provider: '@oa' });
      expect((await expectOk(call('PUT', `/configs/${ids.config}`, keys.A!, { name: 'renamed' }))).version).toBe(2);
    });
  });
}

test('with the admin API off (the control plane\'s routes: false), the routes answer as if they were not there', async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'gw-cfg-off-'));
  const gw = await serveGateway({ plugins: [sqliteStore({ dataDir }), controlPlane({ bootstrapKey: ADMIN, dataDir, routes: false, announce: () => undefined }), config(), openai({})] });
  try {
    await gw.gateway.ready;
    const res = await fetch(`${gw.url}/v1/configs`, { headers: { 'x-gateway-api-key': ADMIN } });
    expect(res.status).toBe(404);
    expect((await res.json()).error.message).toBe('Unknown route GET /v1/configs.');
  } finally {
    await gw.close();
  }
});

suite('sqlite', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'gw-cfg-sqlite-'));
  return () => sqliteStore({ file: join(dir, 'gateway.db') });
});

const schema = uniqueSchema('cfg');
suite('postgres', async () => {
  if (!(await requireService('PostgreSQL', DATABASE_URL))) return null;
  return () => postgresStore({ url: DATABASE_URL, schema });
});

afterAll(async () => {
  if (await requireService('PostgreSQL', DATABASE_URL).catch(() => false)) await dropSchema(schema);
});
