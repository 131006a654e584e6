import { afterAll, beforeAll, expect, test } from 'vitest';
import type { GatewayPlugin } from '../../core/index.js';
import { openai } from '../../plugins/providers/openai/index.js';
import { serveGateway } from '../helpers/serve.js';
import { startMockOpenAI, type MockUpstream } from '../mocks/openai-upstream.js';

let mock: MockUpstream;
beforeAll(async () => {
  mock = await startMockOpenAI({ record: false });
});
afterAll(() => mock.close());

test('a request that arrives once close() has drained the gateway is refused with a 503, not run against closed plugins', async () => {
  const closedSeen: string[] = [];
  // A plugin whose close takes a while: requests during it must not reach the pipeline.
  const slowClose: GatewayPlugin = {
    name: 'slow-close',
    apply: (api) =>
      api.onClose(async () => {
        closedSeen.push('closing');
        await new Promise((r) => setTimeout(r, 200));
        closedSeen.push('closed');
      }),
  };
  const gw = await serveGateway({ plugins: [openai({ baseURL: mock.baseURL }), slowClose] });
  const chat = () =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
    });
  const before = await chat();
  expect(before.status).toBe(200);
  await before.arrayBuffer();

  const closing = gw.gateway.close(1000);
  await new Promise((r) => setTimeout(r, 50));
  expect(closedSeen).toEqual(['closing']);
  const late = await chat();
  expect(late.status).toBe(503);
  expect(late.headers.get('connection')).toBe('close');
  expect(late.headers.get('retry-after')).toBe('1');
  expect(await late.json()).toMatchObject({ error: { code: 'service_unavailable', type: 'server_error' } });
  await closing;
  expect(closedSeen).toEqual(['closing', 'closed']);
  await gw.close();
});

test('onDrain runs as soon as close() starts, so a plugin ends its long-lived streams instead of holding the shutdown for the whole grace period', async () => {
  const { Readable } = await import('node:stream');
  const open = new Set<InstanceType<typeof Readable>>();
  const order: string[] = [];
  const streams: GatewayPlugin = {
    name: 'streams',
    apply(api) {
      api.routes.add({
        name: 'forever',
        method: 'GET',
        path: '/v1/forever',
        kind: 'handler',
        handler: () => {
          const body = new Readable({ read() {} });
          body.push(': hello\n\n');
          open.add(body);
          return { status: 200, headers: { 'content-type': 'text/event-stream' }, body, observers: null };
        },
      });
      api.onDrain(() => {
        order.push('drain');
        for (const s of open) s.push(null);
      });
      api.onClose(() => void order.push('close'));
    },
  };
  const gw = await serveGateway({ plugins: [openai({ baseURL: mock.baseURL }), streams] });
  const res = await fetch(`${gw.url}/v1/forever`);
  const reader = res.body!.getReader();
  await reader.read();
  const started = Date.now();
  await gw.gateway.close(5000);
  expect(Date.now() - started).toBeLessThan(2000);
  expect(order).toEqual(['drain', 'close']);
  await gw.close();
});
