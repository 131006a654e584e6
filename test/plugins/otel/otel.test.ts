import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import type { GatewayPlugin } from '../../../core/index.js';
import { config } from '../../../plugins/config/index.js';
import { otel, exportSettings } from '../../../plugins/otel/index.js';
import { retry } from '../../../plugins/retry/index.js';
import { guardrails } from '../../../plugins/guardrails/index.js';
import { guardrailChecks } from '../../../plugins/guardrails/checks/index.js';
import { CATALOG } from '../../../server/catalog.js';
import { readEnv } from '../../../server/env.js';
import type { ServerConfig } from '../../../server/schema.js';
import { openai } from '../../../plugins/providers/openai/index.js';
import { providerHeaders } from '../../../plugins/provider-headers/index.js';
import { traceparent } from '../../../plugins/traceparent/index.js';
import { trace } from '../../../plugins/trace/index.js';
import { validation } from '../../../plugins/validation/index.js';
import { serveGateway } from '../../helpers/serve.js';
import { startMockOpenAI, type MockUpstream } from '../../mocks/openai-upstream.js';
import { ADMIN_KEY, keysAuth } from '../logs/helpers.js';
import { attrs, spansOf, startReceiver, type Receiver } from '../../helpers/otlp-receiver.js';

let mock: MockUpstream;
let receiver: Receiver;
beforeAll(async () => {
  mock = await startMockOpenAI();
  receiver = await startReceiver();
});
afterAll(async () => {
  await mock.close();
  await receiver.close();
});

const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';

/** The ids the gateway logged for each request (what the log store and request log write as trace_id / span_id). */
function logSpy(logged: Map<string, string | null>): GatewayPlugin {
  return { name: 'test-log-spy', apply: (api) => void api.hooks.log.tap('test-log-spy', (ctx) => void logged.set(ctx.traceId ?? '', ctx.spanId)) };
}

describe('with an endpoint', () => {
  test('spans per request and per attempt, parented on the caller, with GenAI attributes; GenAI metrics', async () => {
    const logged = new Map<string, string | null>();
    const gw = await serveGateway({
      plugins: [
        trace(),
        traceparent(),
        keysAuth({ [ADMIN_KEY]: { workspace: null, scopes: ['*'] } }),
        config(),
        providerHeaders(),
        validation(),
        guardrailChecks(),
        guardrails(),
        retry({ sleep: async () => {} }),
        openai(),
        logSpy(logged),
        otel({ endpoint: `${receiver.url}/`, headers: { 'x-backend-key': 'otel-secret' }, serviceName: 'gateway-under-test', metricIntervalMs: 200, env: {} }),
      ],
    });
    const send = (body: Record<string, unknown>, extra: Record<string, string> = {}) =>
      fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-gateway-api-key': ADMIN_KEY, 'x-gateway-provider': 'openai', 'x-gateway-custom-host': mock.baseURL, authorization: 'Bearer sk-test', ...extra },
        body: JSON.stringify(body),
      });
    const chat = await send({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, { traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01` });
    expect(chat.status).toBe(200);
    await chat.text();
    const stream = await send({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true } }, { 'x-gateway-trace-id': 'otel-stream' });
    expect((await stream.text()).trimEnd().endsWith('[DONE]')).toBe(true);
    const failing = await send({ model: 'error-500', messages: [{ role: 'user', content: 'hi' }] }, { 'x-gateway-trace-id': 'otel-failing' });
    expect(failing.status).toBe(500);
    await failing.text();
    // A 429 then a 200: two attempts, one span each.
    mock.script.push({ status: 429 });
    const retried = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-gateway-api-key': ADMIN_KEY,
        'x-gateway-trace-id': 'otel-retried',
        'x-gateway-config': JSON.stringify({ provider: 'openai', api_key: 'sk-test', custom_host: mock.baseURL, retry: { attempts: 2 } }),
      },
      body: JSON.stringify({ model: 'queued', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(retried.status).toBe(200);
    await retried.text();
    // A stream an output guardrail cuts: the span says why, by what, and how much was sent.
    const cut = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-gateway-api-key': ADMIN_KEY,
        'x-gateway-trace-id': 'otel-cut',
        'x-gateway-config': JSON.stringify({ provider: 'openai', api_key: 'sk-test', custom_host: mock.baseURL, output_guardrails: [{ id: 'no-hello', deny: true, 'default.contains': { words: ['hello'], operator: 'none' } }] }),
      },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream: true }),
    });
    expect(await cut.text()).toContain('guardrail_denied');
    // The caller's sampled flag is off: nothing of this request is exported.
    const unsampled = await send({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, { traceparent: `00-${'a'.repeat(32)}-${CALLER_SPAN}-00` });
    expect(unsampled.status).toBe(200);
    await unsampled.text();
    await gw.close(); // flushes both providers

    const spans = spansOf(receiver);
    expect(receiver.headers.every((h) => h['x-backend-key'] === 'otel-secret')).toBe(true);
    expect(spans.some((s) => s.traceId === 'a'.repeat(32))).toBe(false);

    // The request with the caller's traceparent: its span is the gateway's (the span id it sent upstream), child of the caller's.
    const server = spans.find((s) => s.traceId === CALLER_TRACE && s.kind === 2)!;
    expect(server).toBeDefined();
    expect(server.parentSpanId).toBe(CALLER_SPAN);
    expect(server.name).toBe('chat gpt-4o-mini');
    expect(server.resource['service.name']).toBe('gateway-under-test');
    expect(server.resource['service.version']).toMatch(/^\d+\.\d+\.\d+/);
    expect(server.resource['telemetry.sdk.language']).toBe('nodejs');
    expect(server.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4o-mini',
      'gen_ai.response.model': 'gpt-4o-mini',
      'gen_ai.usage.input_tokens': 9,
      'gen_ai.usage.output_tokens': 2,
      'http.request.method': 'POST',
      'http.response.status_code': 200,
      'gateway.attempt_count': 1,
      'gateway.retry_count': 0,
    });
    expect(server.status.code ?? 0).toBe(0); // UNSET
    // Timed from the request's arrival to the end of its answer.
    expect(BigInt(server.endTimeUnixNano)).toBeGreaterThan(BigInt(server.startTimeUnixNano));
    // Its span id is the one the provider saw as the parent in traceparent (and the log's span_id).
    const upstream = mock.requests.find((r) => String(r.headers.traceparent ?? '').includes(CALLER_TRACE))!;
    expect(upstream.headers.traceparent).toBe(`00-${CALLER_TRACE}-${server.spanId}-01`);
    const attempt = spans.find((s) => s.traceId === CALLER_TRACE && s.kind === 3)!;
    expect(attempt.parentSpanId).toBe(server.spanId);
    expect(attempt.attributes).toMatchObject({ 'gen_ai.provider.name': 'openai', 'http.response.status_code': 200, 'gateway.attempt.target': '0' });
    expect(BigInt(attempt.startTimeUnixNano)).toBeGreaterThanOrEqual(BigInt(server.startTimeUnixNano));
    expect(BigInt(attempt.endTimeUnixNano)).toBeLessThanOrEqual(BigInt(server.endTimeUnixNano));
    expect(server.spanId).toMatch(/^[0-9a-f]{16}$/);
    // ... and the one the gateway logged for the request.
    expect(logged.get(CALLER_TRACE)).toBe(server.spanId);
    expect(attempt.spanId).not.toBe(server.spanId);

    // Without a traceparent: a root span in the trace derived from x-gateway-trace-id.
    const failed = spans.find((s) => s.kind === 2 && s.attributes['gateway.trace_id'] === 'otel-failing')!;
    expect(failed.parentSpanId ?? '').toBe('');
    expect(failed.status.code).toBe(2); // ERROR
    expect(failed.attributes).toMatchObject({ 'http.response.status_code': 500, 'error.type': '500' });
    expect(failed.spanId).toBe(logged.get('otel-failing'));
    const failedAttempt = spans.find((s) => s.kind === 3 && s.parentSpanId === failed.spanId)!;
    expect(failedAttempt.traceId).toBe(failed.traceId);
    expect(failedAttempt.status.code).toBe(2);
    expect(failedAttempt.attributes).toMatchObject({ 'http.response.status_code': 500, 'error.type': '500' });
    const cutSpan = spans.find((s) => s.kind === 2 && s.attributes['gateway.trace_id'] === 'otel-cut')!;
    expect(cutSpan.attributes).toMatchObject({ 'gateway.stream.cut.reason': 'guardrail', 'gateway.stream.cut.by': 'no-hello', 'gateway.stream.cut.chars_sent': 0, 'error.type': 'guardrail_denied' });
    const streamed = spans.find((s) => s.kind === 2 && s.attributes['gateway.trace_id'] === 'otel-stream')!;
    expect(streamed.attributes).toMatchObject({ 'gateway.stream': true, 'gen_ai.usage.output_tokens': 2 });
    expect(streamed.spanId).toBe(logged.get('otel-stream'));

    // The retried request: its span succeeded, under it a failed 429 attempt and the answered one.
    const again = spans.find((s) => s.kind === 2 && s.attributes['gateway.trace_id'] === 'otel-retried')!;
    expect(again.attributes).toMatchObject({ 'gateway.attempt_count': 2, 'gateway.retry_count': 1, 'http.response.status_code': 200 });
    expect(again.status.code ?? 0).toBe(0);
    const tries = spans.filter((s) => s.kind === 3 && s.parentSpanId === again.spanId).sort((a, b) => (BigInt(a.startTimeUnixNano) < BigInt(b.startTimeUnixNano) ? -1 : 1));
    expect(tries.map((s) => [s.attributes['http.response.status_code'], s.status.code ?? 0])).toEqual([
      [429, 2],
      [200, 0],
    ]);
    expect(tries[0]!.attributes['error.type']).toBe('429');
    expect(new Set([again.spanId, ...tries.map((s) => s.spanId)]).size).toBe(3);

    // Metrics: the GenAI client histograms, with their attributes.
    const points = receiver.metrics.flatMap((b) => b.resourceMetrics.flatMap((rm: any) => rm.scopeMetrics.flatMap((sm: any) => sm.metrics)));
    const names = new Set(points.map((m: any) => m.name));
    expect(names).toContain('gen_ai.client.token.usage');
    expect(names).toContain('gen_ai.client.operation.duration');
    expect(names).toContain('gen_ai.client.operation.time_to_first_chunk');
    expect(points.find((m: any) => m.name === 'gen_ai.client.token.usage').unit).toBe('{token}');
    expect(points.find((m: any) => m.name === 'gen_ai.client.operation.time_to_first_chunk').unit).toBe('s');
    const usage = points.filter((m: any) => m.name === 'gen_ai.client.token.usage').flatMap((m: any) => m.histogram.dataPoints);
    expect(usage.some((p: any) => attrs(p.attributes)['gen_ai.token.type'] === 'output')).toBe(true);
    // Cumulative points, one per export (every 200 ms): the last, the largest, holds every request; an early one only those before it.
    const input = usage.filter((p: any) => attrs(p.attributes)['gen_ai.token.type'] === 'input').reduce((a: any, b: any) => (Number(b.sum) > Number(a.sum) ? b : a));
    expect(attrs(input.attributes)).toMatchObject({ 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'openai', 'gen_ai.request.model': 'gpt-4o-mini' });
    expect(Number(input.sum)).toBeGreaterThanOrEqual(9 * 3);
    // Any export may be the one after the failed request: look at all of them.
    const durations = points.filter((m: any) => m.name === 'gen_ai.client.operation.duration');
    expect(durations.every((m: any) => m.unit === 's')).toBe(true);
    expect(durations.flatMap((m: any) => m.histogram.dataPoints).some((p: any) => attrs(p.attributes)['error.type'] === '500')).toBe(true);
  }, 30_000);
});

test('the endpoint is logged without its user info', async () => {
  const gw = await serveGateway({ plugins: [otel({ endpoint: `http://collector:SECRET-otlp-pw@127.0.0.1:${new URL(receiver.url).port}/`, env: {} })] });
  try {
    await gw.gateway.ready;
    const line = gw.logs.lines().find((l) => l.msg === 'OpenTelemetry export on');
    expect(line?.traces).toBe(`http://127.0.0.1:${new URL(receiver.url).port}/v1/traces`);
    expect(gw.logs.text()).not.toContain('SECRET');
  } finally {
    await gw.close();
  }
});

describe('without an endpoint', () => {
  test('the plugin taps nothing and loads nothing', async () => {
    expect(exportSettings({ env: {}, exportTimeoutMs: 10_000 })).toMatchObject({ tracesUrl: null, metricsUrl: null });
    const taps: string[] = [];
    const plugin = otel({ env: {} });
    const hooks = new Proxy({}, { get: (_t, name) => ({ tap: () => taps.push(String(name)), tapPromise: () => taps.push(String(name)) }) });
    const calls: string[] = [];
    plugin.apply({ hooks, onReady: () => calls.push('onReady'), onClose: () => calls.push('onClose'), logger: console } as never);
    expect(taps).toEqual([]);
    expect(calls).toEqual([]);
  });

  test('the plugin entry loads no OpenTelemetry module: its only imports of them are dynamic, or types', () => {
    const source = readFileSync(new URL('../../../plugins/otel/index.ts', import.meta.url), 'utf8');
    const staticImports = [...source.matchAll(/^import\s+(type\s+)?[^;]*?from\s+'([^']+)'/gm)].filter((m) => m[1] === undefined).map((m) => m[2]);
    expect(staticImports.sort()).toEqual(['../../sdk/index.js', 'valibot']);
  });

  test("the bundled server reads OTEL_* from its own env, not the process's", async () => {
    // A developer's shell variable must not turn export on for a server started with an explicit env.
    vi.stubEnv('OTEL_EXPORTER_OTLP_ENDPOINT', 'http://127.0.0.1:9');
    try {
      const server = { plugins: [] } as unknown as ServerConfig;
      const tapsOf = async (env: Record<string, string>) => {
        const taps: string[] = [];
        const hooks = new Proxy({}, { get: (_t, name) => ({ tap: () => taps.push(String(name)) }) });
        // Applied only: onReady (which would load the SDK) is recorded, never run.
        const api = { hooks, tryResolve: () => undefined, provide: () => {}, onReady: () => taps.push('onReady'), onClose: () => taps.push('onClose') };
        (await CATALOG.otel!({}, readEnv(env), server)).apply(api as never);
        return taps;
      };
      expect(await tapsOf({})).toEqual([]);
      expect(await tapsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' })).toEqual(['afterResponse', 'onReady', 'log', 'onClose']);
      expect(readEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', PORT: '1' }).otel).toEqual({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' });
      expect(readEnv({}).otel).toBeUndefined();
    } finally {
      vi.unstubAllEnvs();
    }
  });

  test('the standard variables: a base endpoint, per-signal endpoints, headers, service name, and off switches', () => {
    const base = { exportTimeoutMs: 10_000 };
    expect(exportSettings({ ...base, env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318/', OTEL_EXPORTER_OTLP_HEADERS: 'api-key=a%3Db,x=1', OTEL_SERVICE_NAME: 'gw' } })).toMatchObject({
      tracesUrl: 'http://127.0.0.1:4318/v1/traces',
      metricsUrl: 'http://127.0.0.1:4318/v1/metrics',
      headers: { 'api-key': 'a=b', x: '1' },
      serviceName: 'gw',
    });
    expect(exportSettings({ ...base, env: { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:9/t' } })).toMatchObject({ tracesUrl: 'http://127.0.0.1:9/t', metricsUrl: null });
    expect(exportSettings({ ...base, env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_METRICS_EXPORTER: 'none' } })).toMatchObject({ metricsUrl: null });
    expect(exportSettings({ ...base, env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_SDK_DISABLED: 'true' } })).toMatchObject({ tracesUrl: null, metricsUrl: null });
  });
});
