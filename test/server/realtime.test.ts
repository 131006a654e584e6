import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { connect as netConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer as createTlsServer } from 'node:tls';
import OpenAI from 'openai';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { BOOTSTRAP_KEY, GATEWAY_KEY, startTestServer, storedLogEntry } from '../helpers/gateway.js';
import { DEFAULT_REALTIME_USAGE, startMockRealtime, type MockRealtime } from '../mocks/realtime-upstream.js';

/*
 * Realtime sessions through the bundled server (docs/realtime.md): a WebSocket relayed to the provider's realtime
 * socket both ways, routed by the request's config, refused by limits at the start and ended by a budget that runs
 * out, logged and priced when it ends; client secrets for browsers.
 */
let gw: Awaited<ReturnType<typeof startTestServer>>;
let mock: MockRealtime;

beforeAll(async () => {
  mock = await startMockRealtime();
  gw = await startTestServer();
});
afterAll(async () => {
  await gw?.close();
  await mock?.close();
});

const wsURL = (query: string) => `${gw.url.replace(/^http/, 'ws')}/v1/realtime?${query}`;
const openaiConfig = (extra: Record<string, unknown> = {}) => JSON.stringify({ provider: 'openai', api_key: 'sk-realtime-upstream', custom_host: mock.baseURL, ...extra });

type Event = Record<string, any>;

/** A client socket with its events collected; `next(type)` waits for the next event of that type. */
async function connect(url: string, options: WebSocket.ClientOptions, protocols?: string[]) {
  const ws = protocols === undefined ? new WebSocket(url, options) : new WebSocket(url, protocols, options);
  const events: Event[] = [];
  const waiting: Array<{ type: string; resolve: (e: Event) => void }> = [];
  ws.on('message', (data) => {
    const event = JSON.parse(String(data)) as Event;
    events.push(event);
    for (const w of [...waiting]) {
      if (event.type === w.type && !(event as { _taken?: boolean })._taken) {
        (event as { _taken?: boolean })._taken = true;
        waiting.splice(waiting.indexOf(w), 1);
        w.resolve(event);
      }
    }
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  const refused = new Promise<{ status: number; body: string }>((resolve) =>
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    }),
  );
  ws.on('error', () => undefined);
  const opened = await Promise.race([new Promise<true>((resolve) => ws.once('open', () => resolve(true))), refused.then(() => false as const)]);
  const next = (type: string) =>
    new Promise<Event>((resolve) => {
      const seen = events.find((e) => e.type === type && !(e as { _taken?: boolean })._taken);
      if (seen !== undefined) {
        (seen as { _taken?: boolean })._taken = true;
        resolve(seen);
      } else waiting.push({ type, resolve });
    });
  return { ws, events, next, closed, refused, opened, send: (e: Event) => ws.send(JSON.stringify(e)) };
}

/** A TLS terminator on loopback in front of the gateway (a throwaway self-signed certificate for 127.0.0.1). */
async function tlsTerminator(port: number): Promise<{ url: string; cert: string; close(): void }> {
  const dir = mkdtempSync(join(tmpdir(), 'rt-tls-'));
  const made = spawnSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')]);
  if (made.status !== 0) throw new Error(`openssl: ${made.stderr}`);
  const cert = readFileSync(join(dir, 'cert.pem'), 'utf8');
  const server = createTlsServer({ key: readFileSync(join(dir, 'key.pem')), cert }, (socket) => {
    const inner = netConnect(port, '127.0.0.1');
    socket.pipe(inner).pipe(socket);
    const end = () => {
      socket.destroy();
      inner.destroy();
    };
    socket.on('error', end);
    inner.on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `https://127.0.0.1:${(server.address() as { port: number }).port}`, cert, close: () => server.close() };
}

const logOf = (traceId: string) => storedLogEntry(gw.url, traceId);

describe('a realtime session relayed to OpenAI', () => {
  test('audio and text events both ways; the provider gets its own key, never the gateway key; usage and cost stored', async () => {
    const before = mock.handshakes.length;
    const c = await connect(wsURL('model=gpt-realtime'), { headers: { 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-config': openaiConfig(), 'x-gateway-trace-id': 'rt-relay-1' } });
    expect(c.opened).toBe(true);
    expect((await c.next('session.created')).session.model).toBe('gpt-realtime');
    const handshake = mock.handshakes[before]!;
    expect(handshake.path).toBe('/v1/realtime');
    expect(handshake.query.model).toBe('gpt-realtime');
    expect(handshake.headers.authorization).toBe('Bearer sk-realtime-upstream');
    expect(JSON.stringify(handshake.headers)).not.toContain(GATEWAY_KEY);

    c.send({ type: 'session.update', session: { type: 'realtime', instructions: 'Be brief.' } });
    expect((await c.next('session.updated')).session.instructions).toBe('Be brief.');
    c.send({ type: 'input_audio_buffer.append', audio: Buffer.from('pcm16 audio').toString('base64') });
    c.send({ type: 'input_audio_buffer.commit' });
    expect((await c.next('conversation.item.input_audio_transcription.completed')).transcript).toBe('What is the weather like?');
    c.send({ type: 'response.create' });
    const done = await c.next('response.done');
    expect(done.response.usage.total_tokens).toBe(450);
    const audio = c.events.filter((e) => e.type === 'response.output_audio.delta');
    expect(audio.length).toBe(3);
    expect(c.events.filter((e) => e.type === 'response.output_audio_transcript.delta').map((e) => e.delta).join('')).toBe('Sunny and warm today.');
    // What the client sent reached the provider, in order.
    const sent = mock.received.slice(-4).map((e) => e.type);
    expect(sent).toEqual(['session.update', 'input_audio_buffer.append', 'input_audio_buffer.commit', 'response.create']);
    c.ws.close(1000);
    expect((await c.closed).code).toBe(1000);

    const entry = await logOf('rt-relay-1');
    expect(entry.route).toBe('realtime');
    expect(entry.provider).toBe('openai');
    expect(entry.model).toBe('gpt-realtime');
    expect(entry.status).toBe(101);
    expect([entry.prompt_tokens, entry.completion_tokens, entry.total_tokens, entry.cached_tokens]).toEqual([300, 150, 450, 50]);
    // gpt-realtime per million: text in $4, cached $0.40, audio in $32, text out $16, audio out $64.
    const expected = (50 * 4 + 50 * 0.4 + 200 * 32 + 30 * 16 + 120 * 64) / 1e6;
    expect(entry.cost).toBeCloseTo(expected, 9);
    const summary = JSON.parse(entry.response_body);
    expect(summary).toMatchObject({ object: 'realtime.session', model: 'gpt-realtime', closed_by: 'client', close_code: 1000, responses: 1 });
    expect(summary.events.client).toEqual({ 'session.update': 1, 'input_audio_buffer.append': 1, 'input_audio_buffer.commit': 1, 'response.create': 1 });
    expect(summary.events.provider['response.output_audio.delta']).toBe(3);
    expect(summary.transcript).toEqual([
      { role: 'user', text: 'What is the weather like?' },
      { role: 'assistant', text: 'Sunny and warm today.' },
    ]);
    expect(JSON.stringify(entry)).not.toContain('sk-realtime-upstream');
    // /metrics counts the session under its route.
    const metrics = await (await fetch(`${gw.url}/metrics`, { headers: { 'x-gateway-api-key': GATEWAY_KEY } })).text();
    expect(metrics).toMatch(/gateway_requests_total\{route="realtime",provider="openai",model="gpt-realtime",status="101"\} [1-9]/);
  }, 30_000);

  test("the official openai SDK's OpenAIRealtimeWS works against the gateway behind TLS (only the base URL and the gateway's headers differ)", async () => {
    // The SDK always speaks wss: the gateway sits behind a TLS terminator, as in production.
    const tls = await tlsTerminator(Number(new URL(gw.url).port));
    const client = new OpenAI({ apiKey: 'sk-realtime-upstream', baseURL: `${tls.url}/v1` });
    const rt = new OpenAIRealtimeWS(
      { model: 'gpt-realtime', options: { ca: tls.cert, headers: { 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-provider': 'openai', 'x-gateway-custom-host': mock.baseURL } } },
      client,
    );
    rt.on('error', (err) => {
      throw err;
    });
    const seen: string[] = [];
    rt.on('event', (e) => seen.push(e.type));
    await new Promise<void>((resolve) => rt.socket.once('open', () => resolve()));
    const done = new Promise<any>((resolve) => rt.on('response.done', resolve));
    rt.send({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hi' }] } });
    rt.send({ type: 'response.create', response: { output_modalities: ['text'] } });
    const event = await done;
    expect(event.response.status).toBe('completed');
    expect(seen).toContain('response.output_text.delta');
    expect(mock.handshakes.at(-1)!.headers.authorization).toBe('Bearer sk-realtime-upstream');
    rt.close();
    tls.close();
  }, 30_000);

  test('a provider without a realtime API, a missing model and no upgrade are clear refusals', async () => {
    const c = await connect(wsURL('model=claude-sonnet-4'), { headers: { 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-config': JSON.stringify({ provider: 'anthropic', api_key: 'sk-ant', custom_host: mock.origin }) } });
    expect(c.opened).toBe(false);
    const refused = await c.refused;
    expect(refused.status).toBe(400);
    expect(JSON.parse(refused.body).error.message).toContain('Provider "anthropic" has no Realtime API; providers that have one: openai');

    const noModel = await connect(wsURL(''), { headers: { 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-config': openaiConfig() } });
    expect((await noModel.refused).status).toBe(400);
    expect(JSON.parse((await noModel.refused).body).error.param).toBe('model');

    const plain = await fetch(`${gw.url}/v1/realtime?model=gpt-realtime`, { headers: { 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-config': openaiConfig() } });
    expect(plain.status).toBe(400);
    expect(((await plain.json()) as any).error.message).toContain('WebSocket');

    const noKey = await connect(wsURL('model=gpt-realtime'), { headers: { 'x-gateway-config': openaiConfig() } });
    expect((await noKey.refused).status).toBe(401);
  }, 30_000);

  test('a malformed handshake is refused before any provider is called', async () => {
    const before = mock.handshakes.length;
    const url = new URL(gw.url);
    const answer = await new Promise<string>((resolve) => {
      const socket = netConnect(Number(url.port), '127.0.0.1', () => {
        socket.write(
          `GET /v1/realtime?model=gpt-realtime HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: not-a-key\r\nSec-WebSocket-Version: 13\r\n` +
            `x-gateway-api-key: ${GATEWAY_KEY}\r\nx-gateway-config: ${openaiConfig()}\r\n\r\n`,
        );
      });
      let text = '';
      socket.on('data', (c: Buffer) => (text += c.toString()));
      socket.on('close', () => resolve(text));
      socket.on('error', () => resolve(text));
    });
    expect(answer).toMatch(/^HTTP\/1\.1 400/);
    expect(answer).toContain('"param":"sec-websocket-key"');
    expect(mock.handshakes.length).toBe(before);
  }, 30_000);

  test('a fallback: the first provider refuses the handshake (503), the second serves the session', async () => {
    mock.refuseNext(503, 'overloaded');
    const config = JSON.stringify({
      strategy: { mode: 'fallback' },
      targets: [
        { provider: 'openai', api_key: 'sk-first', custom_host: mock.baseURL },
        { provider: 'openai', api_key: 'sk-second', custom_host: mock.baseURL },
      ],
    });
    const c = await connect(wsURL('model=gpt-realtime'), { headers: { 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-config': config, 'x-gateway-trace-id': 'rt-fallback-1' } });
    expect(c.opened).toBe(true);
    await c.next('session.created');
    expect(mock.handshakes.at(-1)!.headers.authorization).toBe('Bearer sk-second');
    c.ws.close();
    await c.closed;
    const entry = await logOf('rt-fallback-1');
    expect(entry.attempts.map((a: { status: number }) => a.status)).toEqual([503, 101]);
    expect(entry.target_path).toBe('1');
  }, 30_000);

  test('Azure OpenAI: the v1 realtime path with the api-key header', async () => {
    const before = mock.handshakes.length;
    const config = JSON.stringify({ provider: 'azure-openai', api_key: 'azure-key-1', resource_name: 'res', custom_host: mock.origin, api_version: 'v1', deployment_id: 'my-realtime' });
    // The client names the model; the target's deployment serves it, as for chat.
    const c = await connect(wsURL('model=gpt-realtime'), { headers: { 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-config': config } });
    const refusal = c.opened ? null : await c.refused;
    expect(refusal).toBeNull();
    await c.next('session.created');
    const handshake = mock.handshakes[before]!;
    expect(handshake.path).toBe('/openai/v1/realtime');
    expect(handshake.query.model).toBe('my-realtime');
    expect(handshake.headers['api-key']).toBe('azure-key-1');
    c.ws.close();
    await c.closed;
  }, 30_000);
});

describe('client secrets for browsers', () => {
  const mint = async (body: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${gw.url}/v1/realtime/client_secrets`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-config': openaiConfig(), ...headers },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  };

  test("minted with the SDK's clientSecrets.create; a browser-style socket connects with it as a subprotocol, routed as minted", async () => {
    const client = new OpenAI({ apiKey: 'unused', baseURL: `${gw.url}/v1`, defaultHeaders: { 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-config': openaiConfig(), 'x-gateway-metadata': JSON.stringify({ user: 'alice' }) } });
    const secret = await client.realtime.clientSecrets.create({ session: { type: 'realtime', model: 'gpt-realtime', instructions: 'Speak French.' } });
    expect(secret.value.startsWith('ek_gw_')).toBe(true);
    expect(secret.expires_at).toBeGreaterThan(Date.now() / 1000 + 500);
    expect(secret.value).not.toContain('sk-realtime-upstream');

    const before = mock.received.length;
    // A browser sends no headers of its own: the secret rides in the subprotocols, which are never echoed back.
    // The browser's own metadata does not win over the minted one.
    const c = await connect(wsURL('model=gpt-realtime'), { headers: { 'x-gateway-trace-id': 'rt-secret-1', 'x-gateway-metadata': JSON.stringify({ user: 'mallory' }) } }, ['realtime', `openai-insecure-api-key.${secret.value}`]);
    expect(c.opened).toBe(true);
    expect(c.ws.protocol).toBe('realtime');
    await c.next('session.created');
    // The minted configuration is applied first.
    expect((await c.next('session.updated')).session.instructions).toBe('Speak French.');
    expect(mock.received[before]).toMatchObject({ type: 'session.update', session: { instructions: 'Speak French.' } });
    expect(mock.handshakes.at(-1)!.headers.authorization).toBe('Bearer sk-realtime-upstream');
    c.ws.close();
    await c.closed;
    const entry = await logOf('rt-secret-1');
    expect(entry.metadata).toEqual({ user: 'alice' });
    // The secret rode in a header: the log never keeps it.
    expect(JSON.stringify(entry)).not.toContain(secret.value.slice(10, 60));
  }, 30_000);

  test('an expired secret, one for another model and a forged one are refused at the handshake', async () => {
    const short = await mint({ expires_after: { anchor: 'created_at', seconds: 10 }, session: { model: 'gpt-realtime' } });
    expect(short.status).toBe(200);
    const other = await mint({ session: { model: 'gpt-realtime-mini' } });
    const wrongModel = await connect(wsURL('model=gpt-realtime'), {}, ['realtime', `openai-insecure-api-key.${other.body.value}`]);
    const refusal = await wrongModel.refused;
    expect(refusal.status).toBe(403);
    expect(JSON.parse(refusal.body).error.message).toContain('for model "gpt-realtime-mini"');

    const forged = `${short.body.value.slice(0, -4)}AAAA`;
    const bad = await connect(wsURL('model=gpt-realtime'), {}, ['realtime', `openai-insecure-api-key.${forged}`]);
    expect((await bad.refused).status).toBe(401);

    expect((await mint({ session: {} })).status).toBe(400);
    expect((await mint({ expires_after: { seconds: 99999 }, session: { model: 'gpt-realtime' } })).status).toBe(400);
    // Used elsewhere than the realtime route, a secret is no key at all.
    const elsewhere = await fetch(`${gw.url}/v1/logs`, { headers: { authorization: `Bearer ${short.body.value}` } });
    expect(elsewhere.status).toBe(401);
  }, 30_000);

  test('an expired secret', async () => {
    const res = await mint({ expires_after: { seconds: 10 }, session: { model: 'gpt-realtime' } });
    const realNow = Date.now;
    Date.now = () => realNow() + 11_000;
    try {
      const c = await connect(wsURL('model=gpt-realtime'), {}, ['realtime', `openai-insecure-api-key.${res.body.value}`]);
      const refusal = await c.refused;
      expect(refusal.status).toBe(401);
      expect(JSON.parse(refusal.body).error.message).toContain('expired');
    } finally {
      Date.now = realNow;
    }
  }, 30_000);
});

describe('limits', () => {
  test('a token budget that runs out during a session ends it with an error event the SDK understands', async () => {
    const admin = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${gw.url}/v1${path}`, { method, headers: { 'x-gateway-api-key': BOOTSTRAP_KEY, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const text = await res.text();
      expect(res.status, text).toBe(200);
      return JSON.parse(text);
    };
    const ws = await admin('POST', '/workspaces', { name: 'realtime budget', slug: 'rt-budget' });
    const key = await admin('POST', '/api-keys', { type: 'workspace-service', name: 'rt', workspace_id: ws.id, scopes: ['completions.write'] });
    // 1,500 tokens. The session reserves one response's worth at the start (1,024, no max_output_tokens given); each
    // response is 450: the first three fit (1,350), the fourth would take the session to 1,800.
    await admin('POST', '/policies/usage-limits', { name: 'rt tokens', type: 'tokens', credit_limit: 1500, workspace_id: ws.id });
    const c = await connect(wsURL('model=gpt-realtime'), { headers: { 'x-gateway-api-key': key.key, 'x-gateway-config': openaiConfig(), 'x-gateway-trace-id': 'rt-budget-1' } });
    expect(c.opened, c.opened ? '' : JSON.stringify(await c.refused)).toBe(true);
    await c.next('session.created');
    for (let i = 0; i < 3; i++) {
      c.send({ type: 'response.create' });
      await c.next('response.done');
    }
    expect(c.events.filter((e) => e.type === 'error')).toEqual([]);
    c.send({ type: 'response.create' });
    const error = await c.next('error');
    expect(error.error).toMatchObject({ type: 'rate_limit_error', code: 'usage_limit_exceeded' });
    const closed = await c.closed;
    expect(closed.code).toBe(1008);
    const entry = await logOf('rt-budget-1');
    expect(entry.total_tokens).toBe(4 * (DEFAULT_REALTIME_USAGE.inputText + DEFAULT_REALTIME_USAGE.inputAudio + DEFAULT_REALTIME_USAGE.outputText + DEFAULT_REALTIME_USAGE.outputAudio));
    expect(entry.error_code).toBe('usage_limit_exceeded');
    expect(JSON.parse(entry.response_body)).toMatchObject({ closed_by: 'gateway', close_code: 1008, responses: 4 });
    // The next session is refused at the handshake: the budget is spent.
    const again = await connect(wsURL('model=gpt-realtime'), { headers: { 'x-gateway-api-key': key.key, 'x-gateway-config': openaiConfig() } });
    expect((await again.refused).status).toBe(429);
  }, 30_000);
});

describe('guardrails on the session', () => {
  test("an output guardrail on the answer's transcript ends that response, not the session; an input one refuses a user's text", async () => {
    const config = openaiConfig({
      input_guardrails: [{ id: 'no-secrets', deny: true, 'default.contains': { words: ['password'], operator: 'none' } }],
      output_guardrails: [{ id: 'no-warm', deny: true, 'default.contains': { words: ['warm'], operator: 'none' } }],
    });
    const before = mock.received.length;
    const c = await connect(wsURL('model=gpt-realtime'), { headers: { 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-config': config, 'x-gateway-trace-id': 'rt-guard-1' } });
    expect(c.opened).toBe(true);
    await c.next('session.created');

    // A user's text that an input hook denies never goes up; the client hears why.
    c.send({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'my password is hunter2' }] } });
    const refused = await c.next('error');
    expect(refused.error.code).toBe('guardrail_denied');
    // Whatever the order of its keys, and inline in a response.create too.
    c.ws.send(JSON.stringify({ item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'the password is swordfish' }] }, type: 'conversation.item.create' }));
    expect((await c.next('error')).error.code).toBe('guardrail_denied');
    c.send({ type: 'response.create', response: { input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'password: opensesame' }] }] } });
    expect((await c.next('error')).error.code).toBe('guardrail_denied');
    c.send({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'How is the weather?' }] } });
    await c.next('conversation.item.done');
    expect(mock.received.slice(before).map((e) => e.type)).toEqual(['conversation.item.create']);
    const sentUp = JSON.stringify(mock.received.slice(before));
    for (const secret of ['hunter2', 'swordfish', 'opensesame']) expect(sentUp).not.toContain(secret);

    // The answer says "warm": the response is cancelled upstream, its later events stay at the gateway.
    c.send({ type: 'response.create', response: { output_modalities: ['text'] } });
    const denied = await c.next('error');
    expect(denied.error.code).toBe('guardrail_denied');
    const done = await c.next('response.done');
    // The answer's whole text never reaches the client: no .done events of its words or items, no output in response.done.
    for (const type of ['response.output_text.done', 'response.content_part.done', 'response.output_item.done']) expect(c.events.filter((e) => e.type === type)).toEqual([]);
    expect(done.response).toMatchObject({ status: 'cancelled', status_details: { reason: 'guardrail' }, output: [] });
    const cancel = mock.received.find((e) => e.type === 'response.cancel');
    expect(cancel).toMatchObject({ response_id: done.response.id });

    // The session goes on.
    c.send({ type: 'session.update', session: { type: 'realtime', instructions: 'x' } });
    await c.next('session.updated');
    c.ws.close();
    await c.closed;
    const entry = await logOf('rt-guard-1');
    expect(JSON.parse(entry.response_body).guardrails).toEqual({ checked: 5, denied: 4 });
  }, 30_000);
});
