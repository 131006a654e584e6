import { createRequire } from 'node:module';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { expect, test } from 'vitest';
import { sqliteClient } from '../../sdk/sqlite.js';

const require = createRequire(import.meta.url);

test('a transaction whose BEGIN fails on a locked file fails alone: the client is usable once the lock is gone', async () => {
  const file = join(await mkdtemp(join(tmpdir(), 'gw-sqlite-busy-')), 'busy.db');
  const client = sqliteClient(file, { busyTimeoutMs: 20 });
  await client.run('CREATE TABLE t (n INTEGER)');
  const Database = require('better-sqlite3') as typeof BetterSqlite3;
  const holder = new Database(file);
  holder.exec('BEGIN EXCLUSIVE');
  await expect(client.transaction((tx) => tx.run('INSERT INTO t (n) VALUES (1)'))).rejects.toMatchObject({ code: 'SQLITE_BUSY' });
  holder.exec('COMMIT');
  holder.close();
  // Before the fix, the failed BEGIN kept the client's lock and everything after waited forever.
  await client.transaction((tx) => tx.run('INSERT INTO t (n) VALUES (2)'));
  expect(await client.all('SELECT n FROM t')).toEqual([{ n: 2 }]);
  await client.close();
});
