import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { BOOTSTRAP_KEY, GATEWAY_KEY, startTestServer } from '../../helpers/gateway.js';
import { batchConfig, batchFile, json, upload, waitForBatch } from './helpers.js';

let gw: Awaited<ReturnType<typeof startTestServer>>;
const headers = { 'x-gateway-api-key': GATEWAY_KEY };

beforeAll(async () => {
  gw = await startTestServer({ config: batchConfig({ pollMs: 20, maxFileBytes: 64 * 1024, maxLineBytes: 4096 }) });
});
afterAll(() => gw.close());

describe('files kept by the gateway', () => {
  test('upload, retrieve, list (cursor), content, delete', async () => {
    const content = batchFile(3);
    const a = await json(await upload(gw.url, content, 'batch', headers, 'a.jsonl'));
    expect(a).toMatchObject({ object: 'file', bytes: Buffer.byteLength(content), filename: 'a.jsonl', purpose: 'batch', status: 'processed', expires_at: null, status_details: null });
    expect(a.id).toMatch(/^file-gw-[0-9a-f]{32}$/);
    expect(a.created_at).toBeCloseTo(Date.now() / 1000, -1);
    const b = await json(await upload(gw.url, '{"messages":[{"role":"user","content":"hi"}]}\n', 'fine-tune', headers, 'b.jsonl'));
    const c = await json(await upload(gw.url, '{"messages":[]}', 'fine-tune', headers, 'c.jsonl'));

    expect(await json(await fetch(`${gw.url}/v1/files/${a.id}`, { headers }))).toEqual(a);
    const all = await json(await fetch(`${gw.url}/v1/files`, { headers }));
    expect(all).toMatchObject({ object: 'list', has_more: false });
    expect(all.data.map((f: { id: string }) => f.id).slice(0, 3)).toEqual([c.id, b.id, a.id]);
    const page1 = await json(await fetch(`${gw.url}/v1/files?purpose=fine-tune&limit=1`, { headers }));
    expect(page1).toMatchObject({ data: [{ id: c.id }], first_id: c.id, last_id: c.id, has_more: true });
    const page2 = await json(await fetch(`${gw.url}/v1/files?purpose=fine-tune&limit=1&after=${page1.last_id}`, { headers }));
    expect(page2).toMatchObject({ data: [{ id: b.id }], has_more: false });
    const asc = await json(await fetch(`${gw.url}/v1/files?order=asc&limit=2`, { headers }));
    expect(asc.data[0].created_at).toBeLessThanOrEqual(asc.data[1].created_at);

    const res = await fetch(`${gw.url}/v1/files/${a.id}/content`, { headers });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-length')).toBe(String(Buffer.byteLength(content)));
    expect(await res.text()).toBe(content);

    expect(await json(await fetch(`${gw.url}/v1/files/${a.id}`, { method: 'DELETE', headers }))).toEqual({ id: a.id, object: 'file', deleted: true });
    const gone = await json(await fetch(`${gw.url}/v1/files/${a.id}`, { headers }), 404);
    expect(gone.error).toMatchObject({ code: 'not_found', param: 'file_id', type: 'invalid_request_error' });
    await json(await fetch(`${gw.url}/v1/files/${a.id}/content`, { headers }), 404);
  });

  test('a malformed JSONL file is a 400 naming its first bad line, whichever field comes first', async () => {
    const bad = '{"messages":[]}\n\n{"messages": [}\n{"also":"bad"\n';
    const r1 = await json(await upload(gw.url, bad, 'fine-tune', headers), 400);
    expect(r1.error).toMatchObject({ code: 'invalid_file', param: 'file', type: 'invalid_request_error' });
    expect(r1.error.message).toContain('line 3');
    // The file before the purpose: both checks run, and the purpose decides at the end.
    const form = new FormData();
    form.set('file', new Blob([batchFile(2) + '{"custom_id":"x","method":"GET","url":"/v1/chat/completions","body":{}}\n']), 'x.jsonl');
    form.set('purpose', 'batch');
    const r2 = await json(await fetch(`${gw.url}/v1/files`, { method: 'POST', headers, body: form }), 400);
    expect(r2.error.message).toMatch(/line 3: method must be "POST"/);
    const dup = batchFile(2) + batchFile(1);
    expect((await json(await upload(gw.url, dup, 'batch', headers), 400)).error.message).toMatch(/line 3: custom_id "req-1" appears twice/);
    const long = `{"messages":"${'x'.repeat(5000)}"}\n`;
    expect((await json(await upload(gw.url, long, 'fine-tune', headers), 400)).error.message).toMatch(/line 1: longer than 4096 bytes/);
    // Nothing of a refused upload is kept.
    const list = await json(await fetch(`${gw.url}/v1/files?purpose=batch`, { headers }));
    expect(list.data.every((f: { filename: string }) => f.filename !== 'x.jsonl')).toBe(true);
  });

  test('a file over the limit is a 413; a bad purpose, no file and a non-multipart body are 400/415', async () => {
    const big = `${'{"messages":[]}\n'.repeat(5000)}`;
    const r = await json(await upload(gw.url, big, 'fine-tune', headers), 413);
    expect(r.error).toMatchObject({ code: 'payload_too_large', param: 'file' });
    expect(r.error.message).toContain('65536');
    expect((await json(await upload(gw.url, '{}', 'assistants', headers), 400)).error).toMatchObject({ param: 'purpose' });
    const noFile = new FormData();
    noFile.set('purpose', 'batch');
    expect((await json(await fetch(`${gw.url}/v1/files`, { method: 'POST', headers, body: noFile }), 400)).error).toMatchObject({ param: 'file' });
    const plain = await fetch(`${gw.url}/v1/files`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: '{}' });
    expect((await json(plain, 415)).error).toMatchObject({ code: 'unsupported_media_type' });
    expect((await json(await fetch(`${gw.url}/v1/files?limit=0`, { headers }), 400)).error).toMatchObject({ param: 'limit' });
    expect((await json(await fetch(`${gw.url}/v1/files?sort=x`, { headers }), 400)).error.message).toContain("Unknown query parameter 'sort'");
  });

  test('files need a gateway key', async () => {
    expect((await fetch(`${gw.url}/v1/files`)).status).toBe(401);
  });
});

describe('creating a gateway-run batch: bad input', () => {
  const provider = { ...headers, 'x-gateway-provider': 'anthropic', authorization: 'Bearer k', 'content-type': 'application/json' };
  const post = (body: unknown, h: Record<string, string> = provider) => fetch(`${gw.url}/v1/batches`, { method: 'POST', headers: h, body: JSON.stringify(body) });

  test('400s in the envelope, each naming its field', async () => {
    const file = await json(await upload(gw.url, batchFile(2), 'batch', headers));
    const ok = { input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' };
    const metadata17 = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v']));
    const cases: Array<[unknown, string]> = [
      [{ ...ok, metadata: metadata17 }, 'metadata'],
      [{ ...ok, metadata: { ['k'.repeat(65)]: 'v' } }, 'metadata'],
      [{ ...ok, metadata: { k: 'v'.repeat(513) } }, 'metadata.k'],
      [{ ...ok, completion_window: '2d' }, 'completion_window'],
      [{ ...ok, endpoint: '/v1/nothing' }, 'endpoint'],
      [{ ...ok, input_file_id: undefined }, 'input_file_id'],
      [{ ...ok, endpoint: '/v1/responses' }, 'endpoint'],
    ];
    for (const [body, param] of cases) {
      const r = await json(await post(body), 400);
      expect(r.error, JSON.stringify(body).slice(0, 80)).toMatchObject({ type: 'invalid_request_error' });
      expect(String(r.error.param).startsWith(param), `${r.error.param} names ${param}`).toBe(true);
    }
    expect((await json(await post({ ...ok, input_file_id: 'file-gw-00000000000000000000000000000000' }), 404)).error).toMatchObject({ param: 'input_file_id' });
    const ft = await json(await upload(gw.url, '{"messages":[]}', 'fine-tune', headers));
    expect((await json(await post({ ...ok, input_file_id: ft.id }), 400)).error).toMatchObject({ param: 'input_file_id' });
    expect((await json(await post(ok, { ...headers, 'content-type': 'application/json' }), 400)).error).toMatchObject({ code: 'provider_required' });
  });

  test('lines that do not match the endpoint fail the batch in validation, each error naming its line', async () => {
    const lines = batchFile(2) + JSON.stringify({ custom_id: 'e', method: 'POST', url: '/v1/embeddings', body: { model: 'm', input: 'x' } }) + '\n';
    const file = await json(await upload(gw.url, lines, 'batch', headers));
    const created = await json(await post({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' }));
    const { batch } = await waitForBatch(gw.url, created.id, headers, (b) => b.status !== 'validating');
    expect(batch.status).toBe('failed');
    expect(batch.failed_at).toEqual(expect.any(Number));
    expect(batch.errors).toEqual({ object: 'list', data: [{ code: 'invalid_request', message: expect.stringContaining('Line 3'), param: 'url', line: 3 }] });
    // The file is no longer in use: it can be deleted.
    expect((await json(await fetch(`${gw.url}/v1/files/${file.id}`, { method: 'DELETE', headers }))).deleted).toBe(true);
  });

  test('batches list newest first with a cursor; an unknown batch is a 404', async () => {
    const file = await json(await upload(gw.url, batchFile(1), 'batch', headers));
    for (let i = 0; i < 2; i++) await json(await post({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '1h' }));
    const page = await json(await fetch(`${gw.url}/v1/batches?limit=1`, { headers }));
    expect(page).toMatchObject({ object: 'list', has_more: true });
    const next = await json(await fetch(`${gw.url}/v1/batches?limit=1&after=${page.last_id}`, { headers }));
    expect(next.data[0].id < page.data[0].id).toBe(true);
    expect((await json(await fetch(`${gw.url}/v1/batches/batch-gw-00000000000000000000000000000000`, { headers }), 404)).error).toMatchObject({ param: 'batch_id' });
  });
});

describe('workspaces', () => {
  test('a workspace key sees only its workspace’s files and batches; another workspace gets 404s', async () => {
    const admin = async (path: string, body: unknown) =>
      json(await fetch(`${gw.url}/v1${path}`, { method: 'POST', headers: { 'x-gateway-api-key': BOOTSTRAP_KEY, 'content-type': 'application/json' }, body: JSON.stringify(body) }));
    const keyOf = async (slug: string) => {
      const ws = await admin('/workspaces', { name: slug, slug });
      return (await admin('/api-keys', { type: 'workspace-service', name: `${slug} key`, workspace_id: ws.id, scopes: ['completions.write'] })).key as string;
    };
    const a = { 'x-gateway-api-key': await keyOf('files-a') };
    const b = { 'x-gateway-api-key': await keyOf('files-b') };
    const file = await json(await upload(gw.url, batchFile(1), 'batch', a));
    const batch = await json(
      await fetch(`${gw.url}/v1/batches`, {
        method: 'POST',
        headers: { ...a, 'x-gateway-provider': 'anthropic', authorization: 'Bearer k', 'content-type': 'application/json' },
        body: JSON.stringify({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '1h' }),
      }),
    );
    expect((await json(await fetch(`${gw.url}/v1/files`, { headers: a }))).data.map((f: { id: string }) => f.id)).toEqual([file.id]);
    expect((await json(await fetch(`${gw.url}/v1/files`, { headers: b }))).data).toEqual([]);
    await json(await fetch(`${gw.url}/v1/files/${file.id}`, { headers: b }), 404);
    await json(await fetch(`${gw.url}/v1/files/${file.id}/content`, { headers: b }), 404);
    await json(await fetch(`${gw.url}/v1/files/${file.id}`, { method: 'DELETE', headers: b }), 404);
    await json(await fetch(`${gw.url}/v1/batches/${batch.id}`, { headers: b }), 404);
    await json(await fetch(`${gw.url}/v1/batches/${batch.id}/cancel`, { method: 'POST', headers: b }), 404);
    expect((await json(await fetch(`${gw.url}/v1/batches`, { headers: b }))).data).toEqual([]);
    expect((await json(await fetch(`${gw.url}/v1/batches/${batch.id}`, { headers: a }))).id).toBe(batch.id);
    // Nor can another workspace start a batch on it.
    const other = await fetch(`${gw.url}/v1/batches`, {
      method: 'POST',
      headers: { ...b, 'x-gateway-provider': 'anthropic', authorization: 'Bearer k', 'content-type': 'application/json' },
      body: JSON.stringify({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '1h' }),
    });
    expect((await json(other, 404)).error).toMatchObject({ param: 'input_file_id' });
  });
});
