import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { otel, exportSettings } from '../../../plugins/otel/index.js';
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

describe('with an endpoint', () => {
  test('spans per request and per attempt, parented on the caller, with GenAI attributes; GenAI metrics', async () => {
    const gw = await serveGateway({
      plugins: [
        trace(),
        traceparent(),
        keysAuth({ [ADMIN_KEY]: { workspace: null, scopes: ['*'] } }),
        providerHeaders({ allowPrivateHosts: true }),
        validation(),
        openai(),
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
    });
    // Its span id is the one the provider saw as the parent in traceparent (and the log's span_id).
    const upstream = mock.requests.find((r) => String(r.headers.traceparent ?? '').includes(CALLER_TRACE))!;
    expect(upstream.headers.traceparent).toBe(`00-${CALLER_TRACE}-${server.spanId}-01`);
    const attempt = spans.find((s) => s.traceId === CALLER_TRACE && s.kind === 3)!;
    expect(attempt.parentSpanId).toBe(server.spanId);
    expect(attempt.attributes).toMatchObject({ 'gen_ai.provider.name': 'openai', 'http.response.status_code': 200, 'gateway.attempt.target': '0' });
    expect(BigInt(attempt.startTimeUnixNano)).toBeGreaterThanOrEqual(BigInt(server.startTimeUnixNano));
    expect(BigInt(attempt.endTimeUnixNano)).toBeLessThanOrEqual(BigInt(server.endTimeUnixNano));
    expect(server.spanId).toMatch(/^[0-9a-f]{16}$/);

    // Without a traceparent: a root span in the trace derived from x-gateway-trace-id.
    const failed = spans.find((s) => s.kind === 2 && s.attributes['gateway.trace_id'] === 'otel-failing')!;
    expect(failed.parentSpanId ?? '').toBe('');
    expect(failed.status.code).toBe(2); // ERROR
    expect(failed.attributes).toMatchObject({ 'http.response.status_code': 500, 'error.type': '500' });
    const streamed = spans.find((s) => s.kind === 2 && s.attributes['gateway.trace_id'] === 'otel-stream')!;
    expect(streamed.attributes).toMatchObject({ 'gen_ai.request.stream': true, 'gen_ai.usage.output_tokens': 2 });

    // Metrics: the GenAI client histograms, with their attributes.
    const points = receiver.metrics.flatMap((b) => b.resourceMetrics.flatMap((rm: any) => rm.scopeMetrics.flatMap((sm: any) => sm.metrics)));
    const names = new Set(points.map((m: any) => m.name));
    expect(names).toContain('gen_ai.client.token.usage');
    expect(names).toContain('gen_ai.client.operation.duration');
    expect(names).toContain('gen_ai.client.operation.time_to_first_chunk');
    const usage = points.filter((m: any) => m.name === 'gen_ai.client.token.usage').flatMap((m: any) => m.histogram.dataPoints);
    const input = usage.find((p: any) => attrs(p.attributes)['gen_ai.token.type'] === 'input')!;
    expect(attrs(input.attributes)).toMatchObject({ 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'openai', 'gen_ai.request.model': 'gpt-4o-mini' });
    expect(Number(input.sum)).toBeGreaterThanOrEqual(9 * 3);
    const duration = points.find((m: any) => m.name === 'gen_ai.client.operation.duration')!;
    expect(duration.unit).toBe('s');
    expect(duration.histogram.dataPoints.some((p: any) => attrs(p.attributes)['error.type'] === '500')).toBe(true);
  }, 30_000);
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
