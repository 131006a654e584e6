import { APIError } from 'openai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { schemaErrors } from '../../../server/testing/index.js';
import { sseEvents } from '../../../server/testing/index.js';
import { doorGateway } from './helpers.js';

const MODEL = 'claude-sonnet-4-5';
let t: Awaited<ReturnType<typeof doorGateway>>;

beforeAll(async () => {
  t = await doorGateway({ contextWindows: { anthropic: { 'claude-tiny': 300 } } });
});
afterAll(() => t.close());

const lastAnthropic = () => t.anthropicMock.requests.at(-1)!.body;

describe('previous_response_id on a translated provider', () => {
  test('three turns: each turn sends the whole conversation so far, in order; instructions are not carried over', async () => {
    const c = t.client(t.targets.anthropic);
    const one = await c.responses.create({ model: MODEL, instructions: 'Be terse.', input: 'First?' });
    expect(lastAnthropic().system).toEqual([{ type: 'text', text: 'Be terse.' }]);
    const two = await c.responses.create({ model: MODEL, previous_response_id: one.id, input: 'Second?' });
    expect(two.previous_response_id).toBe(one.id);
    expect(two.instructions).toBeNull();
    const three = await c.responses.create({ model: MODEL, previous_response_id: two.id, instructions: 'Be kind.', input: [{ role: 'user', content: [{ type: 'input_text', text: 'Third?' }] }] });
    expect(three.output_text).toBe('Hello!');
    const sent = lastAnthropic();
    // Only this turn's instructions: the first turn's are not carried over.
    expect(sent.system).toEqual([{ type: 'text', text: 'Be kind.' }]);
    expect(sent.messages).toEqual([
      { role: 'user', content: 'First?' },
      { role: 'assistant', content: 'Hello!' },
      { role: 'user', content: 'Second?' },
      { role: 'assistant', content: 'Hello!' },
      { role: 'user', content: 'Third?' },
    ]);
  });

  test('an unknown previous_response_id is a 404 naming the field, before any provider call', async () => {
    const before = t.anthropicMock.requests.length;
    const err = (await t.client(t.targets.anthropic).responses.create({ model: MODEL, previous_response_id: 'resp_missing', input: 'Hi' }).catch((e: unknown) => e)) as APIError;
    expect(err.status).toBe(404);
    expect((err.error as { param?: string }).param).toBe('previous_response_id');
    expect(err.message).toContain('resp_missing');
    expect(t.anthropicMock.requests.length).toBe(before);
  });

  test('a response of another workspace is not found', async () => {
    const mine = await t.client(t.targets.anthropic, 'ws-a').responses.create({ model: MODEL, input: 'Hi' });
    const err = (await t.client(t.targets.anthropic, 'ws-b').responses.create({ model: MODEL, previous_response_id: mine.id, input: 'Hi' }).catch((e: unknown) => e)) as APIError;
    expect(err.status).toBe(404);
    expect((await t.call('GET', `/responses/${mine.id}`, { key: 'ws-b' })).status).toBe(404);
    expect((await t.call('GET', `/responses/${mine.id}`, { key: 'ws-a' })).status).toBe(200);
  });
});

describe('truncation against the context window (claude-tiny: 300 tokens in this test)', () => {
  const long = (n: number) => `${n}:${'word '.repeat(80)}`;
  const turns = async () => {
    const c = t.client(t.targets.anthropic);
    let previous: string | undefined;
    for (let i = 0; i < 4; i++) previous = (await c.responses.create({ model: 'claude-tiny', input: long(i), previous_response_id: previous, truncation: 'auto' })).id;
    return previous!;
  };

  test('disabled (the default): a 400 context_length_exceeded naming the window, nothing sent', async () => {
    const previous = await turns();
    const before = t.anthropicMock.requests.length;
    const err = (await t.client(t.targets.anthropic).responses.create({ model: 'claude-tiny', previous_response_id: previous, input: 'Last?' }).catch((e: unknown) => e)) as APIError;
    expect(err.status).toBe(400);
    expect((err.error as { code?: string }).code).toBe('context_length_exceeded');
    expect(err.message).toContain('300 tokens');
    expect(err.message).toContain('truncation');
    expect(t.anthropicMock.requests.length).toBe(before);
  });

  test('auto: items dropped from the middle; the first and the last are kept, and it fits', async () => {
    const previous = await turns();
    const answer = await t.client(t.targets.anthropic).responses.create({ model: 'claude-tiny', previous_response_id: previous, input: 'Last?', truncation: 'auto' });
    expect(answer.status).toBe('completed');
    expect(answer.truncation).toBe('auto');
    const messages = lastAnthropic().messages as Array<{ role: string; content: string }>;
    expect(messages[0]!.content.startsWith('0:')).toBe(true);
    expect(messages.at(-1)!.content).toBe('Last?');
    const all = JSON.stringify(messages);
    expect(all).not.toContain('1:word');
    expect(all.length / 4).toBeLessThan(300);
  });

  test('a single input larger than the window is a 400 even with auto', async () => {
    const err = (await t.client(t.targets.anthropic).responses.create({ model: 'claude-tiny', input: 'x'.repeat(4000), truncation: 'auto' }).catch((e: unknown) => e)) as APIError;
    expect(err.status).toBe(400);
    expect((err.error as { code?: string }).code).toBe('context_length_exceeded');
  });
});

describe('stored responses: retrieve, replay, input items, delete', () => {
  test('GET returns the object as answered; ?stream=true replays it as valid events; DELETE removes it', async () => {
    const c = t.client(t.targets.anthropic);
    const created = await c.responses.create({ model: MODEL, input: [{ role: 'user', content: [{ type: 'input_text', text: 'Look' }, { type: 'input_image', image_url: 'https://example.com/cat.png', detail: 'auto' }] }], metadata: { team: 'blue' } });
    const got = await c.responses.retrieve(created.id);
    const { output_text: _a, ...sent } = created as unknown as Record<string, unknown>;
    const { output_text: _b, ...stored } = got as unknown as Record<string, unknown>;
    expect(stored).toEqual(sent);
    expect(schemaErrors('responses.json#/$defs/Response', stored)).toEqual([]);
    expect(got.metadata).toEqual({ team: 'blue' });

    const replay = await t.call('GET', `/responses/${created.id}?stream=true`);
    expect(replay.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = sseEvents(await replay.text());
    for (const e of events) expect(schemaErrors('responses.json#/$defs/ResponseStreamEvent', e.data)).toEqual([]);
    expect(events.at(-1)!.data.response.output).toEqual(created.output);
    const after = await t.call('GET', `/responses/${created.id}?stream=true&starting_after=3`);
    expect(sseEvents(await after.text())[0]!.data.sequence_number).toBe(4);

    const items = await c.responses.inputItems.list(created.id);
    expect(items.data).toHaveLength(1);
    const part = (items.data[0] as unknown as { content: Array<Record<string, unknown>> }).content[1]!;
    expect(part.type).toBe('input_image');
    expect(part.image_url).toBeNull();
    const withImages = await (await t.call('GET', `/responses/${created.id}/input_items?include[]=message.input_image.image_url`)).json();
    expect(withImages.data[0].content[1].image_url).toBe('https://example.com/cat.png');
    expect(schemaErrors('responses.json#/$defs/InputItemList', withImages)).toEqual([]);

    const deleted = await c.responses.delete(created.id).then(() => null, (e: unknown) => e);
    expect(deleted).toBeNull();
    const gone = await t.call('GET', `/responses/${created.id}`);
    expect(gone.status).toBe(404);
    expect((await gone.json()).error.message).toContain(created.id);
    expect((await t.call('DELETE', `/responses/${created.id}`)).status).toBe(404);
  });

  test('the DELETE answer', async () => {
    const created = await t.client(t.targets.anthropic).responses.create({ model: MODEL, input: 'Hi' });
    const res = await t.call('DELETE', `/responses/${created.id}`);
    const body = await res.json();
    expect(body).toEqual({ id: created.id, object: 'response', deleted: true });
    expect(schemaErrors('responses.json#/$defs/ResponseDeleted', body)).toEqual([]);
  });

  test('input items: limit, order and after page through the items', async () => {
    const input = ['a', 'b', 'c', 'd', 'e'].map((text) => ({ role: 'user' as const, content: text }));
    const created = await t.client(t.targets.anthropic).responses.create({ model: MODEL, input });
    const page = async (q: string) => (await t.call('GET', `/responses/${created.id}/input_items?${q}`)).json();
    const first = await page('limit=2&order=asc');
    expect(first.data.map((i: any) => i.content[0].text)).toEqual(['a', 'b']);
    expect(first.has_more).toBe(true);
    const second = await page(`limit=2&order=asc&after=${first.last_id}`);
    expect(second.data.map((i: any) => i.content[0].text)).toEqual(['c', 'd']);
    const desc = await page('limit=10');
    expect(desc.data.map((i: any) => i.content[0].text)).toEqual(['e', 'd', 'c', 'b', 'a']);
    expect(desc.has_more).toBe(false);
    for (const [q, param] of [['limit=0', 'limit'], ['order=up', 'order'], ['after=nope', 'after'], ['include=bad.value', 'include'], ['colour=red', 'colour']]) {
      const res = await t.call('GET', `/responses/${created.id}/input_items?${q}`);
      expect(res.status, q).toBe(400);
      expect((await res.json()).error.param).toBe(param);
    }
  });

  test('store: false is answered but not stored', async () => {
    const created = await t.client(t.targets.anthropic).responses.create({ model: MODEL, input: 'Hi', store: false });
    expect((created as unknown as { store: boolean }).store).toBe(false);
    expect((await t.call('GET', `/responses/${created.id}`)).status).toBe(404);
  });

  test('a streamed answer is stored as its completed object', async () => {
    const res = await t.call('POST', '/responses', { body: { model: MODEL, input: 'Hi', stream: true }, headers: { 'x-gateway-config': JSON.stringify(t.targets.anthropic) } });
    const events = sseEvents(await res.text());
    const done = events.at(-1)!.data.response;
    const got = await (await t.call('GET', `/responses/${done.id}`)).json();
    expect(got).toEqual(done);
  });

  test('a response the gateway does not hold goes to the selected provider through the generic proxy', async () => {
    const res = await t.call('GET', '/responses/resp_only_at_openai', { headers: { 'x-gateway-config': JSON.stringify(t.targets.openai) } });
    expect(t.openaiMock.requests.at(-1)!.path).toBe('/v1/responses/resp_only_at_openai');
    expect(t.openaiMock.requests.at(-1)!.method).toBe('GET');
    expect(res.headers.get('x-gateway-provider')).toBe('openai');
  });
});

describe('ids the gateway made are answered by the gateway alone', () => {
  const selecting = (target: object) => ({ 'x-gateway-config': JSON.stringify(target) });
  const upstreamCalls = () => t.anthropicMock.requests.length + t.openaiMock.requests.length;
  const notFound = async (res: Response, id: string) => {
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: { message: expect.stringContaining(id), type: 'invalid_request_error', param: 'response_id', code: 'not_found' } });
  };

  test('after DELETE, GET, DELETE and input_items of a translated response are 404s in the envelope, with a provider selected, and no upstream is asked', async () => {
    const created = await t.client(t.targets.anthropic).responses.create({ model: MODEL, input: 'Hi' });
    expect(created.id).toMatch(/^resp_gw_[0-9a-f]{48}$/);
    expect((await t.call('DELETE', `/responses/${created.id}`, { headers: selecting(t.targets.anthropic) })).status).toBe(200);
    const before = upstreamCalls();
    for (const target of [t.targets.anthropic, t.targets.openai]) {
      for (const [method, suffix] of [['GET', ''], ['GET', '?stream=true'], ['DELETE', ''], ['GET', '/input_items']] as const) {
        await notFound(await t.call(method, `/responses/${created.id}${suffix}`, { headers: selecting(target) }), created.id);
      }
    }
    // The official SDK, which sends the config on every call, gets its NotFoundError.
    const err = (await t.client(t.targets.anthropic).responses.retrieve(created.id).catch((e: unknown) => e)) as APIError;
    expect(err.status).toBe(404);
    expect(upstreamCalls()).toBe(before);
  });

  test('an id of the gateway\'s shape it never stored is a 404 too, even with a native provider selected', async () => {
    const id = `resp_gw_${'0'.repeat(48)}`;
    const before = upstreamCalls();
    await notFound(await t.call('GET', `/responses/${id}`, { headers: selecting(t.targets.openai) }), id);
    await notFound(await t.call('GET', `/responses/${id}/input_items`, { headers: selecting(t.targets.anthropic) }), id);
    expect(upstreamCalls()).toBe(before);
  });

  test('a native response keeps the provider\'s id, and once the gateway\'s copy is deleted it is asked of the provider again', async () => {
    const created = await t.client(t.targets.openai).responses.create({ model: 'gpt-4o-mini', input: 'Hi' });
    expect(created.id).toMatch(/^resp_mock/);
    expect((await t.call('DELETE', `/responses/${created.id}`, { headers: selecting(t.targets.openai) })).status).toBe(200);
    await t.call('GET', `/responses/${created.id}`, { headers: selecting(t.targets.openai) });
    expect(t.openaiMock.requests.at(-1)).toMatchObject({ method: 'GET', path: `/v1/responses/${created.id}` });
  });

  test('previous_response_id naming a deleted id of the gateway is a 404 on a native target too, before any provider call', async () => {
    const first = await t.client(t.targets.anthropic).responses.create({ model: MODEL, input: 'Hi' });
    await t.call('DELETE', `/responses/${first.id}`);
    const before = upstreamCalls();
    const err = (await t.client(t.targets.openai).responses.create({ model: 'gpt-4o-mini', previous_response_id: first.id, input: 'Again' }).catch((e: unknown) => e)) as APIError;
    expect(err.status).toBe(404);
    expect((err.error as { code?: string }).code).toBe('previous_response_not_found');
    expect(upstreamCalls()).toBe(before);
  });
});

describe('request checks: a 400 in the envelope naming the field', () => {
  const pairs = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 'v']));
  test.each([
    ['17 metadata pairs', { metadata: pairs(17) }, 'metadata'],
    ['a metadata key of 65 characters', { metadata: { ['k'.repeat(65)]: 'v' } }, 'metadata'],
    ['a metadata value of 513 characters', { metadata: { k: 'v'.repeat(513) } }, 'metadata'],
    ['a metadata value that is not a string', { metadata: { k: 1 } }, 'metadata'],
    ['an unknown include', { include: ['message.everything'] }, 'include[0]'],
    ['a bad truncation', { truncation: 'sometimes' }, 'truncation'],
    ['temperature 3', { temperature: 3 }, 'temperature'],
    ['no model', { model: undefined }, 'model'],
    ['a hosted tool on a translated provider', { tools: [{ type: 'web_search' }] }, 'tools[0].type'],
    ['an item_reference on a translated provider', { input: [{ type: 'item_reference', id: 'msg_1' }] }, 'input[0]'],
  ])('%s', async (_name, fields, param) => {
    const res = await t.call('POST', '/responses', { body: { model: MODEL, input: 'Hi', ...fields }, headers: { 'x-gateway-config': JSON.stringify(t.targets.anthropic) } });
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body.error.param).toBe(param);
    expect(typeof body.error.message).toBe('string');
  });

  test('the limits themselves pass: 16 pairs, 64-character keys, 512-character values', async () => {
    const metadata = { ...pairs(15), ['k'.repeat(64)]: 'v'.repeat(512) };
    const created = await t.client(t.targets.anthropic).responses.create({ model: MODEL, input: 'Hi', metadata });
    expect(created.metadata).toEqual(metadata);
  });
});
