import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { GatewayPlugin } from '../../../core/index.js';
import { config } from '../../../plugins/config/index.js';
import { controlPlane } from '../../../plugins/control-plane/index.js';
import { ALL_SCOPES } from '../../../plugins/control-plane/scopes.js';
import { providerHeaders } from '../../../plugins/provider-headers/index.js';
import { providerRegistry } from '../../../plugins/provider-registry/index.js';
import { openai } from '../../../plugins/providers/openai/index.js';
import { postgresStore } from '../../../plugins/stores/postgres/index.js';
import { sqliteStore } from '../../../plugins/stores/sqlite/index.js';
import { serveGateway } from '../../helpers/serve.js';
import { DATABASE_URL, dropSchema, requireService, uniqueSchema } from '../../helpers/services.js';
import { startMockOpenAI, type MockUpstream } from '../../mocks/openai-upstream.js';

const ADMIN = 'admin-bootstrap-key-0123456789';
const START = Date.parse('2026-01-05T00:00:00Z');
const MIN = 60_000;

type Json = Record<string, any>;
interface Reply {
  status: number;
  body: Json;
  headers: Headers;
}

/** RS256 token signed in the test: header, claims, signature. */
function jwt(key: KeyObject, claims: Json): string {
  const enc = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const input = `${enc({ alg: 'RS256', typ: 'JWT', kid: 'k1' })}.${enc(claims)}`;
  return `${input}.${sign('sha256', Buffer.from(input), key).toString('base64url')}`;
}

/** One gateway on a store, with a fake clock shared by the tests of the suite. */
async function startGateway(store: () => GatewayPlugin, clock: { now: number }, dataDir: string, publicPem: string, upstream: string) {
  return serveGateway({
    plugins: [
      store(),
      controlPlane({
        bootstrapKey: ADMIN,
        dataDir,
        now: () => clock.now,
        jwt: { publicKeys: [{ kid: 'k1', pem: publicPem }], audience: 'gateway', issuer: 'https://idp.test' },
        announce: () => undefined,
      }),
      config(),
      providerHeaders(),
      providerRegistry({ dataDir }),
      openai({}),
    ],
  }).then((gw) => ({ ...gw, upstream }));
}

function suite(name: string, makeStore: () => Promise<(() => GatewayPlugin) | null>) {
  describe(`admin API on ${name}`, () => {
    const clock = { now: START };
    let store: (() => GatewayPlugin) | null = null;
    let gw: Awaited<ReturnType<typeof startGateway>>;
    let mock: MockUpstream;
    let dataDir: string;
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const publicPem = publicKey.export({ type: 'spki', format: 'pem' }).toString();

    // Fixture: workspaces A and B, each with an admin-like workspace key, and A's resources.
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
      dataDir = await mkdtemp(join(tmpdir(), 'gw-cp-'));
      mock = await startMockOpenAI();
      gw = await startGateway(store, clock, dataDir, publicPem, mock.baseURL);
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
      ids.user = (await expectOk(call('POST', `/workspaces/${ids.A}/members`, keys.A!, { email: 'ann@example.com', role: 'manager' }))).user_id;
    });

    afterAll(async () => {
      if (store === null) return;
      await gw?.close();
      await mock?.close();
    });

    const skip = () => store === null;

    test('the bootstrap key is an organisation admin; unknown keys are 401 in the envelope', async () => {
      if (skip()) return;
      const ws = await expectOk(call('GET', '/workspaces?status=active', ADMIN));
      expect(ws.total_count).toBe(3);
      expect(ws.data.map((w: Json) => w.slug).sort()).toEqual(['default', 'team-a', 'team-b']);
      const denied = await call('GET', '/workspaces', 'gwk-not-a-key');
      expect(denied.status).toBe(401);
      expect(denied.body.error).toMatchObject({ type: 'authentication_error', param: 'x-gateway-api-key' });
      expect((await call('GET', '/workspaces', null)).status).toBe(401);
    });

    /** Every route: the scope it needs. A key holding only completions.write gets a 403 naming it. */
    const ROUTES: Array<[string, string, string | null, unknown?]> = [
      ['GET', '/organisation/settings', 'organisation.read'],
      ['PUT', '/organisation/settings', 'organisation.update', {}],
      ['POST', '/workspaces', 'workspaces.create', { name: 'x' }],
      ['GET', '/workspaces', 'workspaces.read'],
      ['GET', '/workspaces/:A', 'workspaces.read'],
      ['PUT', '/workspaces/:A', 'workspaces.update', {}],
      ['DELETE', '/workspaces/:A', 'workspaces.delete'],
      ['POST', '/workspaces/:A/members', 'members.create', { email: 'x@example.com', role: 'member' }],
      ['GET', '/workspaces/:A/members', 'members.read'],
      ['GET', '/workspaces/:A/members/:user', 'members.read'],
      ['PUT', '/workspaces/:A/members/:user', 'members.update', { role: 'member' }],
      ['DELETE', '/workspaces/:A/members/:user', 'members.delete'],
      ['POST', '/api-keys', 'api_keys.create', { type: 'workspace-service', name: 'x' }],
      ['GET', '/api-keys', 'api_keys.read'],
      ['GET', '/api-keys/:keyA', 'api_keys.read'],
      ['PUT', '/api-keys/:keyA', 'api_keys.update', {}],
      ['DELETE', '/api-keys/:keyA', 'api_keys.delete'],
      ['POST', '/api-keys/:keyA/rotate', 'api_keys.rotate'],
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
      ['GET', '/workspaces/:A'],
      ['PUT', '/workspaces/:A', { name: 'stolen' }],
      ['DELETE', '/workspaces/:A'],
      ['POST', '/workspaces/:A/members', { email: 'eve@example.com', role: 'admin' }],
      ['GET', '/workspaces/:A/members'],
      ['GET', '/workspaces/:A/members/:user'],
      ['PUT', '/workspaces/:A/members/:user', { role: 'admin' }],
      ['DELETE', '/workspaces/:A/members/:user'],
      ['POST', '/api-keys', { type: 'workspace-service', name: 'x', workspace_id: ':A' }],
      ['GET', '/api-keys/:keyA'],
      ['PUT', '/api-keys/:keyA', { name: 'stolen' }],
      ['DELETE', '/api-keys/:keyA'],
      ['POST', '/api-keys/:keyA/rotate'],
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
      expect((await asB('/workspaces')).map((w) => w.id)).toEqual([ids.B]);
      expect((await asB('/api-keys')).every((k) => k.workspace_id === ids.B)).toBe(true);
      // A's resources are all still there: the refusals above changed nothing.
      expect((await expectOk(call('GET', `/workspaces/${ids.A}`, keys.A!))).name).toBe('Team A');
    });

    /** Validation: each bad input is a 400 whose param names the field. */
    const INVALID: Array<[string, string, unknown, string]> = [
      ['PUT', '/organisation/settings', { session_settings: { max_session_ttl: 899 } }, 'session_settings.max_session_ttl'],
      ['PUT', '/organisation/settings', { user_api_key_rotation_period: 'daily' }, 'user_api_key_rotation_period'],
      ['POST', '/workspaces', { name: '' }, 'name'],
      ['POST', '/workspaces', { name: 'x', slug: 'Not A Slug' }, 'slug'],
      ['GET', '/workspaces?status=active,deleted', undefined, 'status[1]'],
      ['GET', '/workspaces?page_size=1000', undefined, 'page_size'],
      ['PUT', '/workspaces/:A', { name: 5 }, 'name'],
      ['POST', '/workspaces/:A/members', { email: 'not-an-email', role: 'member' }, 'email'],
      ['POST', '/workspaces/:A/members', { email: 'x@example.com', role: 'boss' }, 'role'],
      ['PUT', '/workspaces/:A/members/:user', { role: 'owner' }, 'role'],
      ['POST', '/api-keys', { type: 'root', name: 'x' }, 'type'],
      ['POST', '/api-keys', { type: 'workspace-service', name: 'x', scopes: ['nope.read'] }, 'scopes'],
      ['POST', '/api-keys', { type: 'workspace-service', name: 'x', rotation_policy: { rotation_period: 'daily' } }, 'rotation_policy.rotation_period'],
      ['POST', '/api-keys', { type: 'workspace-service', name: 'x', rotation_policy: { key_transition_period_ms: 29 * MIN } }, 'rotation_policy.key_transition_period_ms'],
      ['POST', '/api-keys', { type: 'workspace-service', name: 'x', rotation_policy: { next_rotation_at: 'tomorrow' } }, 'rotation_policy.next_rotation_at'],
      ['POST', '/api-keys', { type: 'workspace-user', name: 'x' }, 'user_id'],
      ['PUT', '/api-keys/:keyA', { status: 'gone' }, 'status'],
      ['POST', '/api-keys/:keyA/rotate', { key_transition_period_ms: 1000 }, 'key_transition_period_ms'],
      ['GET', '/api-keys?bogus=1', undefined, 'bogus'],
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
      const r = await call('POST', '/workspaces', ADMIN, { name: 'dup', slug: 'team-a' });
      expect(r.status).toBe(409);
      expect(r.body.error).toMatchObject({ code: 'conflict', param: 'slug' });
    });

    test('workspaces: create, retrieve, update, archive; archived ones listed for admins only', async () => {
      if (skip()) return;
      const ws = await expectOk(call('POST', '/workspaces', ADMIN, { name: 'Temp', slug: 'temp', description: 'd', metadata: { team: 'x' } }));
      expect(ws).toMatchObject({ object: 'workspace', slug: 'temp', status: 'active', metadata: { team: 'x' }, archived_at: null });
      expect((await expectOk(call('PUT', `/workspaces/${ws.id}`, ADMIN, { name: 'Temp 2' }))).name).toBe('Temp 2');
      const archived = await expectOk(call('DELETE', `/workspaces/${ws.id}`, ADMIN));
      expect(archived).toMatchObject({ status: 'archived' });
      expect(archived.archived_at).toBe(new Date(clock.now).toISOString());
      const active = await expectOk(call('GET', '/workspaces', ADMIN));
      expect(active.data.map((w: Json) => w.slug)).not.toContain('temp');
      const all = await expectOk(call('GET', '/workspaces?status=active,archived', ADMIN));
      expect(all.data.map((w: Json) => w.slug)).toContain('temp');
      expect(all.total_count).toBe(active.total_count + 1);
      const onlyArchived = await expectOk(call('GET', '/workspaces?status=archived', ADMIN));
      expect(onlyArchived.data.map((w: Json) => w.slug)).toEqual(['temp']);
      const member = await call('GET', '/workspaces?status=archived', keys.A!);
      expect(member.status).toBe(403);
      expect(member.body.error.message).toMatch(/owners and admins/);
      expect((await call('DELETE', `/workspaces/${ids.A}`, keys.A!)).status).toBe(403); // organisation keys only
      const def = (await expectOk(call('GET', '/workspaces/default', ADMIN))).id;
      expect((await call('DELETE', `/workspaces/${def}`, ADMIN)).status).toBe(400);
      // Pagination: total_count is the filtered total, data the page.
      const page = await expectOk(call('GET', '/workspaces?status=active,archived&page_size=2&current_page=1', ADMIN));
      expect(page.total_count).toBe(all.total_count);
      expect(page.data.map((w: Json) => w.id)).toEqual(all.data.slice(2, 4).map((w: Json) => w.id));
    });

    test('a key of an archived workspace stops working', async () => {
      if (skip()) return;
      const ws = await expectOk(call('POST', '/workspaces', ADMIN, { name: 'Doomed', slug: 'doomed' }));
      const key = await expectOk(call('POST', '/api-keys', ADMIN, { type: 'workspace-service', name: 'doomed', workspace_id: ws.id }));
      expect((await call('GET', '/models', key.key)).status).toBe(200);
      await expectOk(call('DELETE', `/workspaces/${ws.id}`, ADMIN));
      const r = await call('GET', '/models', key.key);
      expect(r.status).toBe(403);
      expect(r.body.error.message).toMatch(/archived/);
    });

    test('members: add, list, retrieve, change role, remove', async () => {
      if (skip()) return;
      const m = await expectOk(call('POST', `/workspaces/${ids.A}/members`, keys.A!, { email: 'Bob@Example.com', name: 'Bob', role: 'MEMBER' }));
      expect(m).toMatchObject({ object: 'workspace-member', email: 'bob@example.com', role: 'member', workspace_id: ids.A });
      expect(m.api_key).toBeUndefined(); // auto-create is off by default
      expect((await call('POST', `/workspaces/${ids.A}/members`, keys.A!, { email: 'bob@example.com', role: 'member' })).status).toBe(409);
      const list = await expectOk(call('GET', `/workspaces/${ids.A}/members`, keys.A!));
      expect(list.data.map((x: Json) => x.email).sort()).toEqual(['ann@example.com', 'bob@example.com']);
      // A workspace-service key acts as a manager: however many scopes it holds, it cannot make an admin.
      const tooHigh = await call('PUT', `/workspaces/${ids.A}/members/${m.user_id}`, keys.A!, { role: 'admin' });
      expect(tooHigh.status).toBe(403);
      expect(tooHigh.body.error).toMatchObject({ code: 'forbidden', param: 'role' });
      expect((await expectOk(call('PUT', `/workspaces/${ids.A}/members/${m.user_id}`, ADMIN, { role: 'admin' }))).role).toBe('admin');
      expect((await expectOk(call('GET', `/workspaces/${ids.A}/members/${m.user_id}`, keys.A!))).role).toBe('admin');
      const relisted = await expectOk(call('GET', `/workspaces/${ids.A}/members`, keys.A!));
      expect(relisted.data.find((x: Json) => x.user_id === m.user_id)).toMatchObject({ role: 'admin', email: 'bob@example.com' });
      expect(relisted.data.find((x: Json) => x.email === 'ann@example.com').role).toBe('manager');
      // Taking an admin's role away takes an admin too.
      expect((await call('DELETE', `/workspaces/${ids.A}/members/${m.user_id}`, keys.A!)).status).toBe(403);
      expect((await expectOk(call('DELETE', `/workspaces/${ids.A}/members/${m.user_id}`, ADMIN))).deleted).toBe(true);
      expect((await call('GET', `/workspaces/${ids.A}/members/${m.user_id}`, keys.A!)).status).toBe(404);
    });

    test('API keys: create shows the secret once; list and retrieve show only the mask; update; delete', async () => {
      if (skip()) return;
      const created = await expectOk(call('POST', '/api-keys', keys.A!, { type: 'workspace-service', name: 'ci', scopes: ['configs.read', 'completions.write'], metadata: { env: 'ci' } }));
      expect(created.key).toMatch(/^gwk-[A-Za-z0-9_-]{43}$/);
      expect(created).toMatchObject({ object: 'api-key', type: 'workspace-service', workspace_id: ids.A, scopes: ['configs.read', 'completions.write'], status: 'active', metadata: { env: 'ci' } });
      expect(created.masked_key).toBe(`${created.key.slice(0, 4)}****${created.key.slice(-4)}`);
      const got = await expectOk(call('GET', `/api-keys/${created.id}`, keys.A!));
      expect(got.key).toBeUndefined();
      expect(JSON.stringify(got)).not.toContain(created.key);
      const listed = await expectOk(call('GET', '/api-keys', keys.A!));
      expect(JSON.stringify(listed)).not.toContain(created.key);
      expect(listed.data.some((k: Json) => k.id === created.id)).toBe(true);
      // The new key works, within its scopes.
      expect((await call('GET', '/configs', created.key)).status).toBe(200);
      const denied = await call('POST', '/configs', created.key, { name: 'n', config: {} });
      expect(denied.status).toBe(403);
      expect(denied.body.error.message).toContain('"configs.create"');
      // Update: scopes widen at once on this instance; disabling stops the key.
      await expectOk(call('PUT', `/api-keys/${created.id}`, keys.A!, { scopes: ['configs.*'] }));
      expect((await call('POST', '/configs', created.key, { name: 'n', slug: 'by-ci', config: { provider: '@oa' } })).status).toBe(200);
      await expectOk(call('PUT', `/api-keys/${created.id}`, keys.A!, { status: 'disabled' }));
      const disabled = await call('GET', '/configs', created.key);
      expect(disabled.status).toBe(401);
      expect(disabled.body.error.message).toMatch(/disabled/);
      await expectOk(call('DELETE', `/api-keys/${created.id}`, keys.A!));
      expect((await call('GET', '/configs', created.key)).status).toBe(401);
      expect((await call('GET', `/api-keys/${created.id}`, keys.A!)).status).toBe(404);
    });

    test('a key cannot give a role whose scopes it lacks (no escalation through members or auto-created keys)', async () => {
      if (skip()) return;
      await expectOk(call('PUT', '/organisation/settings', ADMIN, { user_api_key_auto_create: true }));
      try {
        const inviter = await expectOk(call('POST', '/api-keys', keys.A!, { type: 'workspace-service', name: 'inviter', scopes: ['members.create', 'members.update'] }));
        const r = await call('POST', `/workspaces/${ids.A}/members`, inviter.key, { email: 'mallory@example.com', role: 'admin' });
        expect(r.status).toBe(403);
        expect(r.body.error).toMatchObject({ code: 'forbidden', param: 'role' });
        expect(r.body.error.message).toMatch(/"admin" role/);
        expect((await call('POST', `/workspaces/${ids.A}/members`, inviter.key, { email: 'mallory@example.com', role: 'member' })).status).toBe(403);
        expect((await call('PUT', `/workspaces/${ids.A}/members/${ids.user}`, inviter.key, { role: 'admin' })).status).toBe(403);
        const list = await expectOk(call('GET', `/workspaces/${ids.A}/members`, keys.A!));
        expect(list.data.map((m: Json) => m.email)).not.toContain('mallory@example.com');
      } finally {
        await expectOk(call('PUT', '/organisation/settings', ADMIN, { user_api_key_auto_create: false }));
      }
    });

    test('a key cannot grant scopes it does not hold, nor create organisation keys from a workspace', async () => {
      if (skip()) return;
      const r = await call('POST', '/api-keys', keys.A!, { type: 'workspace-service', name: 'x', scopes: ['organisation.update'] });
      expect(r.status).toBe(403);
      expect(r.body.error.message).toContain('"organisation.update"');
      expect((await call('POST', '/api-keys', keys.A!, { type: 'organisation-service', name: 'x' })).status).toBe(403);
      const org = await expectOk(call('POST', '/api-keys', ADMIN, { type: 'organisation-service', name: 'org ops' }));
      expect(org.workspace_id).toBeNull();
      expect(org.scopes).toEqual([...ALL_SCOPES]);
    });

    test('a key without completions.write cannot call providers', async () => {
      if (skip()) return;
      const key = await expectOk(call('POST', '/api-keys', keys.A!, { type: 'workspace-service', name: 'read only', scopes: ['configs.read'] }));
      const r = await chat(key.key, { 'x-gateway-provider': '@oa' });
      expect(r.status).toBe(403);
      expect(r.body.error.message).toContain('"completions.write"');
      expect((await chat(keys.A!, { 'x-gateway-provider': '@oa' })).status).toBe(200);
    });

    test('rotation: both secrets work during the transition, only the new one after it', async () => {
      if (skip()) return;
      const key = await expectOk(call('POST', '/api-keys', keys.A!, { type: 'workspace-service', name: 'rotating', scopes: ['configs.read'] }));
      const old = key.key as string;
      const rotated = await expectOk(call('POST', `/api-keys/${key.id}/rotate`, keys.A!, { key_transition_period_ms: 45 * MIN }));
      expect(rotated.key).not.toBe(old);
      expect(rotated.last_rotated_at).toBe(new Date(clock.now).toISOString());
      expect(rotated.previous_key_expires_at).toBe(new Date(clock.now + 45 * MIN).toISOString());
      const viaOld = await call('GET', '/configs', old);
      expect(viaOld.status).toBe(200);
      expect(viaOld.headers.get('x-gateway-api-key-expires-at')).toBe(new Date(clock.now + 45 * MIN).toISOString());
      expect((await call('GET', '/configs', rotated.key)).status).toBe(200);
      clock.now += 44 * MIN;
      expect((await call('GET', '/configs', old)).status).toBe(200);
      clock.now += 2 * MIN;
      const after = await call('GET', '/configs', old);
      expect(after.status).toBe(401);
      expect(after.body.error.message).toMatch(/rotated/);
      expect(after.body.error.message).not.toContain(old);
      expect((await call('GET', '/configs', rotated.key)).status).toBe(200);
      // Without a body the transition is the 30-minute minimum.
      const again = await expectOk(call('POST', `/api-keys/${key.id}/rotate`, keys.A!));
      expect(again.previous_key_expires_at).toBe(new Date(clock.now + 30 * MIN).toISOString());
      expect((await call('GET', '/configs', rotated.key)).status).toBe(200);
      expect((await call('GET', '/configs', again.key)).status).toBe(200);
    });

    test('a key may rotate itself with *.rotate', async () => {
      if (skip()) return;
      const key = await expectOk(call('POST', '/api-keys', ADMIN, { type: 'workspace-service', name: 'self', workspace_id: ids.A, scopes: ['*.rotate'] }));
      const r = await expectOk(call('POST', `/api-keys/${key.id}/rotate`, key.key));
      expect((await call('POST', `/api-keys/${key.id}/rotate`, r.key)).status).toBe(200);
    });

    test('a rotation policy: due at next_rotation_at, usable through the transition, locked after; rotating moves it one period on', async () => {
      if (skip()) return;
      const key = await expectOk(
        call('POST', '/api-keys', keys.A!, { type: 'workspace-service', name: 'weekly', scopes: ['configs.read'], rotation_policy: { rotation_period: 'weekly', key_transition_period_ms: 60 * MIN } }),
      );
      const created = clock.now;
      expect(key.rotation_policy).toEqual({ rotation_period: 'weekly', next_rotation_at: new Date(created + 7 * 86_400_000).toISOString(), key_transition_period_ms: 60 * MIN });
      clock.now = created + 7 * 86_400_000 + MIN;
      const due = await call('GET', '/configs', key.key);
      expect(due.status).toBe(200);
      expect(due.headers.get('x-gateway-api-key-rotation-due')).toBe(new Date(created + 7 * 86_400_000 + 60 * MIN).toISOString());
      clock.now = created + 7 * 86_400_000 + 61 * MIN;
      const locked = await call('GET', '/configs', key.key);
      expect(locked.status).toBe(401);
      expect(locked.body.error.message).toMatch(/rotation was due/);
      const rotated = await expectOk(call('POST', `/api-keys/${key.id}/rotate`, keys.A!));
      expect(rotated.rotation_policy.next_rotation_at).toBe(new Date(clock.now + 7 * 86_400_000).toISOString());
      const fresh = await call('GET', '/configs', rotated.key);
      expect(fresh.status).toBe(200);
      expect(fresh.headers.get('x-gateway-api-key-rotation-due')).toBeNull();
    });

    test('organisation settings: an enforced rotation period, auto-created user keys, and their role caps', async () => {
      if (skip()) return;
      expect(await expectOk(call('GET', '/organisation/settings', ADMIN))).toMatchObject({ user_api_key_rotation_period: null, user_api_key_auto_create: false, session_settings: { max_session_ttl: null } });
      expect((await call('GET', '/organisation/settings', keys.A!)).status).toBe(403);
      await expectOk(call('PUT', '/organisation/settings', ADMIN, { user_api_key_rotation_period: 'monthly', user_api_key_auto_create: true }));
      const m = await expectOk(call('POST', `/workspaces/${ids.A}/members`, keys.A!, { email: 'cat@example.com', role: 'member' }));
      expect(m.api_key.key).toMatch(/^gwk-/);
      expect(m.api_key).toMatchObject({ type: 'workspace-user', user_id: m.user_id, workspace_id: ids.A });
      expect(m.api_key.rotation_policy.rotation_period).toBe('monthly');
      // A member may list models and call providers, not manage configs.
      expect((await call('GET', '/models', m.api_key.key)).status).toBe(200);
      expect((await chat(m.api_key.key, { 'x-gateway-provider': '@oa' })).status).toBe(200);
      expect((await call('POST', '/configs', m.api_key.key, { name: 'n', config: {} })).status).toBe(403);
      // An explicit different period is refused; the enforced one is applied when none is given.
      const bad = await call('POST', '/api-keys', keys.A!, { type: 'workspace-user', name: 'u', user_id: m.user_id, rotation_policy: { rotation_period: 'weekly' } });
      expect(bad.status).toBe(400);
      expect(bad.body.error.param).toBe('rotation_policy.rotation_period');
      expect(bad.body.error.message).toMatch(/monthly/);
      const good = await expectOk(call('POST', '/api-keys', keys.A!, { type: 'workspace-user', name: 'u', user_id: m.user_id }));
      expect(good.rotation_policy.rotation_period).toBe('monthly');
      const upd = await call('PUT', `/api-keys/${good.id}`, keys.A!, { rotation_policy: { rotation_period: 'weekly' } });
      expect(upd.status).toBe(400);
      // Service keys are not user keys: the enforcement does not apply to them.
      expect((await call('POST', '/api-keys', keys.A!, { type: 'workspace-service', name: 's', rotation_policy: { rotation_period: 'weekly' } })).status).toBe(200);
      // Removing the member stops the user key.
      await expectOk(call('DELETE', `/workspaces/${ids.A}/members/${m.user_id}`, keys.A!));
      expect([401, 403]).toContain((await call('GET', '/models', m.api_key.key)).status);
      await expectOk(call('PUT', '/organisation/settings', ADMIN, { user_api_key_rotation_period: null, user_api_key_auto_create: false }));
    });

    test('JWT: a valid token maps to its workspace and role; failures say why', async () => {
      if (skip()) return;
      const now = Math.floor(clock.now / 1000);
      const base = { iss: 'https://idp.test', aud: 'gateway', sub: 'user-42', workspace_id: 'team-a', role: 'member', iat: now, exp: now + 3600 };
      const ok = await call('GET', '/models', jwt(privateKey, base));
      expect(ok.status).toBe(200);
      expect((await call('GET', '/configs', jwt(privateKey, base))).status).toBe(200);
      const denied = await call('POST', '/configs', jwt(privateKey, { ...base, scope: 'configs.create configs.read' }), { name: 'n', config: {} });
      expect(denied.status).toBe(403); // scopes are capped by the role
      const cases: Array<[Json, RegExp]> = [
        [{ ...base, exp: now - 120 }, /expired/],
        [{ ...base, aud: 'someone-else' }, /audience/],
        [{ ...base, iss: 'https://evil.test' }, /issuer/],
        [{ ...base, workspace_id: undefined }, /workspace_id/],
        [{ ...base, workspace_id: 'no-such-ws' }, /names no workspace/],
        [{ ...base, role: 'owner' }, /role/],
      ];
      for (const [claims, message] of cases) {
        const r = await call('GET', '/models', jwt(privateKey, claims));
        expect(r.status, JSON.stringify(claims)).toBe(401);
        expect(r.body.error.message).toMatch(message);
      }
      const other = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
      const forged = await call('GET', '/models', jwt(other, base));
      expect(forged.status).toBe(401);
      expect(forged.body.error.message).toMatch(/signature/);
      // Session age: max_session_ttl counts from iat.
      await expectOk(call('PUT', '/organisation/settings', ADMIN, { session_settings: { max_session_ttl: 900 } }));
      const old = await call('GET', '/models', jwt(privateKey, { ...base, iat: now - 901 }));
      expect(old.status).toBe(401);
      expect(old.body.error.message).toMatch(/max_session_ttl of 900 seconds/);
      expect((await call('GET', '/models', jwt(privateKey, { ...base, iat: now - 800 }))).status).toBe(200);
      await expectOk(call('PUT', '/organisation/settings', ADMIN, { session_settings: { max_session_ttl: null } }));
    });

    test('configs: CRUD, versions, and resolution on the request path', async () => {
      if (skip()) return;
    });

    test('another instance on the same store sees admin changes within the cache TTL', async () => {
      if (skip()) return;
      const second = await startGateway(store!, clock, dataDir, publicPem, mock.baseURL);
      try {
        await second.gateway.ready;
        const key = await expectOk(call('POST', '/api-keys', keys.A!, { type: 'workspace-service', name: 'shared', scopes: ['configs.read'] }));
        expect((await call('GET', '/configs', key.key, undefined, {}, second.url)).status).toBe(200);
        await expectOk(call('PUT', `/api-keys/${key.id}`, keys.A!, { status: 'disabled' }));
        expect((await call('GET', '/configs', key.key)).status).toBe(401); // this instance: at once
        expect((await call('GET', '/configs', key.key, undefined, {}, second.url)).status).toBe(200); // the other: cached
        clock.now += 10_001;
        expect((await call('GET', '/configs', key.key, undefined, {}, second.url)).status).toBe(401); // after the TTL
      } finally {
        await second.close();
      }
    });
  });
}

suite('sqlite', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'gw-cp-sqlite-'));
  return () => sqliteStore({ file: join(dir, 'gateway.db') });
});

const schema = uniqueSchema('cp');
suite('postgres', async () => {
  if (!(await requireService('PostgreSQL', DATABASE_URL))) return null;
  return () => postgresStore({ url: DATABASE_URL, schema });
});

afterAll(async () => {
  if (await requireService('PostgreSQL', DATABASE_URL).catch(() => false)) await dropSchema(schema);
});
