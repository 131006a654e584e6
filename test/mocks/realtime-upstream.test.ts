import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import WebSocket from 'ws';
import { DEFAULT_REALTIME_USAGE, startMockRealtime, type MockRealtime } from './realtime-upstream.js';

/** The mock's own contract, checked with a bare `ws` client, so a gateway test can trust what it relays. */

type Json = Record<string, any>;

/** An open socket and the events it has received so far, with a wait for the first event matching `type`. */
async function connect(url: string, headers: Record<string, string>) {
  const ws = new WebSocket(url, { headers });
  const events: Json[] = [];
  const waiters: Array<() => void> = [];
  ws.on('message', (data) => {
    events.push(JSON.parse(String(data)) as Json);
    for (const w of waiters.splice(0)) w();
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const until = async (type: string, from = 0): Promise<Json> => {
    for (;;) {
      const hit = events.slice(from).find((e) => e.type === type);
      if (hit) return hit;
      await new Promise<void>((resolve) => waiters.push(resolve));
    }
  };
  const send = (event: Json) => ws.send(JSON.stringify(event));
  return { ws, events, until, send };
}

/** The status and body of a refused upgrade. */
function refusal(url: string, headers: Record<string, string>) {
  return new Promise<{ status: number; body: Json }>((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.once('open', () => reject(new Error('upgrade accepted')));
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) as Json }));
    });
  });
}

let mock: MockRealtime;
let wsBase: string;
beforeAll(async () => {
  mock = await startMockRealtime({ deltaDelayMs: 0 });
  wsBase = mock.origin.replace('http:', 'ws:');
});
afterAll(async () => {
  await mock.close();
});

describe('handshake', () => {
  test('OpenAI path with a bearer: session.created for the model asked', async () => {
    const c = await connect(`${wsBase}/v1/realtime?model=gpt-realtime`, { authorization: 'Bearer sk-test' });
    const created = await c.until('session.created');
    expect(created.event_id).toMatch(/^event_/);
    expect(created.session).toMatchObject({
      type: 'realtime',
      object: 'realtime.session',
      model: 'gpt-realtime',
      output_modalities: ['audio'],
      audio: { input: { format: { type: 'audio/pcm', rate: 24000 } }, output: { format: { type: 'audio/pcm', rate: 24000 }, voice: 'marin' } },
    });
    expect(created.session.id).toMatch(/^sess_/);
    expect(mock.sockets()).toBe(1);
    expect(mock.handshakes.at(-1)).toMatchObject({ path: '/v1/realtime', query: { model: 'gpt-realtime' }, headers: { authorization: 'Bearer sk-test' } });
    c.ws.close(1000, 'bye');
    await new Promise((resolve) => c.ws.once('close', resolve));
    await expect.poll(() => mock.closes.at(-1)).toEqual({ code: 1000, reason: 'bye' });
    expect(mock.sockets()).toBe(0);
  });

  test('Azure path with api-key is accepted; without it, 401', async () => {
    const c = await connect(`${wsBase}/openai/v1/realtime?model=my-deployment`, { 'api-key': 'azure-key' });
    expect((await c.until('session.created')).session.model).toBe('my-deployment');
    c.ws.close();
    const denied = await refusal(`${wsBase}/openai/v1/realtime?model=my-deployment`, { authorization: 'Bearer sk-test' });
    expect(denied.status).toBe(401);
    expect(denied.body.error.code).toBe('401');
  });

  test('refusals: no bearer 401, unknown path 404, no model 400 — each recorded', async () => {
    const before = mock.handshakes.length;
    const noAuth = await refusal(`${wsBase}/v1/realtime?model=gpt-realtime`, {});
    expect(noAuth).toEqual({
      status: 401,
      body: { error: { message: 'Missing bearer', type: 'invalid_request_error', code: 'invalid_api_key', param: null } },
    });
    expect((await refusal(`${wsBase}/v1/elsewhere?model=m`, { authorization: 'Bearer k' })).status).toBe(404);
    expect((await refusal(`${wsBase}/v1/realtime`, { authorization: 'Bearer k' })).status).toBe(400);
    expect(mock.handshakes.length).toBe(before + 3);
  });

  test('refuseNext refuses once, then upgrades are accepted again', async () => {
    mock.refuseNext(429, 'Slow down');
    const refused = await refusal(`${wsBase}/v1/realtime?model=gpt-realtime`, { authorization: 'Bearer sk-test' });
    expect(refused).toEqual({ status: 429, body: { error: { message: 'Slow down', type: 'requests', code: 'rate_limit_exceeded', param: null } } });
    const c = await connect(`${wsBase}/v1/realtime?model=gpt-realtime`, { authorization: 'Bearer sk-test' });
    await c.until('session.created');
    c.ws.close();
  });
});

describe('events', () => {
  const open = () => connect(`${wsBase}/v1/realtime?model=gpt-realtime`, { authorization: 'Bearer sk-test' });

  test('commit then response.create: the full GA sequence, with the usage in response.done', async () => {
    const c = await open();
    await c.until('session.created');
    c.send({ type: 'session.update', session: { type: 'realtime', audio: { output: { voice: 'cedar' } } } });
    const updated = await c.until('session.updated');
    expect(updated.session.audio.output).toEqual({ format: { type: 'audio/pcm', rate: 24000 }, voice: 'cedar' });

    c.send({ type: 'input_audio_buffer.append', audio: Buffer.alloc(480).toString('base64') });
    c.send({ type: 'input_audio_buffer.commit' });
    const transcribed = await c.until('conversation.item.input_audio_transcription.completed');
    expect(transcribed.transcript).toBe('What is the weather like?');
    c.send({ type: 'response.create' });
    const done = await c.until('response.done');

    expect(c.events.map((e) => e.type)).toEqual([
      'session.created',
      'session.updated',
      'input_audio_buffer.committed',
      'conversation.item.added',
      'conversation.item.done',
      'conversation.item.input_audio_transcription.completed',
      'response.created',
      'response.output_item.added',
      'response.content_part.added',
      ...Array.from({ length: 3 }, () => ['response.output_audio.delta', 'response.output_audio_transcript.delta']).flat(),
      'response.output_audio.done',
      'response.output_audio_transcript.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.done',
    ]);
    expect(new Set(c.events.map((e) => e.event_id)).size).toBe(c.events.length);
    const committed = c.events.find((e) => e.type === 'input_audio_buffer.committed')!;
    expect(committed.previous_item_id).toBeNull();
    expect(c.events.find((e) => e.type === 'conversation.item.added')!.item).toMatchObject({ id: committed.item_id, role: 'user', content: [{ type: 'input_audio', transcript: null }] });

    const words = c.events.filter((e) => e.type === 'response.output_audio_transcript.delta').map((e) => e.delta).join('');
    expect(words).toBe('Sunny and warm today.');
    expect(c.events.find((e) => e.type === 'response.output_audio_transcript.done')!.transcript).toBe(words);
    expect(done.response).toMatchObject({ object: 'realtime.response', status: 'completed', output: [{ role: 'assistant', content: [{ type: 'output_audio', transcript: words }] }] });
    expect(done.response.usage).toEqual({
      total_tokens: 450,
      input_tokens: 300,
      output_tokens: 150,
      input_token_details: { text_tokens: 100, audio_tokens: 200, image_tokens: 0, cached_tokens: 50, cached_tokens_details: { text_tokens: 50, audio_tokens: 0, image_tokens: 0 } },
      output_token_details: { text_tokens: 30, audio_tokens: 120 },
    });
    expect(mock.received.slice(-4).map((e) => e.type)).toEqual(['session.update', 'input_audio_buffer.append', 'input_audio_buffer.commit', 'response.create']);
    c.ws.close();
  });

  test("output_modalities ['text'] streams text events instead of audio", async () => {
    const c = await open();
    c.send({ type: 'response.create', response: { output_modalities: ['text'] } });
    const done = await c.until('response.done');
    const types = c.events.map((e) => e.type);
    expect(types).not.toContain('response.output_audio.delta');
    expect(c.events.find((e) => e.type === 'response.content_part.added')!.part).toEqual({ type: 'text', text: '' });
    expect(c.events.find((e) => e.type === 'response.output_text.done')!.text).toBe('Sunny and warm today.');
    expect(done.response.output[0].content).toEqual([{ type: 'output_text', text: 'Sunny and warm today.' }]);
    c.ws.close();
  });

  test('conversation.item.create gets an id; unknown events, bad JSON and binary frames get error events', async () => {
    const c = await open();
    c.send({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }] } });
    expect((await c.until('conversation.item.done')).item.id).toMatch(/^item_/);
    c.send({ type: 'nonsense.event', event_id: 'evt_client_1' });
    const unknown = await c.until('error');
    expect(unknown.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_value', param: 'type', event_id: 'evt_client_1' });
    let from = c.events.length;
    c.ws.send('{not json');
    expect((await c.until('error', from)).error).toMatchObject({ code: 'invalid_value', event_id: null });
    from = c.events.length;
    c.ws.send(Buffer.from([1, 2, 3]));
    expect((await c.until('error', from)).error.code).toBe('invalid_value');
    c.ws.close();
  });

  test('broadcast reaches every open socket', async () => {
    const [a, b] = await Promise.all([open(), open()]);
    await Promise.all([a.until('session.created'), b.until('session.created')]);
    mock.broadcast({ type: 'rate_limits.updated', rate_limits: [] });
    const [ea, eb] = await Promise.all([a.until('rate_limits.updated'), b.until('rate_limits.updated')]);
    expect(ea.event_id).toMatch(/^event_/);
    expect(eb.rate_limits).toEqual([]);
    a.ws.close();
    b.ws.close();
  });
});

describe('cancel', () => {
  test('response.cancel mid-stream stops the deltas and ends with status cancelled', async () => {
    const slow = await startMockRealtime({ audioChunks: 50, deltaDelayMs: 5, usage: { outputAudio: 500 } });
    try {
      const c = await connect(`${slow.origin.replace('http:', 'ws:')}/v1/realtime?model=gpt-realtime`, { authorization: 'Bearer k' });
      c.send({ type: 'response.create' });
      await c.until('response.output_audio.delta');
      c.send({ type: 'response.cancel' });
      const done = await c.until('response.done');
      expect(done.response.status).toBe('cancelled');
      expect(done.response.status_details).toEqual({ type: 'cancelled', reason: 'client_cancelled' });
      expect(done.response.usage).toMatchObject({ input_tokens: 300, output_tokens: 0, total_tokens: 300 });
      expect(c.events.filter((e) => e.type === 'response.output_audio.delta').length).toBeLessThan(50);
      // Nothing of the cancelled response trails its response.done.
      const count = c.events.length;
      await new Promise((resolve) => setTimeout(resolve, 30));
      expect(c.events.length).toBe(count);
      // A cancel with nothing running is an error, as in the API.
      c.send({ type: 'response.cancel', event_id: 'evt_late' });
      expect((await c.until('error')).error).toMatchObject({ code: 'response_cancel_not_active', event_id: 'evt_late' });
      c.ws.close();
    } finally {
      await slow.close();
    }
  });

  test('usage overrides change the reported totals', async () => {
    expect(DEFAULT_REALTIME_USAGE.inputText + DEFAULT_REALTIME_USAGE.inputAudio).toBe(300);
    const custom = await startMockRealtime({ usage: { inputText: 10, inputAudio: 0, cached: 0, outputText: 5, outputAudio: 0 }, audioChunks: 1, transcript: 'Hello?' });
    try {
      const c = await connect(`${custom.baseURL.replace('http:', 'ws:')}/realtime?model=m`, { authorization: 'Bearer k' });
      c.send({ type: 'input_audio_buffer.commit' });
      expect((await c.until('conversation.item.input_audio_transcription.completed')).transcript).toBe('Hello?');
      c.send({ type: 'response.create' });
      const done = await c.until('response.done');
      expect(done.response.usage).toMatchObject({ total_tokens: 15, input_tokens: 10, output_tokens: 5 });
      expect(c.events.filter((e) => e.type === 'response.output_audio_transcript.delta').map((e) => e.delta)).toEqual(['Sunny and warm today.']);
      c.ws.close();
    } finally {
      await custom.close();
    }
  });
});
