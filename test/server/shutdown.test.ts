import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { startProcess } from '../helpers/process.js';
import { afterAll, afterEach, beforeAll, expect, test } from 'vitest';
import { startMockOpenAI, type MockUpstream } from '../mocks/openai-upstream.js';

let mock: MockUpstream;
beforeAll(async () => {
  mock = await startMockOpenAI();
});
afterAll(() => mock.close());

const started: ChildProcess[] = [];
// A test that fails before its signal must not leave its server running.
afterEach(() => {
  for (const child of started.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});
const start = async (env: Record<string, string>) => {
  const gw = await startProcess([], { GATEWAY_API_KEYS: 'shutdown-key-1', ...env });
  started.push(gw.child);
  return gw;
};
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

/** The error code behind a failed fetch (ECONNREFUSED, ECONNRESET, UND_ERR_SOCKET, …). */
function failureCode(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? String(err);
}

test('SIGTERM under load (32 clients, half on 1-2 s streams): every accepted request completes and is logged once; later ones get a 503 or a refused connection, never a reset; exit 0', async () => {
  const { child, port, output } = await start({ GATEWAY_REQUEST_LOG: 'all' });
  const exit = exited(child);
  let signalled = false;
  type Outcome = { id: string; stream: boolean; sentAfterSignal: boolean; result: string };
  const outcomes: Outcome[] = [];
  let n = 0;
  // Each client sends its requests one after another on its keep-alive connection, as SDK clients do, until one is
  // refused: the streams' clients send their next request right as a stream accepted before the signal ends.
  const client = async (i: number) => {
    const stream = i % 2 === 0;
    await new Promise((r) => setTimeout(r, (i * 37) % 500));
    for (;;) {
      const id = `load-${i}-${n++}`;
      const outcome: Outcome = { id, stream, sentAfterSignal: signalled, result: '' };
      outcomes.push(outcome);
      try {
        const res = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-gateway-api-key': 'shutdown-key-1',
            'x-gateway-provider': 'openai',
            'x-gateway-custom-host': mock.baseURL,
            'x-gateway-trace-id': id,
          },
          // Streams of 1 to 2 s; JSON answers at once, so keep-alive connections are often idle for an instant.
          body: JSON.stringify({ model: stream ? `slow-${1000 + ((i * 131 + n * 71) % 1000)}` : 'gpt-4o-mini', messages: [{ role: 'user', content: id }], stream }),
        });
        const text = await res.text();
        if (res.status === 200) {
          const complete = stream ? text.trimEnd().endsWith('data: [DONE]') && text.includes('"content":"Hello"') : JSON.parse(text).choices?.[0]?.message?.content === 'Hello from the mock!';
          outcome.result = complete ? '200' : `200 cut short: ${text.slice(-80)}`;
          continue;
        }
        const envelope = JSON.parse(text) as { error?: { code?: string } };
        outcome.result = `${res.status} ${envelope.error?.code} connection:${res.headers.get('connection')}`;
      } catch (err) {
        outcome.result = `failed ${failureCode(err)}`;
      }
      return;
    }
  };
  const clients = Promise.all(Array.from({ length: 32 }, (_, i) => client(i)));
  // Signal once the load is steady: several streams in flight at the upstream.
  const streamsSeen = () => mock.requests.filter((r) => r.body.includes('"stream":true') && r.body.includes('load-')).length;
  for (const until = Date.now() + 20_000; streamsSeen() < 40 && Date.now() < until; ) await new Promise((r) => setTimeout(r, 20));
  const reachedBefore = new Set(mock.requests.map((r) => /"content":"(load-[^"]+)"/.exec(r.body)?.[1]).filter((id) => id !== undefined));
  signalled = true;
  const signalledAt = Date.now();
  child.kill('SIGTERM');
  const code = await exit;
  const exitMs = Date.now() - signalledAt;
  await clients;

  expect(code).toBe(0);
  // Well within shutdownTimeoutMs (10 s): streams last 2 s at most.
  expect(exitMs).toBeLessThan(10_000);
  const reachedUpstream = new Set(mock.requests.map((r) => /"content":"(load-[^"]+)"/.exec(r.body)?.[1]).filter((id) => id !== undefined));
  const byId = new Map(outcomes.map((o) => [o.id, o]));
  // Every request that reached the upstream (the gateway accepted and ran it) completed with 200 and its whole body.
  const notCompleted = [...reachedUpstream].map((id) => byId.get(id)!).filter((o) => o.result !== '200');
  expect(notCompleted).toEqual([]);
  // Streams were in flight at the signal and finished after it.
  const streamsAcrossSignal = outcomes.filter((o) => o.stream && !o.sentAfterSignal && reachedBefore.has(o.id) && o.result === '200').length;
  expect(streamsAcrossSignal).toBeGreaterThanOrEqual(8);
  // The others: refused with a 503 in the envelope that closes the connection, or a refused connection. No reset, no cut.
  const unexpected = outcomes.filter((o) => o.result !== '200' && o.result !== '503 service_unavailable connection:close' && o.result !== 'failed ECONNREFUSED');
  expect(unexpected).toEqual([]);
  // Each answered request has exactly one log line; refused ones have none.
  const lines = output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { msg: string; trace_id?: string; status?: number });
  const logged = new Map<string, number>();
  for (const l of lines) if (l.msg === 'request' && l.trace_id?.startsWith('load-')) logged.set(l.trace_id, (logged.get(l.trace_id) ?? 0) + 1);
  const answered = outcomes.filter((o) => o.result === '200').map((o) => o.id);
  expect(answered.filter((id) => logged.get(id) !== 1)).toEqual([]);
  expect([...logged.keys()].filter((id) => byId.get(id)?.result !== '200')).toEqual([]);
}, 60_000);

test('a request sent on a keep-alive connection just as its stream (under way at the signal) ends is answered 503 and never run', async () => {
  // An upstream whose SSE answer starts at once and dribbles for about a second, so its headers are out at the signal.
  const dribble = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    let i = 0;
    const timer = setInterval(() => {
      res.write(`data: {"n":${i}}\n\n`);
      if (++i === 10) {
        clearInterval(timer);
        res.end('data: [DONE]\n\n');
      }
    }, 100);
    req.on('close', () => clearInterval(timer));
  });
  await new Promise<void>((r) => dribble.listen(0, '127.0.0.1', r));
  const dribbleURL = `http://127.0.0.1:${(dribble.address() as AddressInfo).port}/v1`;
  const { child, port } = await start({});
  const exit = exited(child);
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  const common = `host: 127.0.0.1\r\nx-gateway-api-key: shutdown-key-1\r\nx-gateway-provider: openai\r\n`;
  const chat = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi, sent as the stream ended' }] });
  let got = '';
  let signalled = false;
  let sentNext = false;
  socket.on('data', (chunk: Buffer) => {
    got += chunk.toString('latin1');
    if (!signalled && got.includes('data: {"n":1}')) {
      signalled = true;
      child.kill('SIGTERM');
    }
    // The stream's last chunk is in: the next request goes out at once, as a keep-alive client's would.
    if (!sentNext && got.includes('\r\n0\r\n\r\n')) {
      sentNext = true;
      socket.write(
        `POST /v1/chat/completions HTTP/1.1\r\n${common}x-gateway-custom-host: ${mock.baseURL}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(chat)}\r\n\r\n${chat}`,
      );
    }
  });
  socket.write(`GET /v1/dribble HTTP/1.1\r\n${common}x-gateway-custom-host: ${dribbleURL}\r\n\r\n`);
  await closed;
  expect(await exit).toBe(0);
  dribble.close();
  expect(got.startsWith('HTTP/1.1 200')).toBe(true);
  expect(got).toContain('data: [DONE]');
  const second = got.indexOf('HTTP/1.1 503');
  expect(second, got).toBeGreaterThan(0);
  const answer = got.slice(second);
  expect(answer.toLowerCase()).toContain('connection: close');
  expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toMatchObject({ error: { code: 'service_unavailable', type: 'server_error' } });
  expect(mock.requests.some((r) => r.body.includes('hi, sent as the stream ended'))).toBe(false);
}, 30_000);

test('a bad config file fails start-up with a clear message and exit 1', async () => {
  const child = spawn(process.execPath, ['--import', 'tsx', 'server/main.ts', '--config', 'test/fixtures/bad-config.json'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  expect(await exited(child)).toBe(1);
  expect(err).toContain('plugins[0].name');
}, 30_000);

test('with readinessDrainMs, SIGTERM first takes the gateway out of rotation: /ready answers 503 while requests are still served, then it shuts down and exits 0', async () => {
  const { mkdtempSync, writeFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const file = join(mkdtempSync(join(tmpdir(), 'gw-ready-')), 'gateway.json');
  writeFileSync(file, JSON.stringify({ extends: 'default', readinessDrainMs: 1500 }));
  const { child, port } = await start({ GATEWAY_CONFIG: file });
  const base = `http://127.0.0.1:${port}`;
  expect((await fetch(`${base}/ready`)).status).toBe(200);
  const exit = exited(child);
  child.kill('SIGTERM');
  let ready = 200;
  for (let i = 0; i < 100 && ready === 200; i++) {
    ready = (await fetch(`${base}/ready`)).status;
    if (ready === 200) await new Promise((r) => setTimeout(r, 10));
  }
  expect(ready).toBe(503);
  // Still in service: a new connection is accepted and a request runs.
  const served = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': 'shutdown-key-1', 'x-gateway-provider': 'openai', 'x-gateway-custom-host': mock.baseURL, connection: 'close' },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'during the drain' }] }),
  });
  expect(served.status).toBe(200);
  expect((await fetch(`${base}/health`, { headers: { connection: 'close' } })).status).toBe(200);
  expect(await exit).toBe(0);
});
