import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';
import { expect, test } from 'vitest';
import { COLUMNS } from '../../../plugins/logs/entry.js';
import { serveGateway } from '../../helpers/serve.js';
import { logGatewayPlugins, sampleEntry, tempFile, waitFor } from './helpers.js';

const require = createRequire(import.meta.url);

test('retention: entries older than retentionDays are deleted in the background, newer ones stay', async () => {
  const file = await tempFile('retention.db');
  const gw = await serveGateway({ plugins: logGatewayPlugins({ file, logs: { retentionDays: 1, retentionIntervalMs: 1000 } }) });
  await gw.gateway.ready;
  const Database = require('better-sqlite3') as typeof BetterSqlite3;
  const db = new Database(file);
  db.pragma('busy_timeout = 5000');
  try {
    const insert = db.prepare(`INSERT INTO gateway_logs (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map(() => '?').join(', ')})`);
    const day = 86_400_000;
    for (const [trace, age] of [['old-1', 3 * day], ['old-2', day + 60_000], ['recent', day - 60_000]] as const) {
      const e = sampleEntry({ created_at: Date.now() - age, trace_id: trace });
      insert.run(...COLUMNS.map((c) => (c === 'attempts' ? '[]' : typeof e[c] === 'boolean' ? Number(e[c]) : (e[c] as unknown) ?? null)));
    }
    const traces = () => (db.prepare('SELECT trace_id FROM gateway_logs ORDER BY trace_id').all() as { trace_id: string }[]).map((r) => r.trace_id);
    expect(traces()).toEqual(['old-1', 'old-2', 'recent']);
    await waitFor(() => (traces().length === 1 ? true : undefined), 5000, 'the retention run');
    expect(traces()).toEqual(['recent']);
  } finally {
    db.close();
    await gw.close();
  }
});
