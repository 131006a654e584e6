import Database from 'better-sqlite3';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { startTestServer } from '../../helpers/gateway.js';
import { startBatchAnthropicMock, type BatchAnthropicMock } from '../../mocks/batch-anthropic.js';
import { anthropicHeaders, batchConfig, batchFile, fileLines, json, upload, waitForBatch } from './helpers.js';

let mock: BatchAnthropicMock;
afterAll(() => mock?.close());

test('a graceful stop hands the lines in flight back after drainMs; the next start runs them, and every line is in a file once', async () => {
  mock = await startBatchAnthropicMock(1500);
  const dataDir = await mkdtemp(join(tmpdir(), 'gw-batch-stop-'));
  const config = batchConfig({ pollMs: 20, leaseMs: 5000, concurrency: 2, drainMs: 50 });
  const first = await startTestServer({ config, env: { GATEWAY_DATA_DIR: dataDir } });
  const headers = anthropicHeaders(mock.url);
  const file = await json(await upload(first.url, batchFile(4), 'batch', headers));
  const created = await json(
    await fetch(`${first.url}/v1/batches`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' }),
    }),
  );
  for (let i = 0; i < 200 && mock.active < 2; i++) await new Promise((r) => setTimeout(r, 10));
  expect(mock.active).toBe(2);
  await first.close();
  // Handed back at once: no lease to wait for.
  const db = new Database(join(dataDir, 'gateway.db'), { readonly: true });
  const states = db.prepare('SELECT state, lease_owner FROM gw_batch_lines WHERE batch_id = ? ORDER BY line').all(created.id) as Array<{ state: string; lease_owner: string | null }>;
  db.close();
  expect(states.map((s) => s.state)).toEqual(['pending', 'pending', 'pending', 'pending']);
  expect(states.every((s) => s.lease_owner === null)).toBe(true);

  mock.delayMs = 0;
  const second = await startTestServer({ config, env: { GATEWAY_DATA_DIR: dataDir } });
  try {
    const { batch } = await waitForBatch(second.url, created.id, headers, (b) => b.status === 'completed', 10_000);
    expect(batch.request_counts).toEqual({ total: 4, completed: 4, failed: 0 });
    const output = await fileLines(second.url, batch.output_file_id, headers);
    expect(output.map((l) => l.custom_id).sort()).toEqual(['req-1', 'req-2', 'req-3', 'req-4']);
  } finally {
    await second.close();
  }
});
