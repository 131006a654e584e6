import { afterEach, describe, expect, test } from 'vitest';
import { startTestServer } from '../../helpers/gateway.js';
import { startBatchAnthropicMock, type BatchAnthropicMock } from '../../mocks/batch-anthropic.js';
import { anthropicHeaders, batchConfig, batchFile, fileLines, json, upload, waitForBatch } from './helpers.js';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

async function setup(delayMs: number, batches: Record<string, unknown>): Promise<{ mock: BatchAnthropicMock; url: string; headers: Record<string, string> }> {
  const mock = await startBatchAnthropicMock(delayMs);
  open.push(mock);
  const gw = await startTestServer({ config: batchConfig({ pollMs: 20, leaseMs: 3000, ...batches }) });
  open.push(gw);
  return { mock, url: gw.url, headers: anthropicHeaders(mock.url) };
}

async function create(url: string, headers: Record<string, string>, lines: number, window = '24h'): Promise<string> {
  const file = await json(await upload(url, batchFile(lines), 'batch', headers));
  const batch = await json(
    await fetch(`${url}/v1/batches`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: window }),
    }),
  );
  return batch.id as string;
}

describe('cancelling a gateway-run batch', () => {
  test('halfway: lines not started never start, lines in flight finish, every line is in the output or error file once', async () => {
    const { mock, url, headers } = await setup(15, { concurrency: 4 });
    const id = await create(url, headers, 200);
    await waitForBatch(url, id, headers, (b) => b.request_counts.completed >= 20);
    const cancelling = await json(await fetch(`${url}/v1/batches/${id}/cancel`, { method: 'POST', headers }));
    expect(['cancelling', 'cancelled']).toContain(cancelling.status);
    expect(cancelling.cancelling_at).toEqual(expect.any(Number));
    const { batch, seen } = await waitForBatch(url, id, headers, (b) => b.status === 'cancelled');
    expect(seen.at(-1)).toBe('cancelled');
    expect(batch.cancelled_at).toBeGreaterThanOrEqual(batch.cancelling_at);
    const done = batch.request_counts.completed + batch.request_counts.failed;
    expect(done).toBeLessThan(200);
    // Every line that reached the provider was recorded (the ones in flight finished), and nothing starts afterwards.
    expect(mock.calls).toHaveLength(done);
    await new Promise((r) => setTimeout(r, 150));
    expect(mock.started).toHaveLength(done);

    const output = await fileLines(url, batch.output_file_id, headers);
    const errors = await fileLines(url, batch.error_file_id, headers);
    expect(output).toHaveLength(batch.request_counts.completed);
    expect(errors).toHaveLength(200 - batch.request_counts.completed);
    expect(errors.every((l) => l.error.code === 'batch_cancelled' && l.response === null)).toBe(true);
    expect(new Set([...output, ...errors].map((l) => l.custom_id)).size).toBe(200);

    // A finished batch cannot be cancelled again; cancelling a cancelled one answers it as it is.
    expect((await json(await fetch(`${url}/v1/batches/${id}/cancel`, { method: 'POST', headers }))).status).toBe('cancelled');
  });

  test('a completed batch cannot be cancelled: 409 in the envelope', async () => {
    const { url, headers } = await setup(0, {});
    const id = await create(url, headers, 3);
    await waitForBatch(url, id, headers, (b) => b.status === 'completed');
    const res = await fetch(`${url}/v1/batches/${id}/cancel`, { method: 'POST', headers });
    const body = await json(res, 409);
    expect(body.error).toMatchObject({ code: 'conflict', param: 'batch_id', type: 'invalid_request_error' });
  });
});

describe('expiry', () => {
  test('once the completion window passes (fake clock), no line starts, finished lines are kept and the rest are in the error file as batch_expired', async () => {
    const clock = { now: Date.now() };
    const { mock, url, headers } = await setup(40, { concurrency: 2, now: () => clock.now });
    const id = await create(url, headers, 40, '1h');
    const created = await json(await fetch(`${url}/v1/batches/${id}`, { headers }));
    expect(created.expires_at - created.created_at).toBe(3600);
    await waitForBatch(url, id, headers, (b) => b.request_counts.completed >= 6);
    clock.now += 2 * 3600 * 1000;
    const { batch, seen } = await waitForBatch(url, id, headers, (b) => b.status === 'expired');
    expect(seen.at(-1)).toBe('expired');
    expect(batch.expired_at).toBeGreaterThanOrEqual(batch.expires_at);
    const completed = batch.request_counts.completed;
    expect(completed).toBeGreaterThanOrEqual(6);
    expect(completed).toBeLessThan(40);
    // At most the lines in flight at the moment of expiry reached the provider without being kept.
    expect(mock.started.length).toBeLessThanOrEqual(completed + 2);
    const started = mock.started.length;
    await new Promise((r) => setTimeout(r, 200));
    expect(mock.started.length).toBe(started);

    const output = await fileLines(url, batch.output_file_id, headers);
    const errors = await fileLines(url, batch.error_file_id, headers);
    expect(output).toHaveLength(completed);
    expect(errors).toHaveLength(40 - completed);
    expect(errors.every((l) => l.error.code === 'batch_expired')).toBe(true);
    expect(new Set([...output, ...errors].map((l) => l.custom_id)).size).toBe(40);
  });
});
