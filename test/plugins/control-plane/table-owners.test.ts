import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { migrate, type SqlClient } from '../../../sdk/index.js';
import { sqliteClient } from '../../../sdk/sqlite.js';
import { postgresClient } from '../../../plugins/stores/postgres/client.js';
import { CONTROL_PLANE_MIGRATIONS, CONTROL_PLANE_NAMESPACE } from '../../fixtures/control-plane-legacy-migrations.js';
import { BOOTSTRAP_KEY, startTestServer } from '../../helpers/gateway.js';
import { DATABASE_URL, dropSchema, requireService, uniqueSchema } from '../../helpers/services.js';

/**
 * Features own their tables (each migrates its own namespace), and a database
 * made when the control plane migrated every table keeps its rows: the new
 * namespaces adopt the old versions instead of running them again.
 */

/**
 * Columns the owners' own migrations added after the tables left the control plane's migrations (expand-only:
 * a database from before gains them, and keeps everything it had).
 */
const ADDED_BY_OWNERS: Record<string, string[]> = {
  cp_mcp_sessions: ['client_envelope'], // mcp migration 2
};

/** A schema without the owners' later columns: what must equal the legacy schema (nothing dropped or renamed). */
function withoutOwnersColumns(schema: Record<string, string[]>): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [t, cols] of Object.entries(schema)) out[t] = cols.filter((c) => !(ADDED_BY_OWNERS[t] ?? []).includes(c));
  return out;
}

/** Every table and its columns, to compare two databases' schemas. */
async function schema(db: SqlClient): Promise<Record<string, string[]>> {
  const rows =
    db.dialect === 'sqlite'
      ? await db.all<{ t: string; c: string }>("SELECT m.name AS t, p.name AS c FROM sqlite_master m JOIN pragma_table_info(m.name) p WHERE m.type = 'table' AND m.name LIKE 'cp\\_%' ESCAPE '\\'")
      : await db.all<{ t: string; c: string }>("SELECT table_name AS t, column_name AS c FROM information_schema.columns WHERE table_schema = current_schema() AND table_name LIKE 'cp\\_%'");
  const out: Record<string, string[]> = {};
  for (const r of rows) (out[r.t] ??= []).push(r.c);
  for (const t in out) out[t]!.sort();
  return out;
}

describe('SQLite, through the real server', () => {
  test('a database from before: the server starts on it, every row kept, nothing migrated twice', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'gw-owners-'));
    const old = sqliteClient(join(dataDir, 'gateway.db'));
    await migrate(old, CONTROL_PLANE_NAMESPACE, CONTROL_PLANE_MIGRATIONS);
    const before = await schema(old);
    await old.run("INSERT INTO cp_configs (id, workspace_id, slug, name, status, version, created_at, updated_at) VALUES ('pc-old', 'w', 'old', 'Old', 'active', 1, 0, 0)");
    await old.close();

    const gw = await startTestServer({ env: { GATEWAY_DATA_DIR: dataDir } });
    try {
      expect((await fetch(`${gw.url}/v1/workspaces`, { headers: { 'x-gateway-api-key': BOOTSTRAP_KEY } })).status).toBe(200);
    } finally {
      await gw.close();
    }
    const db = sqliteClient(join(dataDir, 'gateway.db'));
    try {
      expect(withoutOwnersColumns(await schema(db))).toEqual(before);
      expect(await db.get('SELECT name FROM cp_configs WHERE id = ?', ['pc-old'])).toEqual({ name: 'Old' });
      const namespaces = await db.all<{ namespace: string }>("SELECT DISTINCT namespace FROM schema_migrations WHERE namespace <> 'control-plane' AND namespace NOT IN ('logs', 'batches', 'responses')");
      expect(namespaces.length).toBeGreaterThan(5);
    } finally {
      await db.close();
    }
  });

  test('a new database gets the same tables from their owners', async () => {
    const legacyDir = await mkdtemp(join(tmpdir(), 'gw-owners-legacy-'));
    const legacy = sqliteClient(join(legacyDir, 'gateway.db'));
    await migrate(legacy, CONTROL_PLANE_NAMESPACE, CONTROL_PLANE_MIGRATIONS);
    const expected = await schema(legacy);
    await legacy.close();

    const dataDir = await mkdtemp(join(tmpdir(), 'gw-owners-new-'));
    const gw = await startTestServer({ env: { GATEWAY_DATA_DIR: dataDir } });
    await gw.close();
    const db = sqliteClient(join(dataDir, 'gateway.db'));
    try {
      expect(withoutOwnersColumns(await schema(db))).toEqual(expected);
      expect(await db.get("SELECT COUNT(*) AS n FROM schema_migrations WHERE namespace = 'control-plane'")).toEqual({ n: 0 });
    } finally {
      await db.close();
    }
  });
});

describe('PostgreSQL', async () => {
  const up = await requireService('postgres', DATABASE_URL);
  const url = up ? DATABASE_URL : null;
  const schemas: string[] = [];
  afterAll(async () => {
    for (const s of schemas) await dropSchema(s);
  });
  test.skipIf(url === null)('a database from before, upgraded by the server on PostgreSQL, keeps its rows and schema', async () => {
    const name = uniqueSchema('owners');
    schemas.push(name);
    const old = await postgresClient({ url: url!, schema: name });
    await migrate(old, CONTROL_PLANE_NAMESPACE, CONTROL_PLANE_MIGRATIONS);
    const before = await schema(old);
    await old.run("INSERT INTO cp_prompts (id, workspace_id, slug, name, status, latest_version, published_version, created_at, updated_at) VALUES ('pp-old', 'w', 'old', 'Old', 'active', 1, 1, 0, 0)");
    await old.close();
    const gw = await startTestServer({ env: { DATABASE_URL: url!, GATEWAY_DATABASE_SCHEMA: name } });
    await gw.close();
    const db = await postgresClient({ url: url!, schema: name });
    try {
      expect(withoutOwnersColumns(await schema(db))).toEqual(before);
      expect(await db.get('SELECT name FROM cp_prompts WHERE id = ?', ['pp-old'])).toEqual({ name: 'Old' });
    } finally {
      await db.close();
    }
  });
});
