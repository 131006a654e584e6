import { afterAll, beforeAll, expect, test } from 'vitest';
import { LOG_STORE, type GatewayPlugin, type LogStoreStatus } from '../../../sdk/index.js';
import { openai } from '../../../plugins/providers/openai/index.js';
import { requestLog, type RequestLogOptions } from '../../../plugins/request-log/index.js';
import { trace } from '../../../plugins/trace/index.js';
import { serveGateway } from '../../helpers/serve.js';
import { startMockOpenAI, type MockUpstream } from '../../mocks/openai-upstream.js';

let mock: MockUpstream;
beforeAll(async () => {
  mock = await startMockOpenAI({ record: false });
});
afterAll(() => mock.close());

/** Stands in for the log store: it only offers the service the request log looks for. */
const fakeStore: GatewayPlugin = {
  name: 'fake-log-store',
  apply: (api) => api.provide(LOG_STORE, { stats: () => ({}) as ReturnType<LogStoreStatus['stats']>, flush: async () => undefined }),
};

/** The trace ids that got a request line, after one 200 and one 500. */
async function linesFor(options: RequestLogOptions, withStore: boolean): Promise<string[]> {
  // The request log first, the store after it: `auto` must see a store listed later too.
  const gw = await serveGateway({ plugins: [trace(), requestLog(options), openai({ baseURL: mock.baseURL }), ...(withStore ? [fakeStore] : [])] });
  try {
    for (const model of ['gpt-4o-mini', 'error-500']) {
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test', 'x-gateway-trace-id': `rl-${model}` },
        body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
      });
      await res.arrayBuffer();
    }
    await new Promise((r) => setTimeout(r, 30));
    return gw.logs
      .lines()
      .filter((l) => l.msg === 'request')
      .map((l) => l.trace_id as string)
      .sort();
  } finally {
    await gw.close();
  }
}

test('lines: all writes every request; failures only those with a status of 500 or more', async () => {
  expect(await linesFor({ lines: 'all' }, true)).toEqual(['rl-error-500', 'rl-gpt-4o-mini']);
  expect(await linesFor({ lines: 'failures' }, false)).toEqual(['rl-error-500']);
});

test('lines: auto (the default) is failures beside a durable log store, every request without one', async () => {
  expect(await linesFor({}, true)).toEqual(['rl-error-500']);
  expect(await linesFor({}, false)).toEqual(['rl-error-500', 'rl-gpt-4o-mini']);
});

test('a bad lines option fails at start', () => {
  expect(() => requestLog({ lines: 'some' as never })).toThrow(/lines: must be all, failures or auto/);
});
