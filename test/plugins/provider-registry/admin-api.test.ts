import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { GatewayPlugin } from '../../../core/index.js';
import { config } from '../../../plugins/config/index.js';
import { controlPlane } from '../../../plugins/control-plane/index.js';
import { providerHeaders } from '../../../plugins/provider-headers/index.js';
import { providerRegistry } from '../../../plugins/provider-registry/index.js';
import { openai } from '../../../plugins/providers/openai/index.js';
import { bedrock } from '../../../plugins/providers/bedrock/index.js';
import { postgresStore } from '../../../plugins/stores/postgres/index.js';
import { sqliteStore } from '../../../plugins/stores/sqlite/index.js';
import { serveGateway } from '../../helpers/serve.js';
import { DATABASE_URL, dropSchema, requireService, uniqueSchema } from '../../helpers/services.js';
import { startMockOpenAI, type MockUpstream } from '../../mocks/openai-upstream.js';

/*
 * The admin routes of integrations, provider slugs and `GET /v1/models` (the
 * provider-registry plugin's, in the control plane's store), and slugs
 * resolved on the request path, on SQLite and PostgreSQL.
 */

const ADMIN = 'admin-bootstrap-key-0123456789';
const START = Date.parse('2026-01-05T00:00:00Z');

type Json = Record<string, any>;
interface Reply {
  status: number;
  body: Json;
  headers: Headers;
}

/** One gateway on a store, with a fake clock shared by the tests of the suite. */
async function startGateway(store: () => GatewayPlugin, clock: { now: number }, dataDir: string, upstream: string) {
  return serveGateway({
    plugins: [
      store(),
      controlPlane({ bootstrapKey: ADMIN, dataDir, now: () => clock.now, announce: () => undefined }),
      config(),
      providerHeaders(),
      providerRegistry({ dataDir }),
      openai({}),
      bedrock({}),
    ],
  }).then((gw) => ({ ...gw, upstream }));
}

function suite(name: string, makeStore: () => Promise<(() => GatewayPlugin) | null>) {
  describe(`integrations, provider slugs and models on ${name}`, () => {
    const clock = { now: START };
    let store: (() => GatewayPlugin) | null = null;
    let gw: Awaited<ReturnType<typeof startGateway>>;
    let mock: MockUpstream;
    let dataDir: string;

    // Fixture: workspaces A and B, each with an admin-like workspace key, and A's integration with its slug @oa.
    const ids: Json = {};
    const keys: Record<string, string> = {};

    const call = async (method: string, path: string, key: string | null, body?: unknown, headers: Record<string, string> = {}, url = gw.url): Promise<Reply> => {
      const res = await fetch(`${url}/v1${path}`, {
        method,
        headers: { ...(key === null ? {} : { 'x-gateway-api-key': key }), ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, body: text === '' ? {} : JSON.parse(text), headers: res.headers };
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
      dataDir = await mkdtemp(join(tmpdir(), 'gw-pr-'));
      mock = await startMockOpenAI();
      gw = await startGateway(store, clock, dataDir, mock.baseURL);
      await gw.gateway.ready;

      ids.A = (await expectOk(call('POST', '/workspaces', ADMIN, { name: 'Team A', slug: 'team-a' }))).id;
      ids.B = (await expectOk(call('POST', '/workspaces', ADMIN, { name: 'Team B', slug: 'team-b' }))).id;
      for (const ws of ['A', 'B']) {
        const key = await expectOk(call('POST', '/api-keys', ADMIN, { type: 'workspace-service', name: `${ws} admin`, workspace_id: ids[ws], scopes: ['workspaces.*', 'members.*', 'api_keys.*', 'integrations.*', 'providers.*', 'configs.*', 'completions.write', 'logs.read', 'agents.invoke'] }));
        keys[ws] = key.key;
        ids[`key${ws}`] = key.id;
      }
      const bare = await expectOk(call('POST', '/api-keys', ADMIN, { type: 'workspace-service', name: 'no scopes', workspace_id: ids.A, scopes: ['completions.write'] }));
      keys.bare = bare.key;
      const integration = await expectOk(
        call('POST', '/integrations', keys.A!, { name: 'OpenAI A', slug: 'openai-a', ai_provider_id: 'openai', key: 'sk-integration-a-0123456789', configurations: { custom_host: mock.baseURL }, create_default_provider: true, default_provider_slug: 'oa' }),
      );
      ids.integration = integration.id;
      ids.provider = integration.default_provider.id;
    });

    afterAll(async () => {
      if (store === null) return;
      await gw?.close();
      await mock?.close();
    });

    const skip = () => store === null;

    /** Every route: the scope it needs. A key holding only completions.write gets a 403 naming it. */
    const ROUTES: Array<[string, string, string | null, unknown?]> = [
      ['POST', '/integrations', 'integrations.create', { name: 'x', ai_provider_id: 'openai' }],
      ['GET', '/integrations', 'integrations.read'],
      ['GET', '/integrations/:integration', 'integrations.read'],
      ['PUT', '/integrations/:integration', 'integrations.update', {}],
      ['DELETE', '/integrations/:integration', 'integrations.delete'],
      ['GET', '/integrations/:integration/integration-models', 'integrations.read'],
      ['PUT', '/integrations/:integration/integration-models', 'integrations.update', { models: [] }],
      ['POST', '/providers', 'providers.create', { name: 'x', integration_id: 'x' }],
      ['GET', '/providers', 'providers.read'],
      ['GET', '/providers/:provider', 'providers.read'],
      ['PUT', '/providers/:provider', 'providers.update', {}],
      ['DELETE', '/providers/:provider', 'providers.delete'],
      ['GET', '/models', null],
    ];
    const fill = (path: string) => path.replace(/:(\w+)/g, (_m, k: string) => ids[k]);

    test.each(ROUTES)('%s %s without its scope is a 403 naming %s', async (method, path, scope, body) => {
      if (skip()) return;
      const r = await call(method, fill(path), keys.bare!, body);
      if (scope === null) {
        expect(r.status).toBe(200); // every workspace role may list models
        return;
      }
      expect(r.status).toBe(403);
      expect(r.body.error).toMatchObject({ code: 'forbidden', type: 'permission_error' });
      expect(r.body.error.message).toContain(`"${scope}"`);
    });

    /** Another workspace's resource: 404 (or 403 for organisation-only routes), never its data. */
    const FOREIGN: Array<[string, string, unknown?]> = [
      ['POST', '/integrations', { name: 'x', ai_provider_id: 'openai', workspace_id: ':A' }],
      ['GET', '/integrations/:integration'],
      ['PUT', '/integrations/:integration', { name: 'stolen' }],
      ['DELETE', '/integrations/:integration'],
      ['GET', '/integrations/:integration/integration-models'],
      ['PUT', '/integrations/:integration/integration-models', { models: [] }],
      ['POST', '/providers', { name: 'x', integration_id: ':integration' }],
      ['GET', '/providers/:provider'],
      ['PUT', '/providers/:provider', { name: 'stolen' }],
      ['DELETE', '/providers/:provider'],
      ['GET', '/models?workspace_id=:A'],
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
      const asB = async (path: string) => (await expectOk(call('GET', path, keys.B!))).data as Json[];
      expect((await asB('/integrations')).find((i) => i.id === ids.integration)).toBeUndefined();
      expect(await asB('/providers')).toEqual([]);
      const models = await expectOk(call('GET', '/models', keys.B!));
      expect(models).toMatchObject({ object: 'list', total_count: 0, data: [] });
      // A's resources are all still there: the refusals above changed nothing.
      expect((await expectOk(call('GET', `/integrations/${ids.integration}`, keys.A!))).name).toBe('OpenAI A');
    });

    /** Validation: each bad input is a 400 whose param names the field. */
    const INVALID: Array<[string, string, unknown, string]> = [
      ['POST', '/integrations', { name: 'x', ai_provider_id: 'nope-ai' }, 'ai_provider_id'],
      ['POST', '/integrations', { name: 'x', ai_provider_id: 'openai', configurations: { custom_host: 'ftp://x' } }, 'configurations'],
      ['POST', '/integrations', { name: 'x', ai_provider_id: 'openai', pricing_adjustments: { multiplier: 0 } }, 'pricing_adjustments.multiplier'],
      ['POST', '/integrations', { name: 'x', ai_provider_id: 'openai', secret_mappings: [{ target_field: 'key', secret_reference: 'env:DATABASE_URL' }] }, 'secret_mappings[0].secret_reference'],
      ['POST', '/integrations', { name: 'x', ai_provider_id: 'openai', secret_mappings: [{ target_field: 'key', secret_reference: 'file:../../etc/passwd' }] }, 'secret_mappings[0].secret_reference'],
      ['POST', '/integrations', { name: 'x', ai_provider_id: 'openai', secret_mappings: [{ target_field: 'key', secret_reference: 'env:GATEWAY_SECRET_X', value_format: 'yaml' }] }, 'secret_mappings[0].value_format'],
      ['PUT', '/integrations/:integration/integration-models', { models: [{ slug: 'gpt-4o', configurations: {} }] }, 'models[0].configurations'],
      ['PUT', '/integrations/:integration/integration-models', { models: [{ slug: 'gpt-4o', configurations: { custom_host: 'not a url' } }] }, 'models[0].configurations.custom_host'],
      ['POST', '/providers', { name: 'x' }, 'integration_id'],
      ['POST', '/providers', { name: 'x', integration_id: 'no-such-integration' }, 'integration_id'],
      ['GET', '/models?current_page=-1', undefined, 'current_page'],
    ];

    test.each(INVALID)('%s %s with %j is refused naming %s', async (method, path, body, param) => {
      if (skip()) return;
      const r = await call(method, fill(path), ADMIN, body);
      expect([400, 404]).toContain(r.status);
      expect(r.body.error.param).toBe(param);
      if (r.status === 400) expect(r.body.error.type).toBe('invalid_request_error');
    });

    test('integrations: secrets masked, updates keep unsent credentials, models replace the list, delete refused while used', async () => {
      if (skip()) return;
      const i = await expectOk(
        call('POST', '/integrations', keys.A!, {
          name: 'Bedrock',
          slug: 'bedrock-a',
          ai_provider_id: 'bedrock',
          configurations: { aws_region: 'eu-west-1', aws_access_key_id: 'AKIAABCDEFGHIJKLMNOP', aws_secret_access_key: 'secret-access-key-abcdefgh' },
          pricing_adjustments: { multiplier: 1.5 },
          secret_mappings: [{ target_field: 'configurations.aws_session_token', secret_reference: 'file:aws/session', value_format: 'string' }],
        }),
      );
      expect(i).toMatchObject({ object: 'integration', ai_provider_id: 'bedrock', workspace_id: ids.A, masked_key: null, pricing_adjustments: { multiplier: 1.5 } });
      expect(i.configurations).toEqual({ aws_region: 'eu-west-1', aws_access_key_id: '****MNOP', aws_secret_access_key: '****efgh' });
      expect(i.secret_mappings).toEqual([{ target_field: 'configurations.aws_session_token', secret_reference: 'file:aws/session', value_format: 'string' }]);
      const upd = await expectOk(call('PUT', `/integrations/${i.id}`, keys.A!, { name: 'Bedrock EU' }));
      expect(upd.configurations.aws_secret_access_key).toBe('****efgh');
      const models = await expectOk(
        call('PUT', `/integrations/${i.id}/integration-models`, keys.A!, { models: [{ slug: 'anthropic.claude', configurations: { custom_host: 'https://bedrock.internal/x' } }, { slug: 'off', enabled: false }] }),
      );
      expect(models.data).toEqual([
        { object: 'integration-model', slug: 'anthropic.claude', enabled: true, configurations: { custom_host: 'https://bedrock.internal/x' } },
        { object: 'integration-model', slug: 'off', enabled: false, configurations: {} },
      ]);
      expect((await expectOk(call('GET', `/integrations/${i.id}/integration-models`, keys.A!))).total_count).toBe(2);
      const p = await expectOk(call('POST', '/providers', keys.A!, { name: 'br', slug: 'br', integration_id: i.id }));
      const refused = await call('DELETE', `/integrations/${i.id}`, keys.A!);
      expect(refused.status).toBe(409);
      await expectOk(call('DELETE', `/providers/${p.id}`, keys.A!));
      await expectOk(call('DELETE', `/integrations/${i.id}`, keys.A!));
      expect((await call('GET', `/integrations/${i.id}`, keys.A!)).status).toBe(404);
    });

    test('secret mappings: the key read from an env variable or a file in the secrets directory, at request time', async () => {
      if (skip()) return;
      process.env.GATEWAY_SECRET_TEST_OPENAI = 'sk-from-env-0123456789';
      await mkdir(join(dataDir, 'secrets'), { recursive: true });
      await writeFile(join(dataDir, 'secrets', 'org.txt'), 'org-from-file\n');
      // Environment variables and the top of the secrets directory are the operator's: an organisation-wide integration.
      const i = await expectOk(
        call('POST', '/integrations', ADMIN, {
          name: 'mapped',
          ai_provider_id: 'openai',
          configurations: { custom_host: mock.baseURL },
          secret_mappings: [
            { target_field: 'key', secret_reference: 'env:GATEWAY_SECRET_TEST_OPENAI' },
            { target_field: 'configurations.openai_organization', secret_reference: 'file:org.txt', value_format: 'string' },
          ],
        }),
      );
      expect(i.workspace_id).toBeNull();
      expect(i.masked_key).toBeNull();
      await expectOk(call('POST', '/providers', keys.A!, { name: 'mapped', slug: 'mapped', integration_id: i.id }));
      expect((await chat(keys.A!, { 'x-gateway-provider': '@mapped' })).status).toBe(200);
      expect(mock.requests.at(-1)!.headers.authorization).toBe('Bearer sk-from-env-0123456789');
      expect(mock.requests.at(-1)!.headers['openai-organization']).toBe('org-from-file');
      // A workspace's integration reads files from the workspace's own folder, never the operator's.
      await mkdir(join(dataDir, 'secrets', 'workspaces', 'team-a'), { recursive: true });
      await writeFile(join(dataDir, 'secrets', 'workspaces', 'team-a', 'org.txt'), 'org-of-team-a\n');
      const own = await expectOk(
        call('POST', '/integrations', keys.A!, {
          name: 'mapped-a',
          ai_provider_id: 'openai',
          key: 'sk-team-a-own-0123456789',
          configurations: { custom_host: mock.baseURL },
          secret_mappings: [{ target_field: 'configurations.openai_organization', secret_reference: 'file:org.txt' }],
          create_default_provider: true,
          default_provider_slug: 'mapped-a',
        }),
      );
      expect(own.workspace_id).toBe(ids.A);
      expect((await chat(keys.A!, { 'x-gateway-provider': '@mapped-a' })).status).toBe(200);
      expect(mock.requests.at(-1)!.headers['openai-organization']).toBe('org-of-team-a');
      // A missing secret is a 503 naming the reference, not the value.
      delete process.env.GATEWAY_SECRET_TEST_OPENAI;
      clock.now += 10_001; // past the cache TTL
      const r = await chat(keys.A!, { 'x-gateway-provider': '@mapped' });
      expect(r.status).toBe(503);
      expect(r.body.error.message).toContain('env:GATEWAY_SECRET_TEST_OPENAI');
    });

    test('integration models: a disabled model is refused through the slug; a per-model host applies to override_params.model too', async () => {
      if (skip()) return;
      const other = await startMockOpenAI();
      try {
        await expectOk(
          call('PUT', `/integrations/${ids.integration}/integration-models`, keys.A!, { models: [{ slug: 'gpt-off', enabled: false }, { slug: 'gpt-special', configurations: { custom_host: other.baseURL } }] }),
        );
        const off = await call('POST', '/chat/completions', keys.A!, { model: 'gpt-off', messages: [{ role: 'user', content: 'hi' }] }, { 'x-gateway-provider': '@oa' });
        expect(off.status).toBe(403);
        expect(off.body.error).toMatchObject({ param: 'model' });
        expect(off.body.error.message).toMatch(/disabled for provider @oa/);
        const viaConfig = await chat(keys.A!, { 'x-gateway-config': JSON.stringify({ provider: '@oa', override_params: { model: 'gpt-special' } }) });
        expect(viaConfig.status).toBe(200);
        expect(other.requests).toHaveLength(1);
        expect((await chat(keys.A!, { 'x-gateway-provider': '@oa' })).status).toBe(200);
        expect(other.requests).toHaveLength(1);
      } finally {
        await expectOk(call('PUT', `/integrations/${ids.integration}/integration-models`, keys.A!, { models: [] }));
        await other.close();
      }
    });

    test('another encryption key: the request path says the credentials cannot be decrypted; replacing key and configurations recovers', async () => {
      if (skip()) return;
      const otherDir = await mkdtemp(join(tmpdir(), 'gw-cp-otherkey-'));
      const second = await startGateway(store!, clock, otherDir, mock.baseURL);
      try {
        await second.gateway.ready;
        const i = await expectOk(call('POST', '/integrations', keys.A!, { name: 'rekey', ai_provider_id: 'openai', key: 'sk-rekey-0123456789', configurations: { custom_host: mock.baseURL }, create_default_provider: true, default_provider_slug: 'rekey' }));
        const broken = await call('POST', '/chat/completions', keys.A!, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, { 'x-gateway-provider': '@rekey' }, second.url);
        expect(broken.status).toBe(503);
        expect(broken.body.error.message).toMatch(/cannot be decrypted/);
        expect((await call('PUT', `/integrations/${i.id}`, keys.A!, { name: 'renamed' }, {}, second.url)).status).toBe(200);
        const half = await call('PUT', `/integrations/${i.id}`, keys.A!, { key: 'sk-rekey-new-0123456789' }, {}, second.url);
        expect(half.status).toBe(409);
        expect(half.body.error.message).toMatch(/send both "key" and "configurations"/);
        await expectOk(call('PUT', `/integrations/${i.id}`, keys.A!, { key: 'sk-rekey-new-0123456789', configurations: { custom_host: mock.baseURL } }, {}, second.url));
        const fixed = await call('POST', '/chat/completions', keys.A!, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, { 'x-gateway-provider': '@rekey' }, second.url);
        expect(fixed.status).toBe(200);
        expect(mock.requests.at(-1)!.headers.authorization).toBe('Bearer sk-rekey-new-0123456789');
      } finally {
        await second.close();
      }
    });

    test('organisation-wide integrations are visible to workspaces, changeable only by organisation keys', async () => {
      if (skip()) return;
      const shared = await expectOk(call('POST', '/integrations', ADMIN, { name: 'Shared', slug: 'shared-openai', ai_provider_id: 'openai', key: 'sk-shared-0123456789abcdef', configurations: { custom_host: mock.baseURL } }));
      expect(shared.workspace_id).toBeNull();
      expect(shared.masked_key).toBe('****cdef');
      expect((await expectOk(call('GET', `/integrations/${shared.id}`, keys.B!))).slug).toBe('shared-openai');
      expect((await call('PUT', `/integrations/${shared.id}`, keys.B!, { name: 'mine' })).status).toBe(403);
      const p = await expectOk(call('POST', '/providers', keys.B!, { name: 'B shared', slug: 'shared', integration_id: shared.id }));
      expect(p.workspace_id).toBe(ids.B);
      const r = await chat(keys.B!, { 'x-gateway-provider': '@shared' });
      expect(r.status).toBe(200);
      expect(mock.requests.at(-1)!.headers.authorization).toBe('Bearer sk-shared-0123456789abcdef');
    });

    test('providers: CRUD and resolution on the request path', async () => {
      if (skip()) return;
      const r = await chat(keys.A!, { 'x-gateway-provider': '@oa', authorization: 'Bearer sdk-dummy' });
      expect(r.status).toBe(200);
      expect(mock.requests.at(-1)!.headers.authorization).toBe('Bearer sk-integration-a-0123456789');
      expect((await chat(keys.A!, { 'x-gateway-virtual-key': 'oa' })).status).toBe(200);
      const wrong = await chat(keys.B!, { 'x-gateway-provider': '@oa' });
      expect(wrong.status).toBe(404);
      expect(wrong.body.error.param).toBe('provider');
      // Organisation keys act in the default workspace, or the one named by x-gateway-workspace.
      expect((await chat(ADMIN, { 'x-gateway-provider': '@oa' })).status).toBe(404);
      expect((await chat(ADMIN, { 'x-gateway-provider': '@oa', 'x-gateway-workspace': 'team-a' })).status).toBe(200);

      const prov = await expectOk(call('GET', `/providers/${ids.provider}`, keys.A!));
      expect(prov).toMatchObject({ object: 'provider', slug: 'oa', integration_id: ids.integration, status: 'active' });
      await expectOk(call('PUT', `/providers/${ids.provider}`, keys.A!, { status: 'archived' }));
      expect((await chat(keys.A!, { 'x-gateway-provider': '@oa' })).status).toBe(404);
      await expectOk(call('PUT', `/providers/${ids.provider}`, keys.A!, { status: 'active' }));
      expect((await chat(keys.A!, { 'x-gateway-provider': '@oa' })).status).toBe(200);
    });

    test('GET /models: the workspace models with total_count', async () => {
      if (skip()) return;
      const all = await expectOk(call('GET', '/models?provider_slug=oa', keys.A!));
      expect(all.total_count).toBeGreaterThan(3);
      expect(all.data[0]).toMatchObject({ object: 'model', provider_slug: 'oa', ai_provider_id: 'openai', source: 'catalog' });
      expect(all.data.every((m: Json) => m.id === `@oa/${m.slug}`)).toBe(true);
      const page = await expectOk(call('GET', '/models?provider_slug=oa&page_size=2&current_page=1', keys.A!));
      expect(page.total_count).toBe(all.total_count);
      expect(page.data).toEqual(all.data.slice(2, 4));
      await expectOk(call('PUT', `/integrations/${ids.integration}/integration-models`, keys.A!, { models: [{ slug: 'gpt-4o' }, { slug: 'gpt-4o-mini' }, { slug: 'gpt-off', enabled: false }] }));
      const listed = await expectOk(call('GET', '/models?provider_slug=oa', keys.A!));
      expect(listed).toMatchObject({ total_count: 2 });
      expect(listed.data.map((m: Json) => m.id)).toEqual(['@oa/gpt-4o', '@oa/gpt-4o-mini']);
      expect((await expectOk(call('GET', '/models?provider_slug=oa&search=mini', keys.A!))).total_count).toBe(1);
      await expectOk(call('PUT', `/integrations/${ids.integration}/integration-models`, keys.A!, { models: [] }));
    });
  });
}

suite('sqlite', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'gw-pr-sqlite-'));
  return () => sqliteStore({ file: join(dir, 'gateway.db') });
});

const schema = uniqueSchema('pr');
suite('postgres', async () => {
  if (!(await requireService('PostgreSQL', DATABASE_URL))) return null;
  return () => postgresStore({ url: DATABASE_URL, schema });
});

afterAll(async () => {
  if (await requireService('PostgreSQL', DATABASE_URL).catch(() => false)) await dropSchema(schema);
});
