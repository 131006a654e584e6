import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';
import { expect, test } from 'vitest';
import { memoryLogger } from '../../../helpers/gateway.js';
import { openSqlite, sampleEntry, tempFile, waitFor } from '../helpers.js';
import { migrateLogFile, threadSink, withBodies } from './sink-helpers.js';

const require = createRequire(import.meta.url);

const count = (file: string) => {
  const db = openSqlite(file);
  try {
    return (db.prepare('SELECT COUNT(*) AS c FROM gateway_logs').get() as { c: number }).c;
  } finally {
    db.close();
  }
};

test('the writer thread finishes entries (redaction, cutting) and writes them; failed batches are retried, then dropped and counted', async () => {
  const file = await tempFile('thread.db');
  const logs = memoryLogger('warn');
  // No tables yet: every insert fails.
  const s = threadSink(file, logs.logger);
  await s.open();
  s.start();
  for (let i = 0; i < 5; i++) s.push(sampleEntry({ trace_id: `fail-${i}` }), 1000);
  await s.flush();
  expect(s.stats()).toMatchObject({ depth: 0, bytes: 0, accepted: 5, written: 0, writeErrors: 2, dropped: { queue_full: 0, write_failed: 5, shutdown: 0 } });
  const warnings = logs.lines().filter((l) => l.msg === 'log store: writing a batch of log entries failed');
  expect(warnings).toHaveLength(1); // once per interval
  expect(warnings[0]).toMatchObject({ entries: 5, attempt: 1, giving_up: false });
  expect(logs.lines().some((l) => String(l.msg).startsWith('log store: log entries were dropped'))).toBe(true);

  // The tables appear: the next entries are written, finished on the thread.
  await migrateLogFile(file);
  s.push(sampleEntry({ trace_id: 'ok-1', request_body: `{"api_key":"sk-abcdefghijklmnopqrstuvwx","text":"${'y'.repeat(500)}"}`, request_body_truncated: false }), 1000);
  s.push(sampleEntry({ trace_id: 'ok-2' }), 1000);
  await s.flush();
  expect(s.stats()).toMatchObject({ depth: 0, written: 2, batches: 1 });
  const db = openSqlite(file);
  try {
    const row = withBodies(file, db.prepare("SELECT request_body_truncated, body_ref FROM gateway_logs WHERE trace_id = 'ok-1'").get() as Record<string, unknown>) as unknown as { request_body: string; request_body_truncated: number };
    expect(row.request_body.startsWith('{"api_key":"[REDACTED]","text":"yyy')).toBe(true);
    expect(Buffer.byteLength(row.request_body)).toBe(64);
    expect(row.request_body_truncated).toBe(1);
  } finally {
    db.close();
  }
  await s.close(1000);
  expect(s.stats().dropped.shutdown).toBe(0);
}, 30_000);

test('entries are gathered into transactions of up to batchSize on the thread', async () => {
  const file = await tempFile('batches.db');
  await migrateLogFile(file);
  const s = threadSink(file, undefined, { batchSize: 50, flushIntervalMs: 50 });
  await s.open();
  s.start();
  // 120 entries, handed over in many small groups (the main thread hands over every few ms).
  for (let i = 0; i < 120; i++) {
    s.push(sampleEntry({ trace_id: `b-${i}` }), 100);
    if (i % 7 === 0) await new Promise((r) => setTimeout(r, 1));
  }
  await s.flush();
  expect(s.stats()).toMatchObject({ written: 120, depth: 0 });
  // Not one transaction per hand-over: at most 120/50 full ones plus partial ones when the wait ran out.
  expect(s.stats().batches).toBeLessThanOrEqual(8);
  expect(count(file)).toBe(120);
  await s.close(1000);
}, 30_000);

test('close waits for the thread up to its timeout; what a locked file kept unwritten is counted as dropped at shutdown', async () => {
  const file = await tempFile('close.db');
  await migrateLogFile(file);
  const s = threadSink(file, undefined, { maxWriteAttempts: 1000 });
  await s.open();
  s.start();
  const Database = require('better-sqlite3') as typeof BetterSqlite3;
  const holder = new Database(file);
  holder.exec('BEGIN EXCLUSIVE');
  try {
    s.push(sampleEntry({ trace_id: 'stuck-1' }), 100);
    s.push(sampleEntry({ trace_id: 'stuck-2' }), 100);
    const started = Date.now();
    await s.close(300);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(s.stats()).toMatchObject({ depth: 0, written: 0, dropped: { shutdown: 2 } });
    // Closed: new entries are refused and counted.
    expect(s.push(sampleEntry(), 100)).toBe(false);
    expect(s.stats().dropped.shutdown).toBe(3);
  } finally {
    holder.exec('COMMIT');
    holder.close();
  }
  expect(count(file)).toBe(0);
}, 30_000);

test('the bound counts entries handed to the thread until it reports them', async () => {
  const file = await tempFile('bound.db');
  await migrateLogFile(file);
  const s = threadSink(file, undefined, { maxEntries: 10, maxWriteAttempts: 1000 });
  await s.open();
  s.start();
  const Database = require('better-sqlite3') as typeof BetterSqlite3;
  const holder = new Database(file);
  holder.exec('BEGIN EXCLUSIVE');
  for (let i = 0; i < 25; i++) s.push(sampleEntry({ trace_id: `bound-${i}` }), 100);
  // Handed over (the thread is stuck on the lock), still held.
  await new Promise((r) => setTimeout(r, 50));
  expect(s.stats()).toMatchObject({ depth: 10, bytes: 1000, accepted: 10, dropped: { queue_full: 15 } });
  holder.exec('COMMIT');
  holder.close();
  await waitFor(() => (s.stats().written === 10 ? true : undefined), 15_000, 'the held entries to be written');
  expect(s.stats()).toMatchObject({ depth: 0, bytes: 0 });
  await s.close(1000);
  expect(count(file)).toBe(10);
}, 30_000);
