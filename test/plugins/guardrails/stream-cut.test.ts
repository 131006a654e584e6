import Anthropic from '@anthropic-ai/sdk';
import OpenAI, { APIError } from 'openai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { DEFAULT_CONFIG } from '../../../server/default-config.js';
import { BOOTSTRAP_KEY, GATEWAY_KEY, startTestServer, waitForLog } from '../../helpers/gateway.js';
import { sendJson, startRecordingServer } from '../../../server/testing/mock-http.js';
import { piecesWith, startLongStreamMock, type LongStreamMock } from '../../mocks/long-stream.js';

/**
 * Output guardrails on streams, through the real server, on all four doors: a mock streams 2,000
 * pieces with the violation at piece 50, split across chunks; the client's stream ends within one
 * window in its door's format, and the mock sees its connection closed long before its end.
 */
let mock: LongStreamMock;
let gw: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  mock = await startLongStreamMock();
  gw = await startTestServer({ config: DEFAULT_CONFIG });
});
afterAll(async () => {
  await gw.close();
  await mock.close();
});

/** The default window of a hook (docs/guardrails.md#streams). */
const WINDOW = 128;
const target = (guardrail: Record<string, unknown>) => ({ provider: 'together-ai', api_key: 'k-test', custom_host: mock.baseURL, output_guardrails: [guardrail] });

type Door = 'chat' | 'completions' | 'responses' | 'messages';
const DOORS: Door[] = ['chat', 'completions', 'responses', 'messages'];

function request(door: Door): { path: string; body: Record<string, unknown> } {
  switch (door) {
    case 'chat':
      return { path: '/v1/chat/completions', body: { model: 'm', stream: true, messages: [{ role: 'user', content: 'go' }] } };
    case 'completions':
      return { path: '/v1/completions', body: { model: 'm', stream: true, prompt: 'go' } };
    case 'responses':
      return { path: '/v1/responses', body: { model: 'm', stream: true, input: 'go' } };
    case 'messages':
      return { path: '/v1/messages', body: { model: 'm', stream: true, max_tokens: 4000, messages: [{ role: 'user', content: 'go' }] } };
  }
}

interface Event {
  event: string | null;
  data: any;
}

function parseEvents(raw: string): Event[] {
  return raw
    .split('\n\n')
    .filter((b) => b.trim() !== '')
    .map((block) => {
      let event: string | null = null;
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('data: ')) data.push(line.slice(6));
      }
      const text = data.join('\n');
      return { event, data: text === '[DONE]' ? text : JSON.parse(text) };
    });
}

/** The answer text a door's events carry. */
function textOf(door: Door, events: Event[]): string {
  let out = '';
  for (const e of events) {
    const d = e.data;
    if (d === '[DONE]' || d === null) continue;
    if (door === 'chat') out += d.choices?.[0]?.delta?.content ?? '';
    else if (door === 'completions') out += d.choices?.[0]?.text ?? '';
    else if (door === 'responses' && d.type === 'response.output_text.delta') out += d.delta;
    else if (door === 'messages' && d.type === 'content_block_delta' && d.delta?.type === 'text_delta') out += d.delta.text;
  }
  return out;
}

async function stream(door: Door, guardrail: Record<string, unknown>, traceId: string) {
  const { path, body } = request(door);
  const res = await fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-config': JSON.stringify(target(guardrail)), 'x-gateway-trace-id': traceId },
    body: JSON.stringify(body),
  });
  const raw = await res.text();
  return { res, raw, events: res.headers.get('content-type')?.startsWith('text/event-stream') ? parseEvents(raw) : [] };
}

/** The door's terminal error at the end of the stream, and its code. */
function terminalCode(door: Door, events: Event[]): string {
  const last = events.at(-1)!;
  if (door === 'chat' || door === 'completions') {
    expect(last.data).toBe('[DONE]');
    return events.at(-2)!.data.error.code;
  }
  if (door === 'responses') {
    expect(last.event).toBe('response.failed');
    expect(last.data.response.status).toBe('failed');
    const error = events.at(-2)!;
    expect(error.event).toBe('error');
    expect(error.data.code).toBe(last.data.response.error.code);
    expect(events.some((e) => e.event === 'response.completed')).toBe(false);
    return error.data.code;
  }
  expect(last.event).toBe('error');
  expect(last.data.type).toBe('error');
  expect(events.some((e) => e.event === 'message_stop')).toBe(false);
  return last.data.error.type;
}

const CASES = [
  { name: 'a forbidden word', insert: ['forb', 'idd', 'en'], guardrail: { id: 'no-word', deny: true, 'default.contains': { words: ['forbidden'], operator: 'none' } }, code: 'guardrail_denied' },
  { name: 'a card number', insert: ['4111 11', '11 1111 ', '1111'], guardrail: { id: 'no-pii', deny: true, 'default.pii': { categories: ['credit_card'] } }, code: 'guardrail_denied' },
  { name: 'an API key', insert: ['sk-live-', 'AbCdEfGhIjKl', 'MnOpQrStUvWx'], guardrail: { id: 'no-key', deny: true, 'default.regexMatch': { rule: 'sk-live-[A-Za-z0-9]{24}', not: true } }, code: 'guardrail_denied' },
] as const;

describe.each(DOORS)('block on the %s door', (door) => {
  test.each(CASES)('$name at piece 50 of 2,000, split across chunks: the stream ends at it, in the door\'s format, and the upstream is hung up on', async ({ insert, guardrail, code }) => {
    const pieces = piecesWith(2000, 50, [...insert]);
    mock.setPieces(pieces);
    const violation = pieces.slice(0, 50).join('') + insert.join('');
    const traceId = `cut-${door}-${guardrail.id}`;
    const before = mock.streams.length;
    const { res, events } = await stream(door, guardrail, traceId);
    expect(res.status).toBe(200);
    const got = terminalCode(door, events);
    expect(got).toBe(door === 'messages' ? 'guardrail_error' : code);
    const text = textOf(door, events);
    // What the client got is the text before the violation and at most part of it: never more than one window after it.
    expect(violation.startsWith(text) || text.startsWith(violation)).toBe(true);
    expect(text.length).toBeLessThanOrEqual(violation.length + WINDOW);
    expect(text).not.toContain(insert.join(''));
    // The upstream saw its connection closed long before its 2,000 pieces.
    const sent = mock.streams[before]!;
    await expect.poll(() => sent.closedAt).not.toBeNull();
    expect(sent.cutShort).toBe(true);
    expect(sent.written).toBeLessThan(400);
    const line = await waitForLog(gw.logs, (l) => l.trace_id === traceId);
    expect(line.error.code).toBe(code);
    expect(line.error.message).toMatch(/The stream was cut after \d+ characters of answer text\./);
  });
});

describe('the official SDKs raise a typed error, not a parse failure', () => {
  const guardrail = CASES[0].guardrail;
  const headers = () => ({ 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-config': JSON.stringify(target(guardrail)) });

  test('openai: chat completions and Responses', async () => {
    mock.setPieces(piecesWith(2000, 50, [...CASES[0].insert]));
    const client = new OpenAI({ apiKey: 'unused', baseURL: `${gw.url}/v1`, maxRetries: 0, defaultHeaders: headers() });
    const chat = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'go' }], stream: true });
    let text = '';
    const chatError = await (async () => {
      for await (const c of chat) text += c.choices[0]?.delta.content ?? '';
    })().catch((e: unknown) => e);
    expect(chatError).toBeInstanceOf(APIError);
    expect((chatError as APIError).code).toBe('guardrail_denied');
    expect(text).not.toContain('forbidden');

    const responses = await client.responses.create({ model: 'm', input: 'go', stream: true });
    const responsesError = await (async () => {
      for await (const e of responses) void e;
    })().catch((e: unknown) => e);
    expect(responsesError).toBeInstanceOf(APIError);
    expect((responsesError as APIError).code).toBe('guardrail_denied');
  });

  test('@anthropic-ai/sdk: Messages', async () => {
    mock.setPieces(piecesWith(2000, 50, [...CASES[0].insert]));
    const client = new Anthropic({ apiKey: 'unused', baseURL: gw.url, maxRetries: 0, defaultHeaders: headers() });
    const messages = await client.messages.create({ model: 'm', max_tokens: 4000, messages: [{ role: 'user', content: 'go' }], stream: true });
    const error = await (async () => {
      for await (const e of messages) void e;
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Anthropic.APIError);
    expect(JSON.stringify((error as InstanceType<typeof Anthropic.APIError>).error)).toContain('guardrail_error');
  });
});

describe('redact and hold', () => {
  const card = ['4111 11', '11 1111 ', '1111'];
  const digits = /\d{4}/;

  async function storedEntry(traceId: string): Promise<Record<string, any>> {
    const get = (path: string) => fetch(`${gw.url}${path}`, { headers: { 'x-gateway-api-key': BOOTSTRAP_KEY } });
    let listed: Record<string, any> | undefined;
    await expect
      .poll(async () => {
        listed = ((await (await get(`/v1/logs?trace_id=${traceId}`)).json()) as { data: Record<string, any>[] }).data[0];
        return listed !== undefined;
      }, { timeout: 5000 })
      .toBe(true);
    return (await (await get(`/v1/logs/${listed!.id}`)).json()) as Record<string, any>;
  }

  test.each(DOORS)('redact on the %s door: a card number split across chunks never reaches the client, nor the stored log', async (door) => {
    const pieces = piecesWith(300, 50, card);
    mock.setPieces(pieces);
    const traceId = `redact-${door}`;
    const { res, events } = await stream(door, { id: 'mask', 'default.pii': { categories: ['credit_card'], redact: true } }, traceId);
    expect(res.status).toBe(200);
    const text = textOf(door, events);
    expect(text).toBe(pieces.join('').replace('4111 1111 1111 1111', '[REDACTED_CREDIT_CARD]'));
    expect(text).not.toMatch(digits);
    // The stream ended as usual.
    const last = events.at(-1)!;
    if (door === 'responses') expect(last.event).toBe('response.completed');
    else if (door === 'messages') expect(last.event).toBe('message_stop');
    else expect(last.data).toBe('[DONE]');
    const entry = await storedEntry(traceId);
    expect(JSON.stringify(entry.response_body)).toContain('[REDACTED_CREDIT_CARD]');
    expect(JSON.stringify(entry.response_body)).not.toMatch(/4111/);
    const hook = entry.hook_results.after_request_hooks[0];
    expect(hook).toMatchObject({ id: 'mask', verdict: true, transformed: true });
  });

  test('hold: nothing goes out until the checks passed, so a denial is still a 446 in the envelope, and a pass the whole stream', async () => {
    mock.setPieces(piecesWith(200, 50, ['forb', 'idden']));
    const held = { id: 'held', deny: true, stream_mode: 'hold', 'default.contains': { words: ['forbidden'], operator: 'none' } };
    const denied = await stream('chat', held, 'hold-denied');
    expect(denied.res.status).toBe(446);
    const body = JSON.parse(denied.raw);
    expect(body.error.code).toBe('guardrail_denied');
    expect(body.hook_results.after_request_hooks[0]).toMatchObject({ id: 'held', verdict: false });
    mock.setPieces(piecesWith(200, 50, ['fine']));
    const passed = await stream('chat', held, 'hold-passed');
    expect(passed.res.status).toBe(200);
    expect(textOf('chat', passed.events)).toContain('fine');
    expect(passed.events.at(-1)!.data).toBe('[DONE]');
  });

  test('a hook without deny: the stream goes on to its end, the failure in the log', async () => {
    const pieces = piecesWith(200, 50, ['forb', 'idden']);
    mock.setPieces(pieces);
    const { events } = await stream('chat', { id: 'note', 'default.contains': { words: ['forbidden'], operator: 'none' } }, 'no-deny');
    expect(textOf('chat', events)).toBe(pieces.join(''));
    expect(events.at(-1)!.data).toBe('[DONE]');
    const entry = await storedEntry('no-deny');
    expect(entry.hook_results.after_request_hooks[0]).toMatchObject({ id: 'note', verdict: false });
  });

  test('a config with a bad stream_mode is a 400 naming the field', async () => {
    const { res, raw } = await stream('chat', { id: 'x', stream_mode: 'later', 'default.contains': { words: ['a'], operator: 'none' } }, 'bad-mode');
    expect(res.status).toBe(400);
    expect(raw).toContain('stream_mode');
  });
});

test('/metrics counts each cut by reason and code', async () => {
  const res = await fetch(`${gw.url}/metrics`, { headers: { 'x-gateway-api-key': GATEWAY_KEY } });
  expect(res.status).toBe(200);
  const line = (await res.text()).split('\n').find((l) => l.startsWith('gateway_stream_cuts_total{reason="guardrail",code="guardrail_denied"}'));
  // Twelve block cases, three SDK streams: each a cut.
  expect(Number(line?.split(' ').at(-1))).toBeGreaterThanOrEqual(15);
});

describe('cache replays', () => {
  let verdict = true;
  let hook: Awaited<ReturnType<typeof startRecordingServer>>;
  beforeAll(async () => {
    hook = await startRecordingServer((_req, res) => sendJson(res, 200, { verdict }));
  });
  afterAll(() => hook.close());
  // A webhook's verdict can change while the cached answer stays: the replay is judged again.
  const config = () => ({ provider: 'together-ai', api_key: 'k-test', custom_host: mock.baseURL, cache: { mode: 'simple' }, output_guardrails: [{ id: 'judge', deny: true, 'default.webhook': { url: `${hook.url}/judge` } }] });
  async function send(content: string) {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-config': JSON.stringify(config()) },
      body: JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content }] }),
    });
    const raw = await res.text();
    return { status: res.headers.get('x-gateway-cache-status'), events: parseEvents(raw) };
  }

  test('a replayed stream is checked as it goes out too, and a cut stream is never kept', async () => {
    const pieces = piecesWith(120, 50, ['fine']);
    mock.setPieces(pieces);
    verdict = true;
    const first = await send('replay me');
    expect(first.status).toBe('MISS');
    expect(first.events.at(-1)!.data).toBe('[DONE]');
    await expect.poll(async () => (await send('replay me')).status).toBe('HIT');
    verdict = false;
    const replay = await send('replay me');
    expect(replay.status).toBe('HIT');
    expect(terminalCode('chat', replay.events)).toBe('guardrail_denied');
    // Cut on its first run: not kept, so the next identical request goes upstream again.
    const cut = await send('never kept');
    expect(cut.status).toBe('MISS');
    expect(terminalCode('chat', cut.events)).toBe('guardrail_denied');
    verdict = true;
    await new Promise((r) => setTimeout(r, 100));
    expect((await send('never kept')).status).toBe('MISS');
  });
});
