import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { postgresClient } from '../../../plugins/stores/postgres/client.js';
import { migrate, numberPlaceholders, splitStatements, type Migration, type SqlClient } from '../../../sdk/sql.js';
import { sqliteClient } from '../../../sdk/sqlite.js';
import { DATABASE_URL, dropSchema, requireService, uniqueSchema } from '../../helpers/services.js';


const MIGRATIONS: Migration[] = [
  { version: 1, name: 'items', up: "CREATE TABLE items (id TEXT PRIMARY KEY, n INTEGER NOT NULL, meta TEXT, at BIGINT NOT NULL); CREATE INDEX items_n ON items (n)" },
  { version: 2, name: 'note', up: { sqlite: "ALTER TABLE items ADD COLUMN note TEXT DEFAULT 'a;b'", postgres: "ALTER TABLE items ADD COLUMN note TEXT DEFAULT 'a;b'" } },
];

/** The same suite for every SQL store. */
function contract(name: string, open: () => Promise<SqlClient | null>) {
  describe(`${name} store`, () => {
    let db: SqlClient | null = null;
    afterAll(async () => {
      await db?.close();
    });

    test('migrations apply once, in order, and are recorded', async () => {
      db = await open();
      if (db === null) return;
      expect(await migrate(db, 'test', [MIGRATIONS[1]!, MIGRATIONS[0]!])).toEqual([1, 2]);
      expect(await migrate(db, 'test', MIGRATIONS)).toEqual([]);
      const rows = await db.all<{ version: number }>('SELECT version FROM schema_migrations WHERE namespace = ? ORDER BY version', ['test']);
      expect(rows.map((r) => Number(r.version))).toEqual([1, 2]);
      await expect(migrate(db, 'dup', [MIGRATIONS[0]!, { ...MIGRATIONS[0]!, name: 'again' }])).rejects.toThrow(/twice/);
    });

    test('a migration that adopts another namespace\'s version is recorded without running when that one is, and runs when not', async () => {
      if (db === null) return;
      const legacy: Migration[] = [
        { version: 1, name: 'things', up: 'CREATE TABLE things (id TEXT PRIMARY KEY)' },
        { version: 2, name: 'note', up: 'ALTER TABLE things ADD COLUMN note TEXT' },
      ];
      await migrate(db, 'legacy', legacy);
      // A feature takes `things` over: it adopts what the old namespace applied and runs only what is new.
      const taken: Migration[] = [
        { ...legacy[0]!, adopts: { namespace: 'legacy', version: 1 } },
        { ...legacy[1]!, adopts: { namespace: 'legacy', version: 2 } },
        { version: 3, name: 'extra', up: 'ALTER TABLE things ADD COLUMN extra TEXT', adopts: { namespace: 'legacy', version: 3 } },
      ];
      expect(await migrate(db, 'taken', taken)).toEqual([3]);
      const rows = await db.all<{ version: number }>('SELECT version FROM schema_migrations WHERE namespace = ? ORDER BY version', ['taken']);
      expect(rows.map((r) => Number(r.version))).toEqual([1, 2, 3]);
      await db.run("INSERT INTO things (id, note, extra) VALUES ('x', 'n', 'e')");
      // A new database, where the old namespace never ran: everything runs.
      const fresh: Migration[] = [{ version: 1, name: 'fresh', up: 'CREATE TABLE fresh_things (id TEXT PRIMARY KEY)', adopts: { namespace: 'never', version: 1 } }];
      expect(await migrate(db, 'fresh', fresh)).toEqual([1]);
      expect(await db.all('SELECT id FROM fresh_things')).toEqual([]);
    });

    test('insert, select, update, delete; JSON as text, BIGINT as numbers, defaults with semicolons', async () => {
      if (db === null) return;
      const at = Date.now();
      await db.run('INSERT INTO items (id, n, meta, at) VALUES (?, ?, ?, ?)', ['a', 1, JSON.stringify({ x: [1, 2] }), at]);
      await db.run('INSERT INTO items (id, n, meta, at) VALUES (?, ?, ?, ?)', ['b', 2, null, at]);
      const a = await db.get<{ id: string; n: number; meta: string; at: number; note: string }>('SELECT * FROM items WHERE id = ?', ['a']);
      expect(a).toMatchObject({ id: 'a', n: 1, at, note: 'a;b' });
      expect(JSON.parse(a!.meta)).toEqual({ x: [1, 2] });
      expect(typeof a!.at).toBe('number');
      expect((await db.run('UPDATE items SET n = n + 10 WHERE n >= ?', [1])).changes).toBe(2);
      expect((await db.all<{ n: number }>("SELECT n FROM items WHERE note = 'a;b' AND id <> '?' ORDER BY n")).map((r) => Number(r.n))).toEqual([11, 12]);
      expect((await db.run('DELETE FROM items WHERE id = ?', ['b'])).changes).toBe(1);
      expect(await db.get('SELECT * FROM items WHERE id = ?', ['b'])).toBeUndefined();
    });

    test('a transaction commits on success and rolls back on a throw', async () => {
      if (db === null) return;
      await db.transaction(async (tx) => {
        await tx.run('INSERT INTO items (id, n, at) VALUES (?, ?, ?)', ['t1', 5, 0]);
      });
      await expect(
        db.transaction(async (tx) => {
          await tx.run('INSERT INTO items (id, n, at) VALUES (?, ?, ?)', ['t2', 6, 0]);
          throw new Error('boom');
        }),
      ).rejects.toThrow('boom');
      expect(await db.get('SELECT id FROM items WHERE id = ?', ['t1'])).toBeDefined();
      expect(await db.get('SELECT id FROM items WHERE id = ?', ['t2'])).toBeUndefined();
    });

    test('a statement from outside a transaction that rolls back is not rolled back with it', async () => {
      if (db === null) return;
      let entered!: () => void;
      const inside = new Promise<void>((r) => (entered = r));
      const failing = db.transaction(async (tx) => {
        await tx.run('INSERT INTO items (id, n, at) VALUES (?, ?, ?)', ['rolled-back', 1, 0]);
        entered();
        await new Promise((r) => setTimeout(r, 20));
        throw new Error('undo');
      });
      await inside;
      const outside = db.run('INSERT INTO items (id, n, at) VALUES (?, ?, ?)', ['kept', 1, 0]);
      await expect(failing).rejects.toThrow('undo');
      await outside;
      expect(await db.get('SELECT id FROM items WHERE id = ?', ['rolled-back'])).toBeUndefined();
      expect(await db.get('SELECT id FROM items WHERE id = ?', ['kept'])).toEqual({ id: 'kept' });
    });

    test('concurrent transactions do not lose updates', async () => {
      if (db === null) return;
      await db.run('INSERT INTO items (id, n, at) VALUES (?, ?, ?)', ['counter', 0, 0]);
      await Promise.all(
        Array.from({ length: 20 }, () =>
          db!.transaction(async (tx) => {
            const row = await tx.get<{ n: number }>('SELECT n FROM items WHERE id = ? FOR UPDATE'.replace(tx.dialect === 'sqlite' ? ' FOR UPDATE' : '', ''), ['counter']);
            await tx.run('UPDATE items SET n = ? WHERE id = ?', [Number(row!.n) + 1, 'counter']);
          }),
        ),
      );
      expect(Number((await db.get<{ n: number }>('SELECT n FROM items WHERE id = ?', ['counter']))!.n)).toBe(20);
    });

    test('a constraint violation rejects with the database error', async () => {
      if (db === null) return;
      await expect(db.run('INSERT INTO items (id, n, at) VALUES (?, ?, ?)', ['a', 1, 0])).rejects.toThrow();
    });
  });
}

contract('sqlite', async () => sqliteClient(join(await mkdtemp(join(tmpdir(), 'gw-sqlite-')), 'test.db')));

describe('postgres', async () => {
  const available = await requireService('PostgreSQL', DATABASE_URL);
  const schema = uniqueSchema('t');
  afterAll(async () => {
    if (available) await dropSchema(schema);
  });
  contract('postgres', async () => (available ? postgresClient({ url: DATABASE_URL, schema }) : null));
});

test('placeholders and statement splitting ignore quoted text', () => {
  expect(numberPlaceholders("SELECT * FROM t WHERE a = ? AND b = '?' AND c = ?")).toBe("SELECT * FROM t WHERE a = $1 AND b = '?' AND c = $2");
  expect(splitStatements("CREATE TABLE a (x TEXT DEFAULT 'a;b'); CREATE INDEX i ON a (x);")).toEqual(["CREATE TABLE a (x TEXT DEFAULT 'a;b')", 'CREATE INDEX i ON a (x)']);
});
