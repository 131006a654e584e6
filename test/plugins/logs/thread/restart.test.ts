import { expect, test, vi } from 'vitest';
import type { Worker as NodeWorker } from 'node:worker_threads';
import { memoryLogger } from '../../../helpers/gateway.js';
import { openSqlite, sampleEntry, tempFile, waitFor } from '../helpers.js';
import { migrateLogFile, threadSink, withBodies } from './sink-helpers.js';

// Every writer thread the sink starts, so the test can end one the way a crash would.
const started = vi.hoisted(() => [] as NodeWorker[]);
vi.mock('node:worker_threads', async (original) => {
  const real = await original<typeof import('node:worker_threads')>();
  class Tracked extends real.Worker {
    constructor(...args: ConstructorParameters<typeof real.Worker>) {
      super(...args);
      started.push(this);
    }
  }
  return { ...real, Worker: Tracked };
});

test('a writer thread that ends unexpectedly is replaced: the loss is reported, entries sent while the new one starts are written by it, nothing stays counted', async () => {
  const file = await tempFile('restart.db');
  await migrateLogFile(file);
  const logs = memoryLogger('warn');
  const s = threadSink(file, logs.logger, { finish: { capture: 'truncated', captureBytes: 1024, scanLimit: 4096 }, flushIntervalMs: 10, warnIntervalMs: 0 });
  await s.open();
  s.start();
  for (let i = 0; i < 5; i++) s.push(sampleEntry({ trace_id: `before-${i}` }), 100);
  await s.flush();
  expect(s.stats()).toMatchObject({ written: 5, depth: 0 });
  expect(started).toHaveLength(1);

  // The thread ends while idle (between SQLite calls, where ending it cannot abort the process).
  const first = started[0]!;
  await first.terminate();
  await waitFor(() => (logs.lines().some((l) => l.msg === 'log store: the writer thread ended unexpectedly; a new one is started') ? true : undefined), 5000, 'the loss to be reported');

  // The next entries start a new thread and are written by it.
  for (let i = 0; i < 5; i++) s.push(sampleEntry({ trace_id: `after-${i}`, response_body: 'data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n', response_stream: true }), 100);
  await s.flush();
  expect(started).toHaveLength(2);
  expect(s.stats()).toMatchObject({ accepted: 10, written: 10, depth: 0, bytes: 0, dropped: { queue_full: 0, write_failed: 0, shutdown: 0 } });
  const db = openSqlite(file);
  try {
    const rows = (db.prepare("SELECT trace_id, body_ref FROM gateway_logs WHERE trace_id LIKE 'after-%' ORDER BY trace_id").all() as Record<string, unknown>[]).map((r) => withBodies(file, r)) as unknown as { trace_id: string; response_body: string }[];
    expect(rows.map((r) => r.trace_id)).toEqual(['after-0', 'after-1', 'after-2', 'after-3', 'after-4']);
    // Finished on the new thread as on the first: the stream's text assembled.
    expect(rows.every((r) => r.response_body === 'Hi')).toBe(true);
  } finally {
    db.close();
  }
  await s.close(2000);
  expect(s.stats().dropped.shutdown).toBe(0);
}, 30_000);
