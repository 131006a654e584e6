import Database from 'better-sqlite3';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestServer } from '../../helpers/gateway.js';
import { startBatchAnthropicMock, type BatchAnthropicMock } from '../../mocks/batch-anthropic.js';
import { anthropicHeaders, batchConfig, batchFile, batchLogs, fileLines, json, upload, waitForBatch } from './helpers.js';

let mock: BatchAnthropicMock;
let gw: Awaited<ReturnType<typeof startTestServer>>;
let headers: Record<string, string>;
let dataDir: string;

beforeAll(async () => {
  mock = await startBatchAnthropicMock(2);
  dataDir = await mkdtemp(join(tmpdir(), 'gw-batches-'));
  gw = await startTestServer({ config: batchConfig({ pollMs: 20, leaseMs: 2000, concurrency: 8 }), env: { GATEWAY_DATA_DIR: dataDir } });
  headers = anthropicHeaders(mock.url);
});
afterAll(async () => {
  await gw.close();
  await mock.close();
});

const fails = (i: number) => i % 10 === 0;

describe('a gateway-run batch of 200 lines on Anthropic', () => {
  test('runs every line once through the gateway: counts, output and error files in OpenAI format, states in order', async () => {
    const file = await json(await upload(gw.url, batchFile(200, fails), 'batch', headers));
    expect(file).toMatchObject({ object: 'file', purpose: 'batch', status: 'processed', filename: 'input.jsonl' });
    const created = await json(await fetch(`${gw.url}/v1/batches`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json', 'x-gateway-metadata': '{"team":"evals"}' },
      body: JSON.stringify({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h', metadata: { run: 'nightly' } }),
    }));
    expect(created).toMatchObject({ object: 'batch', status: 'validating', endpoint: '/v1/chat/completions', input_file_id: file.id, completion_window: '24h', metadata: { run: 'nightly' } });
    expect(created.request_counts).toEqual({ total: 0, completed: 0, failed: 0 });
    expect(created.expires_at - created.created_at).toBe(24 * 3600);
    for (const key of ['in_progress_at', 'finalizing_at', 'completed_at', 'failed_at', 'expired_at', 'cancelling_at', 'cancelled_at', 'output_file_id', 'error_file_id', 'errors']) {
      expect(created[key], key).toBeNull();
    }

    const { batch, seen } = await waitForBatch(gw.url, created.id, headers, (b) => b.status === 'completed');
    const order = ['validating', 'in_progress', 'finalizing', 'completed'];
    expect(seen.map((s) => order.indexOf(s))).toEqual([...seen.map((s) => order.indexOf(s))].sort((a, b) => a - b));
    expect(seen).toContain('in_progress');
    expect(batch.request_counts).toEqual({ total: 200, completed: 180, failed: 20 });
    expect(batch.in_progress_at).toBeGreaterThanOrEqual(batch.created_at);
    expect(batch.finalizing_at).toBeGreaterThanOrEqual(batch.in_progress_at);
    expect(batch.completed_at).toBeGreaterThanOrEqual(batch.finalizing_at);

    // Each line ran exactly once.
    const ran = mock.calls.filter((c) => /^(line|fail)-\d+$/.test(c));
    expect(ran).toHaveLength(200);
    expect(new Set(ran).size).toBe(200);
    expect(mock.peak).toBeLessThanOrEqual(8);

    const output = await fileLines(gw.url, batch.output_file_id, headers);
    const errors = await fileLines(gw.url, batch.error_file_id, headers);
    expect(output).toHaveLength(180);
    expect(errors).toHaveLength(20);
    const ids = [...output, ...errors].map((l) => l.custom_id);
    expect(new Set(ids).size).toBe(200);
    const first = output.find((l) => l.custom_id === 'req-1')!;
    expect(first.id).toMatch(/^batch_req_/);
    expect(first.error).toBeNull();
    expect(first.response.status_code).toBe(200);
    expect(first.response.request_id).toEqual(expect.any(String));
    expect(first.response.body).toMatchObject({ object: 'chat.completion', choices: [{ message: { content: 'echo line-1' } }] });
    const failed = errors.find((l) => l.custom_id === 'req-10')!;
    expect(failed.response.status_code).toBe(400);
    expect(failed.error).toMatchObject({ message: 'refused fail-10' });

    const meta = await json(await fetch(`${gw.url}/v1/files/${batch.output_file_id}`, { headers }));
    expect(meta).toMatchObject({ id: batch.output_file_id, object: 'file', purpose: 'batch_output' });

    // The lines were logged as the creator's requests, with the batch in their metadata.
    const logs = await batchLogs(gw.url, batch.id, headers, 200);
    expect(logs).toHaveLength(200);
    expect(logs[0]!.metadata).toMatchObject({ team: 'evals', batch_id: batch.id });
    expect(logs.every((e) => e.provider === 'anthropic' && e.api_key_id !== null)).toBe(true);

    // The provider key is sealed at rest and never shown.
    const db = new Database(join(dataDir, 'gateway.db'), { readonly: true });
    const row = db.prepare('SELECT request FROM gw_batches WHERE id = ?').get(batch.id) as { request: string };
    db.close();
    expect(row.request).toMatch(/^v1:[0-9a-f]{8}:/);
    expect(row.request).not.toContain('sk-ant');
    expect(JSON.stringify(batch)).not.toContain('sk-ant-secret-key-0001');
    expect(gw.logs.text()).not.toContain('sk-ant-secret-key-0001');
  });
});
