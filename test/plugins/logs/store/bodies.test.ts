import { existsSync, readdirSync, statSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { BodySegments } from '../../../../plugins/logs/bodies/segments.js';
import { bodyStore } from '../../../../plugins/logs/store/bodies.js';
import { LOG_MIGRATIONS, LOGS_NAMESPACE } from '../../../../plugins/logs/store/migrations.js';
import { LogRepository } from '../../../../plugins/logs/store/repository.js';
import { migrate, type SqlClient } from '../../../../sdk/sql.js';
import { sqliteClient } from '../../../../sdk/sqlite.js';
import { sampleEntry, tempFile } from '../helpers.js';

/*
 * Bodies and headers out of the log row: in segment files beside an SQLite
 * file (compressed blocks, one per batch), read back for a log's detail, by
 * another connection, after a restart; and deleted with whole segments by
 * retention. (The side table, used with PostgreSQL and in-memory SQLite, is
 * covered by the store contract's round trip and retention tests.)
 */

const T0 = Date.UTC(2025, 3, 1);
const entry = (i: number, created: number) =>
  sampleEntry({
    created_at: created,
    request_body: `{"model":"gpt-4o","messages":[{"role":"user","content":"question ${i} ${'x'.repeat(300)}"}]}`,
    response_body: `{"choices":[{"message":{"content":"answer ${i}"}}]}`,
    request_headers: { 'content-type': 'application/json', 'x-n': String(i) },
    hook_results: i % 2 === 0 ? { before: [{ id: 'check', verdict: true }] } : null,
  });

describe('body segments', () => {
  const clients: SqlClient[] = [];
  afterAll(async () => {
    for (const c of clients) await c.close();
  });
  const open = async (file: string) => {
    const client = sqliteClient(file);
    clients.push(client);
    await migrate(client, LOGS_NAMESPACE, LOG_MIGRATIONS);
    return new LogRepository(client, bodyStore(`${file}.bodies`));
  };

  test('bodies are kept out of the row, in compressed segments, and read back by another connection', async () => {
    const file = await tempFile('bodies.db');
    const writer = await open(file);
    const entries = Array.from({ length: 50 }, (_, i) => entry(i, T0 + i));
    const none = sampleEntry({ created_at: T0 + 100, request_body: null, response_body: null, request_headers: null, hook_results: null });
    await writer.insert([...entries, none]);
    const raw = await writer.client.all<Record<string, unknown>>('SELECT id, request_body, response_body, request_headers, hook_results, body_ref FROM gateway_logs');
    for (const r of raw) {
      expect([r.request_body, r.response_body, r.request_headers, r.hook_results]).toEqual([null, null, null, null]);
      expect(r.body_ref === null).toBe(r.id === none.id);
    }
    const segments = readdirSync(`${file}.bodies`);
    expect(segments).toHaveLength(1);
    // 50 bodies of about 400 bytes in one deflated block: far less than they are.
    expect(statSync(join(`${file}.bodies`, segments[0]!)).size).toBeLessThan((50 * 400) / 4);
    const reader = await open(file);
    for (const e of [...entries, none]) {
      const got = await reader.get(e.id, undefined);
      expect(got).toMatchObject({ request_body: e.request_body, response_body: e.response_body, request_headers: e.request_headers, hook_results: e.hook_results });
      expect(got).not.toHaveProperty('body_ref');
    }
  });

  test('retention deletes the rows and the segments whose entries are all older; newer bodies stay readable', async () => {
    const file = await tempFile('retention.db');
    const repo = await open(file);
    const old = Array.from({ length: 10 }, (_, i) => entry(i, T0 + i));
    await repo.insert(old);
    // A second writer (a restart) starts a segment of its own.
    const later = new LogRepository(repo.client, bodyStore(`${file}.bodies`));
    const recent = Array.from({ length: 10 }, (_, i) => entry(100 + i, Date.now() + i));
    await later.insert(recent);
    const [first, second] = readdirSync(`${file}.bodies`).sort();
    // The first segment was last written when its entries were: long before the cut-off.
    utimesSync(join(`${file}.bodies`, first!), new Date(T0 + 10), new Date(T0 + 10));
    expect(await later.deleteBefore(T0 + 1000)).toBe(10);
    expect(existsSync(join(`${file}.bodies`, first!))).toBe(false);
    expect(existsSync(join(`${file}.bodies`, second!))).toBe(true);
    for (const e of recent) expect((await later.get(e.id, undefined))?.request_body).toBe(e.request_body);
    expect(await later.get(old[0]!.id, undefined)).toBeNull();
  });

  test('a reference to a segment that is gone, or outside the directory, reads as no body, not an error', async () => {
    const segments = new BodySegments(await tempFile('segments'));
    const [ref] = segments.append([['h', null, 'body', null]]);
    expect(segments.read(ref!)).toEqual(['h', null, 'body', null]);
    expect(segments.read('seg-1-0.dat:0:10:0')).toBeNull();
    expect(segments.read('../../etc/passwd:0:10:0')).toBeNull();
    segments.close();
  });
});
