import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Migration } from '../../sdk/index.js';
import { runMigrations } from '../../server/migrate.js';
import { startProcess, type GatewayProcess } from '../helpers/process.js';
import { DATABASE_URL, dropSchema, requireService, uniqueSchema } from '../helpers/services.js';
import { startMockOpenAI, type MockUpstream } from '../mocks/openai-upstream.js';

/**
 * Rolling upgrades (docs/operations.md, "Rolling upgrades"): migrations only add (expand), so the version before
 * runs on the schema after; `switchyard-gateway migrate` applies them ahead of the rollout; the version running
 * tolerates what the next one adds.
 */

/** Every plugin's migrations, found by the files that declare them. */
async function everyMigration(): Promise<Array<{ file: string; name: string; migration: Migration }>> {
  const found: Array<{ file: string; name: string; migration: Migration }> = [];
  const walk = (dir: string): string[] => readdirSync(dir).flatMap((f) => (statSync(join(dir, f)).isDirectory() ? walk(join(dir, f)) : [join(dir, f)]));
  for (const file of walk('plugins').filter((f) => f.endsWith('.ts'))) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/export const (\w+_MIGRATIONS)\b/g)) {
      const mod = (await import(/* @vite-ignore */ pathToFileURL(resolve(file)).href)) as Record<string, unknown>;
      for (const migration of mod[m[1]!] as Migration[]) found.push({ file: relative('.', file), name: m[1]!, migration });
    }
  }
  return found;
}

/** A statement that takes away what a running version may still read or write. */
const DESTRUCTIVE = [/\bDROP\s+TABLE\b/i, /\bDROP\s+COLUMN\b/i, /\bRENAME\b/i, /\bALTER\s+COLUMN\b/i, /\bADD\s+COLUMN\b[^;]*\bNOT\s+NULL\b(?![^;]*\bDEFAULT\b)/i];

describe('migrations only expand', () => {
  test('no migration drops, renames or retypes what a running version uses, or adds a NOT NULL column without a default', async () => {
    const all = await everyMigration();
    expect(all.length).toBeGreaterThan(25);
    const offending: string[] = [];
    for (const { file, name, migration } of all) {
      const texts = typeof migration.up === 'string' ? [migration.up] : [migration.up.sqlite, migration.up.postgres];
      for (const sql of texts) for (const rule of DESTRUCTIVE) if (rule.test(sql)) offending.push(`${file} ${name} v${migration.version} (${migration.name}): ${rule}`);
    }
    // A contract step (dropping what no released version reads any more) is a deliberate exception, reviewed and
    // listed here with the release after which it may run: none so far.
    expect(offending).toEqual([]);
  });
});

describe('switchyard-gateway migrate, then a version that runs on a schema the next one expanded', async () => {
  const available = await requireService('PostgreSQL', DATABASE_URL);
  const schema = uniqueSchema('rolling');
  const ADMIN = 'rolling-upgrade-bootstrap-key-01';
  const env = { DATABASE_URL, GATEWAY_DATABASE_SCHEMA: schema, GATEWAY_BOOTSTRAP_KEY: ADMIN, GATEWAY_ENCRYPTION_KEY: 'f'.repeat(64), GATEWAY_DATA_DIR: '/tmp' };
  let mock: MockUpstream;
  let gateway: GatewayProcess | undefined;

  beforeAll(async () => {
    if (available) mock = await startMockOpenAI();
  });
  afterAll(async () => {
    if (gateway !== undefined) {
      gateway.child.kill('SIGTERM');
      await gateway.exited;
    }
    await mock?.close();
    if (available) await dropSchema(schema);
  });

  test('migrate applies every namespace once; a second run has nothing to do', async (ctx) => {
    if (!available) ctx.skip();
    const first = await runMigrations([], { ...process.env, ...env });
    expect(first.applied.length).toBe(first.all.length);
    expect(new Set(first.all.map((m) => m.namespace)).size).toBeGreaterThan(8);
    const second = await runMigrations([], { ...process.env, ...env });
    expect(second.applied).toEqual([]);
    expect(second.all).toEqual(first.all);
  }, 60_000);

  test('every table gains a column and the schema a table, as a next version would add: this one serves on it', async (ctx) => {
    if (!available) ctx.skip();
    const db = new pg.Client({ connectionString: DATABASE_URL });
    await db.connect();
    try {
      const tables = (await db.query("SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE'", [schema])).rows.map((r: { table_name: string }) => r.table_name);
      expect(tables.length).toBeGreaterThan(10);
      for (const t of tables) await db.query(`ALTER TABLE ${schema}.${t} ADD COLUMN next_version_note TEXT`);
      await db.query(`CREATE TABLE ${schema}.next_version_table (id TEXT PRIMARY KEY)`);
    } finally {
      await db.end();
    }
    gateway = await startProcess([], env);
    const url = `http://127.0.0.1:${gateway.port}/v1`;
    const call = async (method: string, path: string, body?: unknown, key = ADMIN) => {
      const res = await fetch(`${url}${path}`, { method, headers: { 'x-gateway-api-key': key, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
      return { status: res.status, body: (await res.json()) as Record<string, any> };
    };
    const ws = await call('POST', '/workspaces', { name: 'rolling', slug: 'rolling' });
    expect(ws.status, JSON.stringify(ws.body)).toBe(200);
    const key = await call('POST', '/api-keys', { type: 'workspace-service', name: 'rolling', workspace_id: ws.body.id, scopes: ['completions.write', 'logs.read'] });
    expect(key.status).toBe(200);
    expect((await call('POST', '/policies/rate-limits', { name: 'r', type: 'requests', unit: 'rph', value: 100, workspace_id: ws.body.id })).status).toBe(200);
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${url}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-gateway-api-key': key.body.key, 'x-gateway-config': JSON.stringify({ provider: 'openai', api_key: 'sk-rolling', custom_host: mock.baseURL }) },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello' }] }),
      });
      expect(res.status).toBe(200);
      await res.text();
    }
    let listed = 0;
    for (let i = 0; i < 100 && listed < 3; i++) {
      listed = ((await call('GET', '/logs?route=chat.completions', undefined, key.body.key)).body.data as unknown[]).length;
      if (listed < 3) await new Promise((r) => setTimeout(r, 50));
    }
    expect(listed).toBe(3);
  }, 60_000);
});
