import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { defaultConfig } from '../../../server/default-config.js';
import type { ServerConfig } from '../../../server/schema.js';
import { startTestServer } from '../../helpers/gateway.js';
import { startS3 } from '../../helpers/s3.js';
import { DATABASE_URL, dropSchema, requireService, uniqueSchema } from '../../helpers/services.js';
import { startBatchAnthropicMock, type BatchAnthropicMock } from '../../mocks/batch-anthropic.js';
import { anthropicHeaders, batchFile, fileLines, json, upload, waitForBatch } from './helpers.js';

/**
 * Two gateways sharing PostgreSQL (the queue) and an S3-compatible bucket (the files): one batch,
 * created on one, run by both; each line claimed by one instance at a time and run once.
 */
describe('two instances on PostgreSQL and S3 sharing one batch', async () => {
  const available = await requireService('PostgreSQL', DATABASE_URL);
  const schema = uniqueSchema('batches');
  let mock: BatchAnthropicMock;
  let s3: Awaited<ReturnType<typeof startS3>>;
  const gateways: Array<Awaited<ReturnType<typeof startTestServer>>> = [];

  beforeAll(async () => {
    if (!available) return;
    mock = await startBatchAnthropicMock(10);
    s3 = await startS3();
    const base = defaultConfig({ redisUrl: undefined, databaseUrl: DATABASE_URL });
    const config: ServerConfig = {
      ...base,
      plugins: base.plugins.map((p) =>
        p.name === 'batches'
          ? { name: 'batches', options: { pollMs: 20, leaseMs: 3000, concurrency: 4, files: { s3: { bucket: s3.bucket, endpoint: s3.endpoint, prefix: `${schema}/`, ...s3.credentials } } } }
          : p,
      ),
    };
    const env = { DATABASE_URL, GATEWAY_DATABASE_SCHEMA: schema, GATEWAY_ENCRYPTION_KEY: 'b'.repeat(64) };
    gateways.push(await startTestServer({ config, env }));
    gateways.push(await startTestServer({ config, env }));
  }, 60_000);

  afterAll(async () => {
    for (const g of gateways) await g.close();
    await mock?.close();
    await s3?.close();
    if (available) await dropSchema(schema);
  });

  test.skipIf(!available)('each line is claimed by one instance at a time and runs once; both take part; files live in the bucket', async () => {
    const [a, b] = gateways as [(typeof gateways)[0], (typeof gateways)[0]];
    const headers = anthropicHeaders(mock.url);
    const file = await json(await upload(a.url, batchFile(200, (i) => i % 10 === 0), 'batch', headers));
    // The file is in the bucket: the other instance reads it.
    expect(await (await fetch(`${b.url}/v1/files/${file.id}/content`, { headers })).text()).toBe(batchFile(200, (i) => i % 10 === 0));
    const created = await json(
      await fetch(`${a.url}/v1/batches`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' }),
      }),
    );
    const { batch } = await waitForBatch(b.url, created.id, headers, (x) => x.status === 'completed', 30_000);
    expect(batch.request_counts).toEqual({ total: 200, completed: 180, failed: 20 });
    expect(mock.started).toHaveLength(200);
    expect(new Set(mock.started).size).toBe(200);
    expect(mock.peak).toBeLessThanOrEqual(8);

    const ran = (g: (typeof gateways)[0]) => g.logs.lines().filter((l) => l.msg === 'request' && l.path === '/v1/chat/completions').length;
    await new Promise((r) => setTimeout(r, 100));
    expect(ran(a)).toBeGreaterThan(0);
    expect(ran(b)).toBeGreaterThan(0);
    expect(ran(a) + ran(b)).toBe(200);

    const output = await fileLines(a.url, batch.output_file_id, headers);
    const errors = await fileLines(b.url, batch.error_file_id, headers);
    expect(new Set([...output, ...errors].map((l) => l.custom_id)).size).toBe(200);
    expect(output.length + errors.length).toBe(200);

    expect((await json(await fetch(`${a.url}/v1/files/${file.id}`, { method: 'DELETE', headers }))).deleted).toBe(true);
    expect((await fetch(`${b.url}/v1/files/${file.id}/content`, { headers })).status).toBe(404);
  });
});
