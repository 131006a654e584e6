import { readdirSync } from 'node:fs';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { serveGateway } from '../../helpers/serve.js';
import { startMockOpenAI, type MockUpstream } from '../../mocks/openai-upstream.js';
import { ADMIN_KEY, logGatewayPlugins, openSqlite, tempFile, waitFor } from './helpers.js';

/*
 * Through the real server: a request's bodies and headers are stored out of
 * its log row (segment files beside the SQLite file), and its detail reads
 * them back from there, after the gateway restarted on the same file.
 */

let mock: MockUpstream;
beforeAll(async () => {
  mock = await startMockOpenAI();
});
afterAll(async () => {
  await mock.close();
});

test('a log detail reads its bodies back from the body store after a restart', async () => {
  const file = await tempFile('restart.db');
  const first = await serveGateway({ plugins: logGatewayPlugins({ file }) });
  const question = `What is in the body store? ${'q'.repeat(200)}`;
  const res = await fetch(`${first.url}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-gateway-api-key': ADMIN_KEY,
      'x-gateway-provider': 'openai',
      'x-gateway-custom-host': mock.baseURL,
      'x-gateway-trace-id': 'bodies-restart',
      authorization: 'Bearer sk-provider-secret-abcdefghijklmnop',
    },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: question }] }),
  });
  expect(res.status).toBe(200);
  const answer = await res.text();
  const headers = { 'x-gateway-api-key': ADMIN_KEY };
  const listed = await waitFor(async () => {
    const body = (await (await fetch(`${first.url}/v1/logs?trace_id=bodies-restart`, { headers })).json()) as { data: { id: string }[] };
    return body.data[0];
  }, 5000, 'the entry');
  await first.close();

  // The row holds a reference, not the bodies; the segment beside the file holds them.
  const db = openSqlite(file);
  const row = db.prepare('SELECT request_body, response_body, request_headers, body_ref FROM gateway_logs WHERE id = ?').get(listed.id) as Record<string, unknown>;
  db.close();
  expect(row).toMatchObject({ request_body: null, response_body: null, request_headers: null });
  expect(String(row.body_ref)).toMatch(/^seg-\d+-\d+\.dat:\d+:\d+:\d+$/);
  expect(readdirSync(`${file}.bodies`).length).toBeGreaterThan(0);

  const second = await serveGateway({ plugins: logGatewayPlugins({ file }) });
  try {
    const detail = (await (await fetch(`${second.url}/v1/logs/${listed.id}`, { headers })).json()) as Record<string, any>;
    expect(JSON.parse(detail.request_body).messages[0].content).toBe(question);
    expect(detail.response_body).toBe(answer);
    expect(detail.request_headers['x-gateway-trace-id']).toBe('bodies-restart');
    // Secrets never reach the store: the provider key is redacted in the stored headers.
    expect(JSON.stringify(detail.request_headers)).not.toContain('sk-provider-secret');
  } finally {
    await second.close();
  }
});
