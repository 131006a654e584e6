import { execFileSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startProcess, type GatewayProcess } from '../helpers/process.js';
import { startMockOpenAI, type MockUpstream } from '../mocks/openai-upstream.js';
import { metricValue, parsePrometheus, waitFor } from '../plugins/logs/helpers.js';
import { spansOf, startReceiver, type Receiver } from '../helpers/otlp-receiver.js';

/**
 * The default config as `npm start` runs it (compiled, no config file): every kind of request
 * ends as exactly one stored entry, served by /v1/logs, and /metrics is on. The build goes to a
 * folder of its own, so this test and others that build never write the same files.
 */
const ROOT = resolve(import.meta.dirname, '../..');
const KEY = 'default-logging-key-1';
const OUT = join(ROOT, '.test-build', `default-logging-${process.pid}`);

let mock: MockUpstream;
let receiver: Receiver;
let stalled: Server;
let gw: GatewayProcess;
let dataDir: string;
const url = () => `http://127.0.0.1:${gw.port}`;

beforeAll(async () => {
  execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json', '--outDir', OUT], { cwd: ROOT, stdio: 'pipe' });
  mock = await startMockOpenAI({ record: false });
  // An upstream that sends the stream's first chunk and then nothing: the client leaves while it waits.
  stalled = createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(`data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, delta: { role: 'assistant', content: 'Hel' }, finish_reason: null }] })}\n\n`);
  });
  await new Promise<void>((r) => stalled.listen(0, '127.0.0.1', r));
  receiver = await startReceiver();
  dataDir = mkdtempSync(join(tmpdir(), 'gw-default-logging-'));
  // OpenTelemetry as users turn it on: the standard variable, nothing in a config file.
  gw = await startProcess([], { GATEWAY_API_KEYS: KEY, GATEWAY_DATA_DIR: dataDir, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url }, { built: join(OUT, 'server/main.js') });
}, 180_000);

afterAll(async () => {
  gw?.child.kill('SIGTERM');
  await gw?.exited;
  stalled?.closeAllConnections();
  stalled?.close();
  await mock?.close();
  await receiver?.close();
  rmSync(OUT, { recursive: true, force: true });
  if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
});

const provider = (host: string) => ({ 'x-gateway-provider': 'openai', 'x-gateway-custom-host': host, authorization: 'Bearer sk-test-upstream' });
const chatBody = (model: string, stream = false) => JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], stream });

test('the default config logs every kind of request exactly once, and serves the logs and /metrics', async () => {
  const send = (trace: string, path: string, init: { method?: string; headers?: Record<string, string>; body?: string; key?: string | null } = {}) =>
    fetch(`${url()}${path}`, {
      method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
      headers: {
        'x-gateway-trace-id': trace,
        ...(init.key === null ? {} : { 'x-gateway-api-key': init.key ?? KEY }),
        ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...init.headers,
      },
      body: init.body,
    });

  const chat = await send('dl-chat', '/v1/chat/completions', { headers: provider(mock.baseURL), body: chatBody('gpt-4o-mini') });
  expect(chat.status).toBe(200);
  await chat.arrayBuffer();

  // With a usage chunk, so the stream's text is left to the writer thread to assemble.
  const stream = await send('dl-stream', '/v1/chat/completions', {
    headers: provider(mock.baseURL),
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true } }),
  });
  expect((await stream.text()).trimEnd().endsWith('[DONE]')).toBe(true);

  const proxied = await send('dl-proxy', '/v1/some/unshaped/path?x=1', { headers: provider(mock.baseURL), body: '{"anything":true}' });
  expect(proxied.status).toBe(200);
  await proxied.arrayBuffer();

  const admin = await send('dl-admin', '/v1/workspaces');
  expect(admin.status).toBe(200);
  await admin.arrayBuffer();

  const unauthorised = await send('dl-401', '/v1/chat/completions', { key: 'not-a-key-at-all', headers: provider(mock.baseURL), body: chatBody('gpt-4o-mini') });
  expect(unauthorised.status).toBe(401);
  await unauthorised.arrayBuffer();

  const invalid = await send('dl-400', '/v1/chat/completions', { headers: provider(mock.baseURL), body: '{"model": ' });
  expect(invalid.status).toBe(400);
  await invalid.arrayBuffer();

  const upstreamError = await send('dl-upstream-400', '/v1/chat/completions', { headers: provider(mock.baseURL), body: chatBody('error-400') });
  expect(upstreamError.status).toBe(400);
  await upstreamError.arrayBuffer();

  const upstreamFailure = await send('dl-upstream-500', '/v1/chat/completions', { headers: provider(mock.baseURL), body: chatBody('error-500') });
  expect(upstreamFailure.status).toBe(500);
  await upstreamFailure.arrayBuffer();

  // A client that reads the first chunk of a stream and leaves.
  const leaving = new AbortController();
  const left = await fetch(`${url()}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'x-gateway-trace-id': 'dl-left', 'x-gateway-api-key': KEY, 'content-type': 'application/json', ...provider(`http://127.0.0.1:${(stalled.address() as AddressInfo).port}/v1`) },
    body: chatBody('gpt-4o-mini', true),
    signal: leaving.signal,
  });
  const reader = left.body!.getReader();
  expect(new TextDecoder().decode((await reader.read()).value)).toContain('Hel');
  leaving.abort();
  await reader.cancel().catch(() => undefined);

  const expected: Record<string, { status?: number; aborted?: boolean; stream?: boolean; route?: string | null; error_code?: string | null }> = {
    'dl-chat': { status: 200, stream: false, aborted: false },
    'dl-stream': { status: 200, stream: true, aborted: false },
    'dl-proxy': { status: 200 },
    'dl-admin': { status: 200 },
    'dl-401': { status: 401 },
    'dl-400': { status: 400 },
    'dl-upstream-400': { status: 400 },
    'dl-upstream-500': { status: 500 },
    'dl-left': { stream: true, aborted: true },
  };
  const lookup = async (trace: string) => {
    const res = await fetch(`${url()}/v1/logs?trace_id=${trace}`, { headers: { 'x-gateway-api-key': KEY } });
    expect(res.status).toBe(200);
    return ((await res.json()) as { data: Record<string, unknown>[] }).data;
  };
  for (const [trace, fields] of Object.entries(expected)) {
    const rows = await waitFor(async () => {
      const data = await lookup(trace);
      return data.length > 0 ? data : undefined;
    }, 10_000, `the log entry of ${trace}`);
    expect(rows, trace).toHaveLength(1);
    expect(rows[0], trace).toMatchObject(fields);
  }
  // The chat entry carries what the answer said; no credential is stored.
  const [entry] = await lookup('dl-chat');
  expect(entry).toMatchObject({ provider: 'openai', model: 'gpt-4o-mini', prompt_tokens: 9, completion_tokens: 2 });
  const one = await (await fetch(`${url()}/v1/logs/${String(entry!.id)}`, { headers: { 'x-gateway-api-key': KEY } })).text();
  expect(one).toContain('Hello from the mock!');
  expect(one).not.toContain('sk-test-upstream');
  expect(one).not.toContain(KEY);
  // The stream's text is assembled from its events on the writer thread: stored as text, not as SSE.
  const [streamed] = await lookup('dl-stream');
  const streamedOne = (await (await fetch(`${url()}/v1/logs/${String(streamed!.id)}`, { headers: { 'x-gateway-api-key': KEY } })).json()) as { response_body: string };
  expect(streamedOne.response_body).toBe('Hello!');

  // A little later nothing was logged twice (a late duplicate would show here).
  await new Promise((r) => setTimeout(r, 300));
  for (const trace of Object.keys(expected)) expect(await lookup(trace), trace).toHaveLength(1);

  // With the durable log on, stdout has a line for the failed request only (request-log's `auto`).
  const requestLines = gw
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.msg === 'request' && typeof l.trace_id === 'string' && l.trace_id.startsWith('dl-'));
  expect(requestLines.map((l) => [l.trace_id, l.status])).toEqual([['dl-upstream-500', 500]]);

  const metrics = parsePrometheus(await (await fetch(`${url()}/metrics`, { headers: { 'x-gateway-api-key': KEY } })).text());
  expect(metricValue(metrics, 'gateway_log_written_total')).toBeGreaterThanOrEqual(Object.keys(expected).length);
  expect(metricValue(metrics, 'gateway_log_dropped_total', { reason: 'queue_full' })).toBe(0);
  expect(metricValue(metrics, 'gateway_requests_total', { status: '200' })).toBeGreaterThanOrEqual(3);
  expect(metricValue(metrics, 'gateway_tokens_total', { kind: 'prompt' })).toBeGreaterThanOrEqual(9);
  // The cache is loaded but not asked for: the chat and stream requests (and the ones that failed upstream) count as DISABLED.
  expect(entry!.cache_status).toBe('DISABLED');
  expect(metricValue(metrics, 'gateway_cache_requests_total', { status: 'DISABLED' })).toBeGreaterThanOrEqual(2);
  expect(metricValue(metrics, 'gateway_cache_hits_total')).toBe(0);
}, 60_000);

test('OpenTelemetry from OTEL_EXPORTER_OTLP_ENDPOINT: the built server exports the request spans, flushed at SIGTERM', async () => {
  gw.child.kill('SIGTERM');
  expect(await gw.exited, gw.output()).toBe(0);
  const spans = spansOf(receiver);
  const chat = spans.find((s) => s.kind === 2 && s.attributes['gateway.trace_id'] === 'dl-chat');
  expect(chat?.attributes).toMatchObject({ 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'openai', 'gen_ai.request.model': 'gpt-4o-mini', 'gen_ai.usage.input_tokens': 9 });
  expect(spans.some((s) => s.kind === 3 && s.parentSpanId === chat!.spanId)).toBe(true);
  // The admin route is a span too, without GenAI attributes.
  const admin = spans.find((s) => s.attributes['gateway.trace_id'] === 'dl-admin');
  expect(admin?.name).toBe('GET /v1/workspaces');
  expect(admin?.attributes['gen_ai.operation.name']).toBeUndefined();
  const metricNames = new Set(receiver.metrics.flatMap((b) => b.resourceMetrics.flatMap((rm: any) => rm.scopeMetrics.flatMap((sm: any) => sm.metrics.map((m: any) => m.name)))));
  expect(metricNames).toContain('gen_ai.client.operation.duration');
}, 30_000);
