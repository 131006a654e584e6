import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { GatewayPlugin } from '../../../core/index.js';
import { config } from '../../../plugins/config/index.js';
import { controlPlane } from '../../../plugins/control-plane/index.js';
import { limits } from '../../../plugins/limits/index.js';
import { providerHeaders } from '../../../plugins/provider-headers/index.js';
import { openai } from '../../../plugins/providers/openai/index.js';
import { postgresStore } from '../../../plugins/stores/postgres/index.js';
import { sqliteStore } from '../../../plugins/stores/sqlite/index.js';
import { serveGateway } from '../../helpers/serve.js';
import { DATABASE_URL, dropSchema, requireService, uniqueSchema } from '../../helpers/services.js';
import { startMockOpenAI, type MockUpstream } from '../../mocks/openai-upstream.js';

const ADMIN = 'admin-bootstrap-key-policies-0001';
/** Monday 2026-01-05, 10:00 UTC. */
const START = Date.parse('2026-01-05T10:00:00Z');
const DAY = 86_400_000;

type Json = Record<string, any>;
interface Reply {
  status: number;
  body: Json;
  headers: Headers;
}

/** The policy routes on one SQL store: validation, scoping, scopes, archive, resets as the API shows them. */
function suite(name: string, makeStore: () => Promise<(() => GatewayPlugin) | null>) {
  describe(`policy routes on ${name}`, () => {
    const clock = { now: START };
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
      return { status: res.status, body: text === '' ? {} : JSON.parse(text), headers: res.headers };
    };
    const expectOk = async (p: Promise<Reply>) => {
      const r = await p;
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body;
    };
    const expect400 = async (p: Promise<Reply>, param: string, message: RegExp) => {
      const r = await p;
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(r.body.error).toMatchObject({ code: 'invalid_request', type: 'invalid_request_error', param });
      expect(r.body.error.message).toMatch(message);
    };
    const rate = (over: Json = {}) => ({ name: 'per user', type: 'requests', unit: 'rpm', value: 60, group_by: [{ key: 'user' }], ...over });
    const usage = (over: Json = {}) => ({ name: 'team budget', type: 'cost', credit_limit: 50, periodic_reset: 'monthly', ...over });

    beforeAll(async () => {
      store = await makeStore();
      if (store === null) return;
      mock = await startMockOpenAI();
      gw = await serveGateway({
        plugins: [
          store(),
          controlPlane({ bootstrapKey: ADMIN, dataDir: await mkdtemp(join(tmpdir(), 'gw-pol-')), now: () => clock.now, announce: () => undefined }),
          config(),
          providerHeaders(),
          limits({ now: () => clock.now }),
          openai({}),
        ],
      });
      await gw.gateway.ready;
      ids.A = (await expectOk(call('POST', '/workspaces', ADMIN, { name: 'Team A', slug: 'team-a' }))).id;
      ids.B = (await expectOk(call('POST', '/workspaces', ADMIN, { name: 'Team B', slug: 'team-b' }))).id;
      for (const ws of ['A', 'B']) {
        keys[ws] = (await expectOk(call('POST', '/api-keys', ADMIN, { type: 'workspace-service', name: `${ws} admin`, workspace_id: ids[ws], scopes: ['policies.*', 'completions.write'] }))).key;
      }
      keys.reader = (await expectOk(call('POST', '/api-keys', ADMIN, { type: 'workspace-service', name: 'reader', workspace_id: ids.A, scopes: ['policies.read', 'completions.write'] }))).key;
      keys.bare = (await expectOk(call('POST', '/api-keys', ADMIN, { type: 'workspace-service', name: 'bare', workspace_id: ids.A, scopes: ['completions.write'] }))).key;
      ids.rateA = (await expectOk(call('POST', '/policies/rate-limits', keys.A!, rate()))).id;
      ids.usageA = (await expectOk(call('POST', '/policies/usage-limits', keys.A!, usage()))).id;
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

    it('a rate-limit policy has every field of the spec; the caller\'s workspace is the default', async () => {
      const p = await expectOk(call('GET', `/policies/rate-limits/${ids.rateA}`, keys.A!));
      expect(p).toMatchObject({
        id: ids.rateA,
        object: 'policy_rate_limits',
        name: 'per user',
        type: 'requests',
        unit: 'rpm',
        value: 60,
        status: 'active',
        workspace_id: ids.A,
        conditions: [],
        group_by: [{ key: 'user' }],
        fail_open: true,
        managed_by: 'workspace',
      });
      expect(p.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(p.organisation_id).toMatch(/^[0-9a-f-]{36}$/);
      expect(p.created_at).toBe(new Date(START).toISOString());
      expect(p.last_updated_at).toBe(new Date(START).toISOString());
      // An organisation-level key names the workspace by slug, else acts in `default`.
      const bySlug = await expectOk(call('POST', '/policies/rate-limits', ADMIN, rate({ name: 'org-set', workspace_id: 'team-b', type: 'tokens', unit: 'rpd', value: 100_000, group_by: [] })));
      expect(bySlug).toMatchObject({ workspace_id: ids.B, managed_by: 'organisation', type: 'tokens', unit: 'rpd' });
      ids.rateB = bySlug.id;
    });

    it('a usage-limit policy: the spec\'s fields, the first monthly reset at 00:00 UTC on the 1st, no reset yet', async () => {
      const p = await expectOk(call('GET', `/policies/usage-limits/${ids.usageA}`, keys.A!));
      expect(p).toMatchObject({
        object: 'policy_usage_limits',
        type: 'cost',
        credit_limit: 50,
        alert_threshold: null,
        periodic_reset: 'monthly',
        periodic_reset_days: null,
        next_usage_reset_at: '2026-02-01T00:00:00.000Z',
        last_reset_at: null,
        status: 'active',
        workspace_id: ids.A,
        conditions: [],
        group_by: [],
      });
    });

    it('next_usage_reset_at is normalised to 00:00 UTC; after it passes it moves on by the rule and last_reset_at is set', async () => {
      const p = await expectOk(call('POST', '/policies/usage-limits', keys.A!, usage({ name: 'weekly from a date', periodic_reset: 'weekly', next_usage_reset_at: '2026-01-08T15:30:00+02:00' })));
      expect(p.next_usage_reset_at).toBe('2026-01-08T00:00:00.000Z');
      const days = await expectOk(call('POST', '/policies/usage-limits', keys.A!, usage({ name: 'ten days', type: 'tokens', credit_limit: 1000, periodic_reset: null, periodic_reset_days: 10 })));
      expect(days.next_usage_reset_at).toBe('2026-01-15T00:00:00.000Z');
      clock.now = Date.parse('2026-01-20T12:00:00Z');
      try {
        const later = await expectOk(call('GET', `/policies/usage-limits/${p.id}`, keys.A!));
        expect([later.last_reset_at, later.next_usage_reset_at]).toEqual(['2026-01-15T00:00:00.000Z', '2026-01-22T00:00:00.000Z']);
        const tenDays = await expectOk(call('GET', `/policies/usage-limits/${days.id}`, keys.A!));
        expect([tenDays.last_reset_at, tenDays.next_usage_reset_at]).toEqual(['2026-01-15T00:00:00.000Z', '2026-01-25T00:00:00.000Z']);
      } finally {
        clock.now = START;
      }
      // Archived so that later list counts stay simple.
      for (const id of [p.id, days.id]) await expectOk(call('DELETE', `/policies/usage-limits/${id}`, keys.A!));
    });

    it('validation: each bad field is a 400 naming it', async () => {
      const R = '/policies/rate-limits';
      const U = '/policies/usage-limits';
      await expect400(call('POST', R, keys.A!, rate({ unit: 'rps' })), 'unit', /rpm, rph, rpd, rpw/);
      await expect400(call('POST', R, keys.A!, rate({ type: 'cost' })), 'type', /requests, tokens/);
      await expect400(call('POST', R, keys.A!, rate({ value: 0 })), 'value', /at least 1/);
      await expect400(call('POST', R, keys.A!, rate({ value: '5' })), 'value', /must be a number/);
      await expect400(call('POST', R, keys.A!, rate({ conditions: [{ key: 'colour', value: 'red' }] })), 'conditions[0].key', /must be one of workspace_id, api_key, endpoint_type, provider, model, user or metadata/);
      await expect400(call('POST', R, keys.A!, rate({ conditions: [{ key: 'endpoint_type', value: 'images' }] })), 'conditions[0].value', /chat, completions/);
      await expect400(call('POST', R, keys.A!, rate({ conditions: [{ key: 'workspace_id', value: 'team-b' }] })), 'conditions[0].value', /own workspace/);
      await expect400(call('POST', R, keys.A!, rate({ group_by: [{ key: 'provider' }] })), 'group_by[0].key', /must be one of api_key/);
      await expect400(call('POST', R, keys.A!, rate({ group_by: [{ key: 'user' }, { key: 'user' }] })), 'group_by', /twice/);
      await expect400(call('POST', R, keys.A!, rate({ colour: 'red' })), 'colour', /.+/);
      await expect400(call('POST', U, keys.A!, usage({ periodic_reset: null, periodic_reset_days: 0 })), 'periodic_reset_days', /from 1 to 365/);
      await expect400(call('POST', U, keys.A!, usage({ periodic_reset: null, periodic_reset_days: 366 })), 'periodic_reset_days', /from 1 to 365/);
      await expect400(call('POST', U, keys.A!, usage({ periodic_reset: 'monthly', periodic_reset_days: 30 })), 'periodic_reset_days', /mutually exclusive/);
      await expect400(call('POST', U, keys.A!, usage({ periodic_reset: 'daily' })), 'periodic_reset', /weekly, monthly/);
      await expect400(call('POST', U, keys.A!, usage({ credit_limit: 0 })), 'credit_limit', /above 0/);
      await expect400(call('POST', U, keys.A!, usage({ type: 'tokens', credit_limit: 10.5 })), 'credit_limit', /whole number/);
      await expect400(call('POST', U, keys.A!, usage({ alert_threshold: 60 })), 'alert_threshold', /exceed credit_limit/);
      await expect400(call('POST', U, keys.A!, usage({ next_usage_reset_at: 'soon' })), 'next_usage_reset_at', /ISO 8601/);
      await expect400(call('POST', U, keys.A!, usage({ next_usage_reset_at: '2026-01-05T23:00:00Z' })), 'next_usage_reset_at', /a day after today/);
      await expect400(call('PUT', `${R}/${ids.rateA}`, keys.A!, { type: 'tokens' }), 'type', /cannot change/);
      await expect400(call('PUT', `${U}/${ids.usageA}`, keys.A!, { periodic_reset: 'weekly', periodic_reset_days: 7 }), 'periodic_reset_days', /mutually exclusive/);
      await expect400(call('PUT', `${U}/${ids.usageA}`, keys.A!, { periodic_reset_days: 366 }), 'periodic_reset_days', /from 1 to 365/);
      await expect400(call('PUT', `${U}/${ids.usageA}`, keys.A!, { alert_threshold: 51 }), 'alert_threshold', /exceed credit_limit/);
      const query = await call('GET', `${R}?page_size=-1`, keys.A!);
      expect(query.status).toBe(400);
      expect(query.body.error.param).toBe('page_size');
      const unknown = await call('GET', `${R}?colour=red`, keys.A!);
      expect([unknown.status, unknown.body.error.param]).toEqual([400, 'colour']);
    });

    it('another workspace\'s policy is a 404 on every route, as if it did not exist', async () => {
      for (const [method, path, body] of [
        ['GET', `/policies/rate-limits/${ids.rateA}`],
        ['PUT', `/policies/rate-limits/${ids.rateA}`, { value: 1 }],
        ['DELETE', `/policies/rate-limits/${ids.rateA}`],
        ['GET', `/policies/rate-limits/${ids.rateA}/usage`],
        ['GET', `/policies/usage-limits/${ids.usageA}`],
        ['PUT', `/policies/usage-limits/${ids.usageA}`, { credit_limit: 1 }],
        ['DELETE', `/policies/usage-limits/${ids.usageA}`],
        ['GET', `/policies/usage-limits/${ids.usageA}/usage`],
      ] as const) {
        const r = await call(method, path, keys.B!, body);
        expect(r.status, `${method} ${path}`).toBe(404);
        expect(r.body.error.code).toBe('not_found');
      }
      // A rate-limit id is no usage-limit id either.
      expect((await call('GET', `/policies/usage-limits/${ids.rateA}`, keys.A!)).status).toBe(404);
      const list = await expectOk(call('GET', '/policies/rate-limits', keys.B!));
      expect(list.data.map((p: Json) => p.id)).toEqual([ids.rateB]);
      expect((await call('GET', '/policies/rate-limits?workspace_id=team-a', keys.B!)).status).toBe(404);
    });

    it('scopes: reading needs policies.read, writing policies.create / update / delete', async () => {
      const denied = await call('GET', '/policies/rate-limits', keys.bare!);
      expect(denied.status).toBe(403);
      expect(denied.body.error.message).toContain('"policies.read"');
      expect((await call('GET', `/policies/usage-limits/${ids.usageA}`, keys.reader!)).status).toBe(200);
      for (const [method, path, scope, body] of [
        ['POST', '/policies/rate-limits', 'policies.create', rate()],
        ['PUT', `/policies/rate-limits/${ids.rateA}`, 'policies.update', { value: 1 }],
        ['DELETE', `/policies/usage-limits/${ids.usageA}`, 'policies.delete'],
      ] as const) {
        const r = await call(method, path, keys.reader!, body);
        expect(r.status).toBe(403);
        expect(r.body.error.message).toContain(`"${scope}"`);
      }
    });

    it('a policy an organisation-level key set cannot be changed or archived from the workspace', async () => {
      const org = await expectOk(call('POST', '/policies/usage-limits', ADMIN, usage({ name: 'org cap', workspace_id: ids.A })));
      expect(org.managed_by).toBe('organisation');
      for (const [method, body] of [['PUT', { credit_limit: 5000 }], ['DELETE', undefined]] as const) {
        const r = await call(method, `/policies/usage-limits/${org.id}`, keys.A!, body);
        expect(r.status).toBe(403);
        expect(r.body.error.message).toMatch(/organisation-level key/);
      }
      expect((await expectOk(call('GET', `/policies/usage-limits/${org.id}`, keys.A!))).credit_limit).toBe(50);
      expect((await expectOk(call('PUT', `/policies/usage-limits/${org.id}`, ADMIN, { credit_limit: 75 }))).credit_limit).toBe(75);
      await expectOk(call('DELETE', `/policies/usage-limits/${org.id}`, ADMIN));
    });

    it('lists: the spec envelope, filters, pages; archive keeps the policy, and status filters it', async () => {
      // Lists are oldest first.
      clock.now = START + 1000;
      const extra = await expectOk(call('POST', '/policies/rate-limits', keys.A!, rate({ name: 'hourly tokens', type: 'tokens', unit: 'rph', value: 5000 })));
      clock.now = START;
      const all = await expectOk(call('GET', '/policies/rate-limits', keys.A!));
      expect(all).toMatchObject({ object: 'list', total: 2 });
      expect(all.data.map((p: Json) => p.id)).toEqual([ids.rateA, extra.id]);
      expect((await expectOk(call('GET', '/policies/rate-limits?type=tokens', keys.A!))).data.map((p: Json) => p.id)).toEqual([extra.id]);
      expect((await expectOk(call('GET', '/policies/rate-limits?unit=rpm', keys.A!))).data.map((p: Json) => p.id)).toEqual([ids.rateA]);
      const page = await expectOk(call('GET', '/policies/rate-limits?page_size=1&current_page=1', keys.A!));
      expect([page.total, page.data.map((p: Json) => p.id)]).toEqual([2, [extra.id]]);
      expect((await expectOk(call('GET', '/policies/rate-limits?page_size=0', keys.A!))).data).toEqual([]);

      clock.now = START + 60_000;
      const archived = await expectOk(call('DELETE', `/policies/rate-limits/${extra.id}`, keys.A!));
      expect(archived).toMatchObject({ id: extra.id, status: 'archived', last_updated_at: new Date(START + 60_000).toISOString() });
      expect((await expectOk(call('DELETE', `/policies/rate-limits/${extra.id}`, keys.A!))).status).toBe('archived');
      clock.now = START;
      expect((await expectOk(call('GET', '/policies/rate-limits?status=archived', keys.A!))).data.map((p: Json) => p.id)).toEqual([extra.id]);
      expect((await expectOk(call('GET', '/policies/rate-limits?status=active', keys.A!))).data.map((p: Json) => p.id)).toEqual([ids.rateA]);
      // `status` on a single retrieval: only a policy in that status is found.
      expect((await call('GET', `/policies/rate-limits/${extra.id}?status=active`, keys.A!)).status).toBe(404);
      expect((await expectOk(call('GET', `/policies/rate-limits/${extra.id}?status=archived`, keys.A!))).status).toBe('archived');
      // Restored with PUT.
      expect((await expectOk(call('PUT', `/policies/rate-limits/${extra.id}`, keys.A!, { status: 'active', value: 6000 }))).value).toBe(6000);
      await expectOk(call('DELETE', `/policies/rate-limits/${extra.id}`, keys.A!));
      // An organisation-level key without workspace_id sees every workspace's.
      const org = await expectOk(call('GET', '/policies/rate-limits?status=active', ADMIN));
      expect(org.data.map((p: Json) => p.id).sort()).toEqual([ids.rateA, ids.rateB].sort());
      expect((await expectOk(call('GET', '/policies/usage-limits?workspace_id=team-a&status=active', ADMIN))).data.map((p: Json) => p.id)).toEqual([ids.usageA]);
    });

    it('PUT updates the fields it names; a workspace_id condition is stored as the id', async () => {
      const updated = await expectOk(
        call('PUT', `/policies/rate-limits/${ids.rateA}`, keys.A!, { name: 'per user, chat', conditions: [{ key: 'workspace_id', value: 'team-a' }, { key: 'endpoint_type', value: 'chat' }], fail_open: false }),
      );
      expect(updated).toMatchObject({ name: 'per user, chat', value: 60, unit: 'rpm', fail_open: false, conditions: [{ key: 'workspace_id', value: ids.A }, { key: 'endpoint_type', value: 'chat' }] });
      const budget = await expectOk(call('PUT', `/policies/usage-limits/${ids.usageA}`, keys.A!, { periodic_reset_days: 7 }));
      expect(budget).toMatchObject({ periodic_reset: null, periodic_reset_days: 7, next_usage_reset_at: '2026-01-12T00:00:00.000Z' });
      const back = await expectOk(call('PUT', `/policies/usage-limits/${ids.usageA}`, keys.A!, { periodic_reset: 'monthly', next_usage_reset_at: '2026-01-20' }));
      expect(back).toMatchObject({ periodic_reset: 'monthly', periodic_reset_days: null, next_usage_reset_at: '2026-01-20T00:00:00.000Z' });
      clock.now = START + 20 * DAY;
      try {
        // Monthly from the 20th now: 2026-01-20, then 2026-02-20.
        expect((await expectOk(call('GET', `/policies/usage-limits/${ids.usageA}`, keys.A!))).next_usage_reset_at).toBe('2026-02-20T00:00:00.000Z');
      } finally {
        clock.now = START;
      }
    });

    it('the usage route reads the counters of the current window', async () => {
      const r = await expectOk(call('GET', `/policies/rate-limits/${ids.rateB}/usage`, ADMIN));
      expect(r).toMatchObject({ object: 'list', policy_id: ids.rateB, limit: 100_000, period_start: '2026-01-05T00:00:00.000Z', period_end: '2026-01-06T00:00:00.000Z', total: 0, data: [] });
    });
  });
}

suite('sqlite', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'gw-pol-sqlite-'));
  return () => sqliteStore({ file: join(dir, 'gateway.db') });
});

const schema = uniqueSchema('pol');
suite('postgres', async () => {
  if (!(await requireService('PostgreSQL', DATABASE_URL))) return null;
  return () => postgresStore({ url: DATABASE_URL, schema });
});

afterAll(async () => {
  if (await requireService('PostgreSQL', DATABASE_URL).catch(() => false)) await dropSchema(schema);
});
