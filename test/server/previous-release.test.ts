import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { checkoutRelease, hasCommit, PREVIOUS_RELEASE, type ReleaseCheckout } from '../helpers/previous-release.js';
import { startProcess, type GatewayProcess } from '../helpers/process.js';
import { DATABASE_URL, dropSchema, requireService, uniqueSchema } from '../helpers/services.js';
import { startMockOpenAI, type MockUpstream } from '../mocks/openai-upstream.js';

/*
 * A rolling upgrade runs the released version and this one on one database (docs/operations.md, "Rolling
 * upgrades"). The released version's own code, checked out from git, against the schema this version migrated,
 * and this version against the schema the released one made and left: in both orders the two serve side by side,
 * and what one writes to the tables both touch (workspaces, API keys, saved configs with their sealed secrets,
 * stored prompts, limit policies, the request log) the other reads and uses.
 */

const ADMIN = 'previous-release-bootstrap-key-01';
const CONFIG_KEY = 'sk-release-config-key-0123456789';

/** Present: the PostgreSQL server, and the released commit in this clone. Absent under CI=true: a failure. */
async function prerequisites(): Promise<boolean> {
  if (!(await requireService('PostgreSQL', DATABASE_URL))) return false;
  if (hasCommit(PREVIOUS_RELEASE.commit)) return true;
  const message = `this clone does not hold the previous release's commit ${PREVIOUS_RELEASE.commit} (a shallow clone?)`;
  if (process.env.CI === 'true') throw new Error(`${message}; CI=true needs the full history`);
  console.warn(`\n!!! SKIPPED: ${message}; the upgrade tests against the released version cannot run.\n`);
  return false;
}

type Call = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => Promise<{ status: number; body: any; text: string }>;

function caller(p: GatewayProcess, key: string): Call {
  return async (method, path, body, headers = {}) => {
    const res = await fetch(`http://127.0.0.1:${p.port}/v1${path}`, {
      method,
      headers: { 'x-gateway-api-key': key, 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown = null;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON: the test's expectation names the text
    }
    return { status: res.status, body: parsed, text };
  };
}

describe(`the previous release (${PREVIOUS_RELEASE.version}, ${PREVIOUS_RELEASE.commit.slice(0, 7)}) and this version on one database`, async () => {
  const available = await prerequisites();
  let release: ReleaseCheckout | undefined;
  let mock: MockUpstream;
  const running: GatewayProcess[] = [];
  const schemas: string[] = [];

  beforeAll(async () => {
    if (!available) return;
    release = checkoutRelease(PREVIOUS_RELEASE.commit);
    mock = await startMockOpenAI();
  }, 60_000);
  afterAll(async () => {
    for (const p of running) {
      p.child.kill('SIGTERM');
      await p.exited;
    }
    release?.remove();
    await mock?.close();
    for (const s of schemas) await dropSchema(s);
  });

  /** What `writer` writes to the shared tables, `reader` uses: keys, a sealed config, a prompt, a policy, the log. */
  async function writesAndReads(writer: GatewayProcess, reader: GatewayProcess, name: string): Promise<void> {
    const adminW = caller(writer, ADMIN);
    const ws = await adminW('POST', '/workspaces', { name, slug: name });
    expect(ws.status, ws.text).toBe(200);
    const made = await adminW('POST', '/api-keys', {
      type: 'workspace-service',
      name,
      workspace_id: ws.body.id,
      scopes: ['completions.write', 'logs.read', 'configs.create', 'configs.read', 'prompts.create', 'prompts.read', 'policies.create', 'policies.read'],
    });
    expect(made.status, made.text).toBe(200);
    const onWriter = caller(writer, made.body.key);
    const onReader = caller(reader, made.body.key);

    // A saved config whose api_key the writer seals; the reader unseals it to call the provider.
    const config = await onWriter('POST', '/configs', { name, slug: name, config: { provider: 'openai', api_key: CONFIG_KEY, custom_host: mock.baseURL } });
    expect(config.status, config.text).toBe(200);
    const prompt = await onWriter('POST', '/prompts', { name, slug: name, provider: '@openai', template: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi {{who}}' }] } });
    expect(prompt.status, prompt.text).toBe(200);
    const policy = await onWriter('POST', '/policies/rate-limits', { name, type: 'requests', unit: 'rph', value: 1000, workspace_id: ws.body.id });
    expect(policy.status, policy.text).toBe(200);

    // The reader: the same key authenticates, the config, prompt and policy are there as written.
    expect((await onReader('GET', `/configs/${config.body.id}`)).body.config).toMatchObject({ api_key: '****6789', custom_host: mock.baseURL });
    const rendered = await onReader('POST', `/prompts/${name}/render`, { variables: { who: 'Ada' } });
    expect(rendered.status, rendered.text).toBe(200);
    expect(rendered.body.body.messages[0].content).toBe('Hi Ada');
    const policies = await onReader('GET', '/policies/rate-limits');
    expect(policies.status, policies.text).toBe(200);
    expect((policies.body.data as Array<{ id: string }>).map((p) => p.id)).toContain(policy.body.id);

    // One request through each, on the config the writer saved; the provider gets the sealed key from both.
    for (const [via, call] of [['writer', onWriter], ['reader', onReader]] as const) {
      const before = mock.requests.length;
      const res = await call('POST', '/chat/completions', { model: 'gpt-4o-mini', messages: [{ role: 'user', content: `Hello from the ${via}` }] }, { 'x-gateway-config': config.body.id });
      expect(res.status, `${via}: ${res.text}`).toBe(200);
      expect(mock.requests.length).toBe(before + 1);
      expect(mock.requests.at(-1)!.headers.authorization).toBe(`Bearer ${CONFIG_KEY}`);
    }

    // Each lists both requests in the log (whichever wrote the entry) and reads the other's entry in full.
    for (const [via, call] of [['writer', onWriter], ['reader', onReader]] as const) {
      let listed: Array<{ id: string }> = [];
      for (let i = 0; i < 200 && listed.length < 2; i++) {
        const logs = await call('GET', '/logs?route=chat.completions');
        expect(logs.status, logs.text).toBe(200);
        listed = logs.body.data;
        if (listed.length < 2) await new Promise((r) => setTimeout(r, 50));
      }
      expect(listed.length, `the log as the ${via} lists it`).toBe(2);
      for (const entry of listed) {
        const detail = await call('GET', `/logs/${entry.id}`);
        expect(detail.status, detail.text).toBe(200);
        expect(JSON.stringify(detail.body)).not.toContain(CONFIG_KEY);
      }
    }
  }

  async function pair(first: 'previous' | 'this'): Promise<{ previous: GatewayProcess; current: GatewayProcess }> {
    const schema = uniqueSchema(first === 'previous' ? 'release_prev' : 'release_this');
    schemas.push(schema);
    const env = { DATABASE_URL, GATEWAY_DATABASE_SCHEMA: schema, GATEWAY_BOOTSTRAP_KEY: ADMIN, GATEWAY_ENCRYPTION_KEY: 'e'.repeat(64) };
    const startPrevious = () => startProcess([], env, { source: release!.main });
    const startThis = () => startProcess([], env);
    // The one started first makes the schema (its migrations); the other starts on it, as in a rollout.
    const a = await (first === 'previous' ? startPrevious() : startThis());
    running.push(a);
    const b = await (first === 'previous' ? startThis() : startPrevious());
    running.push(b);
    return first === 'previous' ? { previous: a, current: b } : { previous: b, current: a };
  }

  test('the previous release made the schema; this version migrates it and serves beside it, each reading what the other wrote', async (ctx) => {
    if (!available) ctx.skip();
    const { previous, current } = await pair('previous');
    await writesAndReads(previous, current, 'prev-writes-a');
    await writesAndReads(current, previous, 'this-writes-a');
  }, 120_000);

  test('this version made the schema; the previous release runs on it beside this one, each reading what the other wrote', async (ctx) => {
    if (!available) ctx.skip();
    const { previous, current } = await pair('this');
    await writesAndReads(previous, current, 'prev-writes-b');
    await writesAndReads(current, previous, 'this-writes-b');
  }, 120_000);
});
