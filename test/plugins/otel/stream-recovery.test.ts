import { afterAll, beforeAll, expect, test } from 'vitest';
import { config } from '../../../plugins/config/index.js';
import { otel } from '../../../plugins/otel/index.js';
import { providerHeaders } from '../../../plugins/provider-headers/index.js';
import { openai } from '../../../plugins/providers/openai/index.js';
import { fallbackStrategy } from '../../../plugins/strategies/fallback/index.js';
import { trace } from '../../../plugins/trace/index.js';
import { serveGateway } from '../../helpers/serve.js';
import { spansOf, startReceiver, type Receiver } from '../../helpers/otlp-receiver.js';
import { FIRST, startBreakingUpstream, WHOLE } from '../../mocks/breaking-upstream.js';
import { ADMIN_KEY, keysAuth } from '../logs/helpers.js';

/** A stream continued after a break: the request's span says how many continuations and where it broke. */
let upstream: Awaited<ReturnType<typeof startBreakingUpstream>>;
let receiver: Receiver;
beforeAll(async () => {
  upstream = await startBreakingUpstream();
  receiver = await startReceiver();
});
afterAll(async () => {
  await upstream.close();
  await receiver.close();
});

test('the span counts the continuations and names each break', async () => {
  const gw = await serveGateway({
    plugins: [trace(), keysAuth({ [ADMIN_KEY]: { workspace: null, scopes: ['*'] } }), config(), providerHeaders(), fallbackStrategy(), openai(), otel({ endpoint: `${receiver.url}/`, serviceName: 'gw', metricIntervalMs: 200, env: {} })],
  });
  const leaf = (model: string) => ({ provider: 'openai', api_key: 'k', custom_host: `${upstream.url}/v1`, override_params: { model } });
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-gateway-api-key': ADMIN_KEY,
      'x-gateway-trace-id': 'otel-continued',
      'x-gateway-config': JSON.stringify({ strategy: { mode: 'fallback', on_stream_failure: 'continue' }, targets: [leaf('reset'), leaf('ok')] }),
    },
    body: JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
  });
  const text = await res.text();
  expect(text.split('\n\n').map((b) => (b.startsWith('data: {') ? (JSON.parse(b.slice(6)).choices?.[0]?.delta?.content ?? '') : '')).join('')).toBe(WHOLE);
  await gw.close(); // flushes the exporter
  const span = spansOf(receiver).find((s) => s.kind === 2 && s.attributes['gateway.trace_id'] === 'otel-continued')!;
  expect(span.attributes).toMatchObject({ 'gateway.stream.continuations': 1, 'gateway.stream.breaks': `connection@${FIRST.join('').length}:continued`, 'gateway.attempt_count': 2 });
  // One span per upstream call: the one that broke and the continuation.
  expect(spansOf(receiver).filter((s) => s.kind === 3 && s.parentSpanId === span.spanId)).toHaveLength(2);
});
