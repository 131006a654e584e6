import { GetObjectCommand, HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestServer } from '../../helpers/gateway.js';
import { startS3 } from '../../helpers/s3.js';
import { startBatchAnthropicMock, type BatchAnthropicMock } from '../../mocks/batch-anthropic.js';
import { anthropicHeaders, batchConfig, batchFile, fileLines, json, upload, waitForBatch } from './helpers.js';

/** The bucket store against s3rver (a dev dependency: it always runs, CI included). */
let s3: Awaited<ReturnType<typeof startS3>>;
let mock: BatchAnthropicMock;
let gw: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  s3 = await startS3();
  mock = await startBatchAnthropicMock(0);
  gw = await startTestServer({ config: batchConfig({ pollMs: 20, files: { s3: { bucket: s3.bucket, endpoint: s3.endpoint, prefix: 'files/', ...s3.credentials } } }) });
});
afterAll(async () => {
  await gw.close();
  await mock.close();
  await s3.close();
});

test('files kept in an S3-compatible bucket: upload, content, a batch read from it and its outputs written to it, delete', async () => {
  const headers = anthropicHeaders(mock.url);
  const content = batchFile(5, (i) => i === 5);
  const file = await json(await upload(gw.url, content, 'batch', headers));
  expect(await (await fetch(`${gw.url}/v1/files/${file.id}/content`, { headers })).text()).toBe(content);
  const created = await json(
    await fetch(`${gw.url}/v1/batches`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' }),
    }),
  );
  const { batch } = await waitForBatch(gw.url, created.id, headers, (b) => b.status === 'completed');
  expect(batch.request_counts).toEqual({ total: 5, completed: 4, failed: 1 });
  expect((await fileLines(gw.url, batch.output_file_id, headers)).map((l) => l.custom_id)).toEqual(['req-1', 'req-2', 'req-3', 'req-4']);
  expect((await fileLines(gw.url, batch.error_file_id, headers)).map((l) => l.custom_id)).toEqual(['req-5']);
  // The objects are in the bucket, under the prefix.
  const client = new S3Client({ endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: s3.credentials });
  const object = await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: `files/${file.id}` }));
  expect(await object.Body!.transformToString()).toBe(content);
  await client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: `files/${batch.output_file_id}` }));
  expect((await json(await fetch(`${gw.url}/v1/files/${file.id}`, { method: 'DELETE', headers }))).deleted).toBe(true);
  await expect(client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: `files/${file.id}` }))).rejects.toThrow();
  client.destroy();
  expect((await fetch(`${gw.url}/v1/files/${file.id}/content`, { headers })).status).toBe(404);
});
