import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { GATEWAY_KEY, startTestServer } from '../../helpers/gateway.js';
import { startResourcesMock, type ResourcesMock } from '../../mocks/resources.js';
import { batchConfig, batchFile, json, upload } from './helpers.js';

let gw: Awaited<ReturnType<typeof startTestServer>>;
beforeAll(async () => {
  gw = await startTestServer({ config: batchConfig({ pollMs: 20 }) });
});
afterAll(() => gw.close());

const BATCH_FIELDS = [
  'id', 'object', 'endpoint', 'input_file_id', 'completion_window', 'status', 'created_at', 'in_progress_at', 'expires_at', 'finalizing_at', 'completed_at',
  'failed_at', 'expired_at', 'cancelling_at', 'cancelled_at', 'errors', 'output_file_id', 'error_file_id', 'request_counts', 'metadata',
].sort();

for (const flavour of ['openai', 'azure'] as const) {
  describe(`native files and batches: ${flavour === 'openai' ? 'OpenAI' : 'Azure OpenAI'}`, () => {
    let mock: ResourcesMock;
    let headers: Record<string, string>;
    beforeAll(async () => {
      mock = await startResourcesMock(flavour);
      headers =
        flavour === 'openai'
          ? { 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-provider': 'openai', authorization: 'Bearer sk-openai-test', 'x-gateway-custom-host': `${mock.url}/v1` }
          : {
              'x-gateway-api-key': GATEWAY_KEY,
              'x-gateway-config': JSON.stringify({ provider: 'azure-openai', api_key: 'azure-test-key', custom_host: mock.url, api_version: '2024-10-21' }),
            };
    });
    afterAll(() => mock.close());

    test('files go to the provider: upload (checked first), list, retrieve, content, delete', async () => {
      const content = batchFile(3);
      const file = await json(await upload(gw.url, content, 'batch', headers, 'in.jsonl'));
      expect(file).toMatchObject({ id: 'file-mock1', object: 'file', bytes: Buffer.byteLength(content), filename: 'in.jsonl', purpose: 'batch', expires_at: null, status_details: null });
      expect(mock.files.get('file-mock1')!.content).toBe(content);
      const sent = mock.calls.find((c) => c.method === 'POST' && c.url.includes('/files'))!;
      if (flavour === 'azure') {
        expect(sent.url).toBe('/openai/files?api-version=2024-10-21');
        expect(sent.headers['api-key']).toBe('azure-test-key');
      } else {
        expect(sent.headers.authorization).toBe('Bearer sk-openai-test');
      }
      // A bad file never reaches the provider.
      const before = mock.calls.length;
      await json(await upload(gw.url, '{"custom_id": 1}\n', 'batch', headers), 400);
      expect(mock.calls.length).toBe(before);

      const list = await json(await fetch(`${gw.url}/v1/files`, { headers }));
      expect(list).toMatchObject({ object: 'list', data: [{ id: 'file-mock1', object: 'file' }], has_more: false });
      expect(await json(await fetch(`${gw.url}/v1/files/file-mock1`, { headers }))).toMatchObject({ id: 'file-mock1', filename: 'in.jsonl' });
      expect(await (await fetch(`${gw.url}/v1/files/file-mock1/content`, { headers })).text()).toBe(content);
      const missing = await json(await fetch(`${gw.url}/v1/files/file-nope`, { headers }), 404);
      expect(missing.error).toMatchObject({ message: expect.stringMatching(/No such file/), type: 'invalid_request_error' });
      expect(await json(await fetch(`${gw.url}/v1/files/file-mock1`, { method: 'DELETE', headers }))).toEqual({ id: 'file-mock1', object: 'file', deleted: true });
      expect(mock.files.size).toBe(0);
    });

    test('batches pass through, every answer normalised to the spec’s Batch shape; cursors are the provider’s', async () => {
      const body = { input_file_id: 'file-x', endpoint: '/v1/chat/completions', completion_window: '24h', metadata: { k: 'v' } };
      const a = await json(await fetch(`${gw.url}/v1/batches`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(body) }));
      expect(Object.keys(a).sort()).toEqual(BATCH_FIELDS);
      expect(a).toMatchObject({ object: 'batch', status: 'validating', input_file_id: 'file-x', metadata: { k: 'v' }, request_counts: { total: 0, completed: 0, failed: 0 } });
      expect(mock.calls.at(-1)!.body).toEqual(body);
      const b = await json(await fetch(`${gw.url}/v1/batches`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(body) }));

      Object.assign(mock.batches.get(a.id)!, { status: 'completed', completed_at: 1700000000.7, output_file_id: 'file-out', request_counts: { total: 2, completed: 2, failed: 0 } });
      const done = await json(await fetch(`${gw.url}/v1/batches/${a.id}`, { headers }));
      expect(done).toMatchObject({ status: 'completed', completed_at: 1700000000, output_file_id: 'file-out', error_file_id: null, request_counts: { total: 2, completed: 2, failed: 0 } });
      expect(done).not.toHaveProperty('usage');

      const page1 = await json(await fetch(`${gw.url}/v1/batches?limit=1`, { headers }));
      expect(page1).toMatchObject({ object: 'list', data: [{ id: b.id }], has_more: true });
      const page2 = await json(await fetch(`${gw.url}/v1/batches?limit=1&after=${b.id}`, { headers }));
      expect(page2).toMatchObject({ data: [{ id: a.id }], has_more: false });

      const cancelled = await json(await fetch(`${gw.url}/v1/batches/${b.id}/cancel`, { method: 'POST', headers }));
      expect(cancelled).toMatchObject({ id: b.id, status: 'cancelling', cancelling_at: expect.any(Number) });

      // A provider answer outside the spec is a 502, not passed on.
      mock.batches.get(a.id)!.status = 'exploded';
      expect((await json(await fetch(`${gw.url}/v1/batches/${a.id}`, { headers }), 502)).error.code).toBe('upstream_invalid_response');
      expect((await json(await fetch(`${gw.url}/v1/batches/batch_unknown`, { headers }), 404)).error.message).toMatch(/No such batch/);
    });
  });
}
