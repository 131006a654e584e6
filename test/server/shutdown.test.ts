import { spawn, type ChildProcess } from 'node:child_process';
import { startProcess } from '../helpers/process.js';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startMockOpenAI, type MockUpstream } from '../mocks/openai-upstream.js';

let mock: MockUpstream;
beforeAll(async () => {
  mock = await startMockOpenAI();
});
afterAll(() => mock.close());

const start = (env: Record<string, string>) => startProcess([], { GATEWAY_API_KEYS: 'shutdown-key-1', ...env });
/**
 * Resolves once the mock upstream has the request whose message is `text`: the request is in flight
 * then. A fixed wait was not always enough on a loaded machine, and a signal that beats the request
 * turns it into the 503 a request arriving during shutdown gets.
 */
async function upstreamHas(text: string): Promise<void> {
  for (const until = Date.now() + 10_000; Date.now() < until; await new Promise((r) => setTimeout(r, 10))) {
    if (mock.requests.some((r) => r.body.includes(text))) return;
  }
  throw new Error(`the upstream never received "${text}"`);
}
const exited = (child: ChildProcess) => new Promise<number | null>((r) => child.once('exit', (code) => r(code)));

test.each(['SIGTERM', 'SIGINT'] as const)('%s lets an in-flight stream finish, flushes its log line and exits 0', async (signal) => {
  // Every request's line (the default config, with its durable log, writes only failures to stdout).
  const { child, port, output } = await start({ GATEWAY_REQUEST_LOG: 'all' });
  const exit = exited(child);
  const pending = fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-gateway-api-key': 'shutdown-key-1',
      'x-gateway-provider': 'openai',
      'x-gateway-custom-host': mock.baseURL,
      'x-gateway-trace-id': `shutdown-${signal}`,
    },
    body: JSON.stringify({ model: 'slow-400', messages: [{ role: 'user', content: `hi ${signal}` }], stream: true }),
  });
  await upstreamHas(`hi ${signal}`);
  child.kill(signal);
  const res = await pending;
  expect(res.status).toBe(200);
  expect((await res.text()).trimEnd().endsWith('data: [DONE]')).toBe(true);
  expect(await exit).toBe(0);
  const lines = output().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
  expect(lines.find((l) => l.trace_id === `shutdown-${signal}`)).toMatchObject({ status: 200, msg: 'request' });
  expect(lines.some((l) => l.msg === 'shutting down' && l.signal === signal)).toBe(true);
}, 30_000);

test('new connections are refused once shutdown began', async () => {
  const { child, port } = await start({});
  const exit = exited(child);
  const slow = fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': 'shutdown-key-1', 'x-gateway-provider': 'openai', 'x-gateway-custom-host': mock.baseURL },
    body: JSON.stringify({ model: 'slow-600', messages: [{ role: 'user', content: 'hi, refused after me' }] }),
  });
  await upstreamHas('hi, refused after me');
  child.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 100));
  await expect(fetch(`http://127.0.0.1:${port}/health`, { headers: { connection: 'close' } })).rejects.toThrow();
  expect((await slow).status).toBe(200);
  expect(await exit).toBe(0);
}, 30_000);

test('a bad config file fails start-up with a clear message and exit 1', async () => {
  const child = spawn(process.execPath, ['--import', 'tsx', 'server/main.ts', '--config', 'test/fixtures/bad-config.json'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  expect(await exited(child)).toBe(1);
  expect(err).toContain('plugins[0].name');
}, 30_000);
