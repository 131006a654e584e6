import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { buildDashboard, type DashboardBuild } from '../../../plugins/dashboard/build.js';
import { DEFAULT_CONFIG } from '../../../server/default-config.js';
import { BOOTSTRAP_KEY, GATEWAY_KEY, startTestServer } from '../../helpers/gateway.js';
import { startMockOpenAI, type MockUpstream } from '../../mocks/openai-upstream.js';

/**
 * The real server with the default config (SQLite file, the log's writer thread, the dashboard built
 * into a temp dir) against a mock OpenAI upstream: the gateway's own traffic (the dashboard, the API
 * reference, sign-in probes, health, metrics, reads of the log) is stored as `housekeeping` and left out
 * of analytics; the gateway's refusals (a guardrail's 446, a rate limit's and a budget's 429) are stored
 * with their error codes.
 */

type Json = Record<string, any>;

let mock: MockUpstream;
let built: DashboardBuild;
let gw: Awaited<ReturnType<typeof startTestServer>>;
/** Keys of two workspaces: one with a rate limit of one request a minute, one with a budget of one token. */
const keys: Record<'rate' | 'budget', string> = { rate: '', budget: '' };
/** After the admin calls that set the test up (they are API traffic): the analytics assertions start here. */
let since = 0;

const get = async (path: string, key: string | null = GATEWAY_KEY, headers: Record<string, string> = {}) =>
  fetch(`${gw.url}${path}`, { redirect: 'manual', headers: { ...(key === null ? {} : { 'x-gateway-api-key': key }), ...headers } });
const json = async (path: string): Promise<Json> => {
  const res = await get(path);
  expect(res.status, path).toBe(200);
  return res.json();
};
async function admin(path: string, body: Json, key = BOOTSTRAP_KEY): Promise<Json> {
  const res = await fetch(`${gw.url}/v1${path}`, { method: 'POST', headers: { 'x-gateway-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const answer = (await res.json()) as Json;
  expect(res.status, JSON.stringify(answer)).toBe(200);
  return answer;
}
const chat = (model: string, options: { key?: string; config?: Json; content?: string; trace?: string } = {}) =>
  fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-gateway-api-key': options.key ?? GATEWAY_KEY,
      'x-gateway-config': JSON.stringify({ provider: 'openai', api_key: 'sk-upstream-0001', custom_host: mock.baseURL, ...options.config }),
      ...(options.trace === undefined ? {} : { 'x-gateway-trace-id': options.trace }),
    },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: options.content ?? 'Hello' }] }),
  });

/** The entries of a log query once `done` holds for them (the writer thread stores entries a little after their answer). */
async function logsWhen(query: string, done: (entries: Json[]) => boolean): Promise<Json[]> {
  for (let tries = 0; ; tries++) {
    const page = await json(`/v1/logs?limit=500&${query}`);
    if (done(page.data)) return page.data;
    if (tries > 400) throw new Error(`the log never held what ${query} waits for: ${JSON.stringify(page.data.map((e: Json) => [e.route, e.status]))}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

beforeAll(async () => {
  built = await buildDashboard(await mkdtemp(join(tmpdir(), 'gw-dashboard-')));
  mock = await startMockOpenAI();
  gw = await startTestServer({
    config: { ...DEFAULT_CONFIG, plugins: DEFAULT_CONFIG.plugins.map((p) => (p.name === 'dashboard' ? { name: 'dashboard', options: { dir: built.dir } } : p)) },
  });
  for (const ws of ['rate', 'budget'] as const) {
    const workspace = await admin('/workspaces', { name: ws, slug: ws });
    keys[ws] = (await admin('/api-keys', { type: 'workspace-service', name: ws, workspace_id: workspace.id, scopes: ['completions.write', 'logs.read', 'policies.*'] })).key;
  }
  since = Date.now() + 1;
  await new Promise((r) => setTimeout(r, 2));
}, 60_000);

afterAll(async () => {
  await gw?.close();
  await mock?.close();
});

describe('housekeeping traffic', () => {
  test('the dashboard, the API reference, sign-in probes, health, metrics and reads of the log are stored as housekeeping and left out of analytics', async () => {
    // What the model saw: two answers and an upstream failure.
    for (const model of ['gpt-4o-mini', 'gpt-4o-mini', 'error-500']) await (await chat(model)).text();
    // What a person opening the dashboard and the API reference, and a monitor, cause.
    const asset = (ext: string) => built.files.find((f) => f.path.startsWith('assets/') && f.path.endsWith(ext))!.path;
    const visits: [string, string | null, number][] = [
      ['/dashboard', null, 308],
      ['/dashboard/', null, 200],
      [`/dashboard/${asset('.js')}`, null, 200],
      [`/dashboard/${asset('.css')}`, null, 200],
      ['/dashboard/session', null, 200],
      ['/v1/auth/whoami', null, 401],
      ['/v1/auth/sso/config', null, 200],
      ['/dashboard/session', GATEWAY_KEY, 200],
      ['/v1/auth/whoami', GATEWAY_KEY, 200],
      ['/v1/analytics/timeseries', GATEWAY_KEY, 200],
      ['/v1/analytics/groups/model', GATEWAY_KEY, 200],
      ['/v1/logs', GATEWAY_KEY, 200],
      ['/v1/openapi.json', GATEWAY_KEY, 200],
      ['/docs', null, 200],
      ['/health', null, 200],
      ['/metrics', GATEWAY_KEY, 200],
    ];
    for (const [path, key, status] of visits) {
      const res = await get(path, key);
      await res.arrayBuffer();
      expect(res.status, path).toBe(status);
    }
    const housekeepingRoutes = ['dashboard.redirect', 'dashboard.index', 'dashboard.asset', 'dashboard.session', 'auth.whoami', 'auth.sso.config', 'analytics.timeseries', 'analytics.groups', 'logs.list', 'openapi.document', 'openapi.viewer', 'health', 'metrics'];
    const stored = await logsWhen(`from=${since}`, (es) => housekeepingRoutes.every((r) => es.some((e) => e.route === r)) && es.filter((e) => e.route === 'chat.completions').length === 3);

    // Stored, every one of them, with its kind; the list shows both kinds unless asked.
    for (const e of stored) expect(e.kind, `${e.method} ${e.path}`).toBe(e.route === 'chat.completions' ? 'api' : 'housekeeping');
    expect(stored.find((e) => e.route === 'auth.whoami' && e.status === 401)).toMatchObject({ kind: 'housekeeping', error_code: 'unauthorized' });
    const api = (await json(`/v1/logs?from=${since}&kind=api`)).data as Json[];
    expect(api.map((e) => e.model).sort()).toEqual(['error-500', 'gpt-4o-mini', 'gpt-4o-mini']);
    const housekeeping = (await json(`/v1/logs?from=${since}&kind=housekeeping&limit=500`)).data as Json[];
    expect(housekeeping.length).toBeGreaterThanOrEqual(visits.length);
    expect(housekeeping.every((e) => e.kind === 'housekeeping')).toBe(true);

    // Analytics count the model traffic only: three requests, one error, no "(none)" model, no 401 or 308.
    const series = await json(`/v1/analytics/timeseries?from=${since}`);
    expect(series.totals).toMatchObject({ requests: 3, errors: 1, total_tokens: 22 });
    const models = await json(`/v1/analytics/groups/model?from=${since}&columns=error_count`);
    expect(models.data).toEqual([
      { model: 'gpt-4o-mini', requests: 2, error_count: 0 },
      { model: 'error-500', requests: 1, error_count: 1 },
    ]);
    const statuses = await json(`/v1/logs/groups/status_code?from=${since}`);
    expect(statuses.data).toEqual([
      { status_code: 200, requests: 2 },
      { status_code: 500, requests: 1 },
    ]);
    // Asked for, the housekeeping traffic is there too.
    const all = await json(`/v1/analytics/timeseries?from=${since}&kind=all`);
    expect(all.totals.requests).toBeGreaterThan(3 + visits.length - 1);
    expect(all.totals.errors).toBeGreaterThanOrEqual(2);
    const byRoute = await json(`/v1/analytics/groups/status_code?from=${since}&kind=housekeeping`);
    expect(byRoute.data.map((g: Json) => g.status_code)).toEqual(expect.arrayContaining([200, 308, 401]));
  });

  test('a kind other than api, housekeeping or all is a 400 naming it', async () => {
    for (const path of ['/v1/logs?kind=internal', '/v1/analytics/timeseries?kind=', '/v1/analytics/groups/model?kind=API']) {
      const res = await get(path);
      expect(res.status, path).toBe(400);
      expect((await res.json()).error).toMatchObject({ param: 'kind', code: 'invalid_request' });
    }
  });
});

describe("the dashboard's sign-in probe", () => {
  test('answers 200 whether or not the caller is signed in, with the reason when refused', async () => {
    const probe = async (key: string | null) => {
      const res = await get('/dashboard/session', key);
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-control')).toBe('no-store');
      return res.json();
    };
    expect(await probe(null)).toEqual({ object: 'dashboard.session', signed_in: false, reason: null });
    expect(await probe('not-a-key-0000')).toEqual({ object: 'dashboard.session', signed_in: false, reason: expect.stringContaining('not accepted') });
    expect(await probe(GATEWAY_KEY)).toEqual({ object: 'dashboard.session', signed_in: true, reason: null });
    expect(await probe(keys.rate)).toEqual({ object: 'dashboard.session', signed_in: true, reason: null });
    // The log names who probed, when someone did (the probe runs the gateway's auth itself).
    const probes = await logsWhen('route=dashboard.session', (es) => es.some((e) => e.workspace_id !== null));
    expect(probes.every((e) => e.status === 200 && e.kind === 'housekeeping')).toBe(true);
    expect(probes.some((e) => e.api_key_id?.startsWith('static:'))).toBe(true);
  });
});

describe('refusals are stored with their codes', () => {
  test('a guardrail denial (446) is stored with guardrail_denied and its message', async () => {
    const deny = { id: 'no-secret', type: 'guardrail', checks: [{ id: 'default.regexMatch', parameters: { rule: '\\bsecret\\b', not: true } }], on_fail: { deny: true } };
    const res = await chat('gpt-4o-mini', { config: { before_request_hooks: [deny] }, content: 'the secret', trace: 'refused-446' });
    expect(res.status).toBe(446);
    const [listed] = await logsWhen('trace_id=refused-446', (es) => es.length === 1);
    expect(listed).toMatchObject({ status: 446, error_code: 'guardrail_denied', kind: 'api' });
    const entry = await json(`/v1/logs/${listed!.id}`);
    expect(entry.error_message).toContain('no-secret');
    expect(entry.hook_results.before_request_hooks[0]).toMatchObject({ id: 'no-secret', verdict: false });
    // An error in analytics too: a denied request did not succeed.
    const series = await json('/v1/analytics/timeseries?status=446');
    expect(series.totals).toMatchObject({ requests: 1, errors: 1 });
  });

  test('a rate limit (429 rate_limit_exceeded) and a budget (429 usage_limit_exceeded) are stored with their codes and policies', async () => {
    const rate = await admin('/policies/rate-limits', { name: 'one a minute', type: 'requests', unit: 'rpm', value: 1 }, keys.rate);
    const budget = await admin('/policies/usage-limits', { name: 'one token', type: 'tokens', credit_limit: 1 }, keys.budget);
    expect((await chat('gpt-4o-mini', { key: keys.rate, trace: 'rate-ok' })).status).toBe(200);
    const limited = await chat('gpt-4o-mini', { key: keys.rate, trace: 'refused-rate' });
    expect(limited.status).toBe(429);
    expect((await limited.json()).error.code).toBe('rate_limit_exceeded');
    const broke = await chat('gpt-4o-mini', { key: keys.budget, trace: 'refused-budget' });
    expect(broke.status).toBe(429);
    expect((await broke.json()).error.code).toBe('usage_limit_exceeded');
    const [r] = await logsWhen('trace_id=refused-rate', (es) => es.length === 1);
    expect(r).toMatchObject({ status: 429, error_code: 'rate_limit_exceeded', limit_policy_id: rate.id, kind: 'api' });
    const [b] = await logsWhen('trace_id=refused-budget', (es) => es.length === 1);
    expect(b).toMatchObject({ status: 429, error_code: 'usage_limit_exceeded', limit_policy_id: budget.id, kind: 'api' });
    expect((await json(`/v1/logs/${b!.id}`)).error_message).toContain(budget.id);
  });
});
