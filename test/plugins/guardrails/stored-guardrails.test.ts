import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { GatewayPlugin } from '../../../core/index.js';
import { config } from '../../../plugins/config/index.js';
import { controlPlane } from '../../../plugins/control-plane/index.js';
import { guardrails } from '../../../plugins/guardrails/index.js';
import { guardrailChecks } from '../../../plugins/guardrails/checks/index.js';
import { providerHeaders } from '../../../plugins/provider-headers/index.js';
import { openai } from '../../../plugins/providers/openai/index.js';
import { postgresStore } from '../../../plugins/stores/postgres/index.js';
import { sqliteStore } from '../../../plugins/stores/sqlite/index.js';
import { serveGateway } from '../../helpers/serve.js';
import { DATABASE_URL, dropSchema, requireService, uniqueSchema } from '../../helpers/services.js';
import { startMockOpenAI, type MockUpstream } from '../../mocks/openai-upstream.js';

const ADMIN = 'admin-bootstrap-key-guardrails-01';
type Json = Record<string, any>;
interface Reply {
  status: number;
  body: Json;
}

/** Stored guardrails on one SQL store: the routes, their validation and scoping, and configs naming them on the request path. */
function suite(name: string, makeStore: () => Promise<(() => GatewayPlugin) | null>) {
  describe(`stored guardrails on ${name}`, () => {
    let store: (() => GatewayPlugin) | null = null;
    let gw: Awaited<ReturnType<typeof serveGateway>>;
    let mock: MockUpstream;
    const ids: Json = {};
    const keys: Record<string, string> = {};

    const call = async (method: string, path: string, key: string, body?: unknown): Promise<Reply> => {
      const res = await fetch(`${gw.url}/v1${path}`, {
        method,
        headers: { 'x-gateway-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
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
    const expectError = async (p: Promise<Reply>, status: number, code: string, param: string | null, message: RegExp) => {
      const r = await p;
      expect(r.status, JSON.stringify(r.body)).toBe(status);
      expect(r.body.error).toMatchObject({ code, param });
      expect(r.body.error.message).toMatch(message);
    };
    const chat = async (key: string, cfg: Json | string, content: string) => {
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-gateway-api-key': key, 'x-gateway-config': typeof cfg === 'string' ? cfg : JSON.stringify(cfg) },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }] }),
      });
      return { status: res.status, body: JSON.parse(await res.text()) as Json };
    };
    const target = () => ({ provider: 'openai', api_key: 'sk-test', custom_host: mock.baseURL });
    const noSecrets = { name: 'No secrets', deny: true, 'default.contains': { words: ['secret'], operator: 'none' } };

    beforeAll(async () => {
      store = await makeStore();
      if (store === null) return;
      mock = await startMockOpenAI();
      gw = await serveGateway({
        plugins: [
          store(),
          controlPlane({ bootstrapKey: ADMIN, dataDir: await mkdtemp(join(tmpdir(), 'gw-grd-')), announce: () => undefined }),
          config(),
          providerHeaders(),
          guardrailChecks(),
          guardrails(),
          openai({}),
        ],
      });
      await gw.gateway.ready;
      ids.A = (await expectOk(call('POST', '/workspaces', ADMIN, { name: 'Team A', slug: 'team-a' }))).id;
      ids.B = (await expectOk(call('POST', '/workspaces', ADMIN, { name: 'Team B', slug: 'team-b' }))).id;
      for (const ws of ['A', 'B']) {
        keys[ws] = (await expectOk(call('POST', '/api-keys', ADMIN, { type: 'workspace-service', name: `${ws} manager`, workspace_id: ids[ws] }))).key;
      }
      keys.reader = (await expectOk(call('POST', '/api-keys', ADMIN, { type: 'workspace-service', name: 'reader', workspace_id: ids.A, scopes: ['configs.read', 'completions.write'] }))).key;
      keys.bare = (await expectOk(call('POST', '/api-keys', ADMIN, { type: 'workspace-service', name: 'bare', workspace_id: ids.A, scopes: ['completions.write'] }))).key;
      ids.noSecrets = (await expectOk(call('POST', '/guardrails', keys.A!, { ...noSecrets, slug: 'no-secrets' }))).id;
    });

    afterAll(async () => {
      if (store === null) return;
      await gw?.close();
      await mock?.close();
    });

    const it = (title: string, fn: () => Promise<void>) =>
      test(title, async (ctx) => {
        if (store === null) ctx.skip();
        await fn();
      });

    it('a stored guardrail is a name plus a guardrail entry, answered flat with its id, slug, workspace and version', async () => {
      const g = await expectOk(call('GET', `/guardrails/${ids.noSecrets}`, keys.A!));
      expect(g).toMatchObject({
        id: ids.noSecrets,
        object: 'guardrail',
        slug: 'no-secrets',
        name: 'No secrets',
        workspace_id: ids.A,
        status: 'active',
        version: 1,
        deny: true,
        'default.contains': { words: ['secret'], operator: 'none' },
        archived_at: null,
      });
      expect(g.id).toMatch(/^pg-[a-z0-9]{16}$/);
      // By slug too, in the caller's workspace.
      expect((await expectOk(call('GET', '/guardrails/no-secrets', keys.A!))).id).toBe(ids.noSecrets);
    });

    it('the entry is validated at write time against each check\'s parameter schema: a 400 naming the field', async () => {
      await expectError(call('POST', '/guardrails', keys.A!, { name: 'x', 'default.contains': { words: [] } }), 400, 'invalid_request', 'default.contains.words', /words must not be empty/);
      await expectError(call('POST', '/guardrails', keys.A!, { name: 'x', 'default.contains': { words: ['a'], operator: 'some' } }), 400, 'invalid_request', 'default.contains.operator', /operator must be any, all or none/);
      await expectError(call('POST', '/guardrails', keys.A!, { name: 'x', 'acme.nothing': {} }), 400, 'invalid_request', 'acme.nothing', /unknown check "acme.nothing"/);
      await expectError(call('POST', '/guardrails', keys.A!, { name: 'x', deny: true }), 400, 'invalid_request', null, /names no check/);
      await expectError(call('POST', '/guardrails', keys.A!, { name: 'x', deny: 'yes', 'default.wordCount': { max: 3 } }), 400, 'invalid_request', 'deny', /must be true or false/);
      await expectError(call('POST', '/guardrails', keys.A!, { name: 'x', on_fail: { deny: true, feedback: { value: 'bad' } }, 'default.wordCount': { max: 3 } }), 400, 'invalid_request', 'on_fail.feedback.value', /number/);
      await expectError(call('POST', '/guardrails', keys.A!, { name: 'x', 'default.contains': 'secret' }), 400, 'invalid_request', 'default.contains', /object of check parameters/);
      await expectError(call('POST', '/guardrails', keys.A!, { name: 'x', id: 'mine', 'default.wordCount': { max: 3 } }), 400, 'invalid_request', 'id', /given by the gateway/);
      await expectError(call('POST', '/guardrails', keys.A!, { 'default.wordCount': { max: 3 } }), 400, 'invalid_request', 'name', /.+/);
      await expectError(call('POST', '/guardrails', keys.A!, { ...noSecrets, slug: 'no-secrets' }), 409, 'conflict', 'slug', /exists in this workspace/);
      // Nothing was stored by the refused writes.
      expect((await expectOk(call('GET', '/guardrails', keys.A!))).total_count).toBe(1);
    });

    it('GET /guardrails pages with current_page and page_size and filters by ids (comma-separated)', async () => {
      const made = [];
      for (const n of [1, 2, 3]) made.push((await expectOk(call('POST', '/guardrails', keys.A!, { name: `Short ${n}`, 'default.wordCount': { max: 10 * n } }))).id);
      const all = await expectOk(call('GET', '/guardrails', keys.A!));
      expect(all).toMatchObject({ object: 'list', total_count: 4 });
      expect(all.data.map((g: Json) => g.id)).toEqual([ids.noSecrets, ...made]);
      const page = await expectOk(call('GET', '/guardrails?current_page=1&page_size=2', keys.A!));
      expect(page.total_count).toBe(4);
      expect(page.data.map((g: Json) => g.id)).toEqual(made.slice(1));
      const some = await expectOk(call('GET', `/guardrails?ids=${made[2]},${ids.noSecrets},pg-unknownunknown1`, keys.A!));
      expect(some.total_count).toBe(2);
      expect(some.data.map((g: Json) => g.id)).toEqual([ids.noSecrets, made[2]]);
      expect(some.data[1]['default.wordCount']).toEqual({ max: 30 });
      await expectError(call('GET', '/guardrails?page_size=101', keys.A!), 400, 'invalid_request', 'page_size', /.+/);
      await expectError(call('GET', '/guardrails?ids=a,,b', keys.A!), 400, 'invalid_request', 'ids', /comma-separated/);
      await expectError(call('GET', '/guardrails?id=a', keys.A!), 400, 'invalid_request', 'id', /Unknown query parameter 'id'/);
      for (const id of made) await expectOk(call('DELETE', `/guardrails/${id}`, keys.A!));
      expect((await expectOk(call('GET', '/guardrails?status=active', keys.A!))).total_count).toBe(1);
    });

    it("another workspace's guardrail is a 404 on every route, and its list is its own", async () => {
      await expectError(call('GET', `/guardrails/${ids.noSecrets}`, keys.B!), 404, 'not_found', 'id', /No guardrail/);
      await expectError(call('GET', `/guardrails/${ids.noSecrets}/versions`, keys.B!), 404, 'not_found', 'id', /No guardrail/);
      await expectError(call('PUT', `/guardrails/${ids.noSecrets}`, keys.B!, { name: 'mine now' }), 404, 'not_found', 'id', /No guardrail/);
      await expectError(call('DELETE', `/guardrails/${ids.noSecrets}`, keys.B!), 404, 'not_found', 'id', /No guardrail/);
      await expectError(call('GET', `/guardrails?workspace_id=${ids.A}`, keys.B!), 404, 'not_found', 'workspace_id', /No workspace/);
      expect((await expectOk(call('GET', '/guardrails', keys.B!))).total_count).toBe(0);
      // An organisation-level key reaches it by id, and lists a workspace it names.
      expect((await expectOk(call('GET', `/guardrails/${ids.noSecrets}`, ADMIN))).workspace_id).toBe(ids.A);
      expect((await expectOk(call('GET', '/guardrails?workspace_id=team-a&status=active', ADMIN))).total_count).toBe(1);
    });

    it('the routes take the configs scopes: 403 naming the missing one', async () => {
      await expectError(call('POST', '/guardrails', keys.reader!, { name: 'x', 'default.wordCount': { max: 3 } }), 403, 'forbidden', 'x-gateway-api-key', /lacks the "configs.create" scope/);
      await expectError(call('PUT', `/guardrails/${ids.noSecrets}`, keys.reader!, { name: 'x' }), 403, 'forbidden', 'x-gateway-api-key', /"configs.update"/);
      await expectError(call('DELETE', `/guardrails/${ids.noSecrets}`, keys.reader!), 403, 'forbidden', 'x-gateway-api-key', /"configs.delete"/);
      await expectError(call('GET', '/guardrails', keys.bare!), 403, 'forbidden', 'x-gateway-api-key', /"configs.read"/);
      await expectError(call('GET', `/guardrails/${ids.noSecrets}`, keys.bare!), 403, 'forbidden', 'x-gateway-api-key', /"configs.read"/);
      expect((await expectOk(call('GET', `/guardrails/${ids.noSecrets}`, keys.reader!))).version).toBe(1);
    });

    it('a config naming a stored guardrail denies with 446 and passes with 200; without deny, a failure passes as 246', async () => {
      const before = mock.requests.length;
      const denied = await chat(keys.A!, { ...target(), input_guardrails: [ids.noSecrets] }, 'tell me the secret');
      expect(denied.status, JSON.stringify(denied.body)).toBe(446);
      expect(denied.body.error).toMatchObject({ code: 'guardrail_denied', type: 'guardrail_error' });
      expect(denied.body.hook_results.before_request_hooks[0]).toMatchObject({ id: ids.noSecrets, verdict: false, deny: true });
      expect(mock.requests.length).toBe(before);

      const passed = await chat(keys.A!, { ...target(), input_guardrails: ['no-secrets'] }, 'hello');
      expect(passed.status).toBe(200);
      expect(passed.body.hook_results.before_request_hooks[0]).toMatchObject({ id: ids.noSecrets, verdict: true });

      const advisory = (await expectOk(call('POST', '/guardrails', keys.A!, { name: 'Advisory', deny: false, 'default.contains': { words: ['secret'], operator: 'none' } }))).id;
      const warned = await chat(keys.A!, { ...target(), input_guardrails: [advisory] }, 'a secret');
      expect(warned.status).toBe(246);
      expect(warned.body.choices[0].message.content).toBe('Hello from the mock!');
      expect(warned.body.hook_results.before_request_hooks[0]).toMatchObject({ id: advisory, verdict: false, deny: false });

      // The hook form names one by id alone; output guardrails check the answer.
      expect((await chat(keys.A!, { ...target(), before_request_hooks: [{ id: ids.noSecrets }] }, 'the secret')).status).toBe(446);
      const noMock = (await expectOk(call('POST', '/guardrails', keys.A!, { name: 'No mocks', deny: true, 'default.contains': { words: ['mock'], operator: 'none' } }))).id;
      const out = await chat(keys.A!, { ...target(), output_guardrails: [noMock] }, 'hello');
      expect(out.status).toBe(446);
      expect(out.body.hook_results.after_request_hooks[0]).toMatchObject({ id: noMock, verdict: false });
    });

    it('a saved config naming a stored guardrail, and the server-config guardrails are unaffected', async () => {
      const saved = await expectOk(call('POST', '/configs', keys.A!, { name: 'guarded', config: { ...target(), input_guardrails: [ids.noSecrets] } }));
      expect((await chat(keys.A!, saved.id, 'the secret')).status).toBe(446);
      expect((await chat(keys.A!, saved.id, 'hi')).status).toBe(200);
      // Inline guardrails keep working next to stored ones.
      const inline = await chat(keys.A!, { ...target(), input_guardrails: [{ id: 'inline', deny: true, 'default.contains': { words: ['cake'], operator: 'none' } }, ids.noSecrets] }, 'cake');
      expect(inline.status).toBe(446);
      expect(inline.body.hook_results.before_request_hooks.map((h: Json) => h.id)).toEqual(['inline']);
    });

    it("names resolve in the request's workspace: another workspace's guardrail is unknown (400), so is a missing one", async () => {
      const other = await chat(keys.B!, { ...target(), input_guardrails: [ids.noSecrets] }, 'the secret');
      expect(other.status).toBe(400);
      expect(other.body.error).toMatchObject({ code: 'invalid_request', param: 'x-gateway-config' });
      expect(other.body.error.message).toMatch(/input_guardrails\[0\]: no guardrail is named "pg-/);
      const missing = await chat(keys.A!, { ...target(), input_guardrails: ['pg-doesnotexist0000'] }, 'hi');
      expect(missing.status).toBe(400);
      // An organisation key acts in the workspace it names.
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-gateway-api-key': ADMIN, 'x-gateway-workspace': 'team-a', 'x-gateway-config': JSON.stringify({ ...target(), input_guardrails: ['no-secrets'] }) },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'secret' }] }),
      });
      expect(res.status).toBe(446);
    });

    it('an update is a new version that applies at once; versions are listed newest first; archived guardrails refuse the requests naming them', async () => {
      const cfg = { ...target(), input_guardrails: [ids.noSecrets] };
      expect((await chat(keys.A!, cfg, 'cake')).status).toBe(200);
      const renamed = await expectOk(call('PUT', `/guardrails/${ids.noSecrets}`, keys.A!, { name: 'No secrets or cake' }));
      expect(renamed.version).toBe(1);
      const v2 = await expectOk(call('PUT', `/guardrails/${ids.noSecrets}`, keys.A!, { deny: true, 'default.contains': { words: ['secret', 'cake'], operator: 'none' } }));
      expect(v2).toMatchObject({ version: 2, name: 'No secrets or cake', 'default.contains': { words: ['secret', 'cake'] } });
      expect((await chat(keys.A!, cfg, 'cake')).status).toBe(446);
      const versions = await expectOk(call('GET', `/guardrails/${ids.noSecrets}/versions`, keys.A!));
      expect(versions.data.map((x: Json) => x.version)).toEqual([2, 1]);
      expect(versions.data[1]['default.contains'].words).toEqual(['secret']);
      await expectError(call('PUT', `/guardrails/${ids.noSecrets}`, keys.A!, { deny: true }), 400, 'invalid_request', null, /names no check/);

      const archived = await expectOk(call('DELETE', `/guardrails/${ids.noSecrets}`, keys.A!));
      expect(archived.status).toBe('archived');
      expect(archived.archived_at).not.toBeNull();
      const refused = await chat(keys.A!, cfg, 'hello');
      expect(refused.status).toBe(400);
      expect(refused.body.error.message).toMatch(/is archived/);
      expect((await expectOk(call('PUT', `/guardrails/${ids.noSecrets}`, keys.A!, { status: 'active' }))).archived_at).toBeNull();
      expect((await chat(keys.A!, cfg, 'hello')).status).toBe(200);
    });

    it('concurrent updates of a guardrail, and of a saved config, each get their own version: 8 PUTs at once, all 200, versions 1 to 9 without gaps', async () => {
      const entry = (i: number) => ({ deny: true, 'default.contains': { words: [`word-${i}`], operator: 'none' } });
      const grd = (await expectOk(call('POST', '/guardrails', keys.A!, { name: 'Busy guardrail', ...entry(0) }))).id;
      const replies = await Promise.all(Array.from({ length: 8 }, (_, i) => call('PUT', `/guardrails/${grd}`, keys.A!, entry(i + 1))));
      expect(replies.map((r) => r.status), JSON.stringify(replies.find((r) => r.status !== 200)?.body)).toEqual(Array(8).fill(200));
      expect(replies.map((r) => r.body.version).sort((a, b) => a - b)).toEqual([2, 3, 4, 5, 6, 7, 8, 9]);
      const versions = await expectOk(call('GET', `/guardrails/${grd}/versions`, keys.A!));
      expect(versions.data.map((x: Json) => x.version)).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1]);
      // Each version keeps the entry of the update that took its number.
      for (const r of replies) expect(versions.data.find((x: Json) => x.version === r.body.version)['default.contains'].words).toEqual(r.body['default.contains'].words);
      expect((await expectOk(call('GET', `/guardrails/${grd}`, keys.A!))).version).toBe(9);

      const cfg = (await expectOk(call('POST', '/configs', keys.A!, { name: 'Busy config', config: { provider: 'openai', input_guardrails: ['busy-0'] } }))).id;
      const updates = await Promise.all(Array.from({ length: 8 }, (_, i) => call('PUT', `/configs/${cfg}`, keys.A!, { config: { provider: 'openai', input_guardrails: [`busy-${i}`] } })));
      expect(updates.map((r) => r.status), JSON.stringify(updates.find((r) => r.status !== 200)?.body)).toEqual(Array(8).fill(200));
      expect(updates.map((r) => r.body.version).sort((a, b) => a - b)).toEqual([2, 3, 4, 5, 6, 7, 8, 9]);
      const configVersions = await expectOk(call('GET', `/configs/${cfg}/versions`, keys.A!));
      expect(configVersions.data.map((x: Json) => x.version).sort((a: number, b: number) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
      expect((await expectOk(call('GET', `/configs/${cfg}`, keys.A!))).version).toBe(9);
    });
  });
}

suite('sqlite', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'gw-grd-sql-'));
  return () => sqliteStore({ dataDir: dir });
});

const schema = uniqueSchema('grd');
suite('postgres', async () => {
  if (!(await requireService('PostgreSQL', DATABASE_URL))) return null;
  return () => postgresStore({ url: DATABASE_URL, schema });
});

afterAll(async () => {
  if (await requireService('PostgreSQL', DATABASE_URL).catch(() => false)) await dropSchema(schema);
});
