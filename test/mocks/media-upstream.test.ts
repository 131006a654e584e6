import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { IMAGE_EDIT_USAGE, IMAGE_GENERATION_USAGE, startMockMedia, TRANSCRIPTION_DURATION_USAGE, TRANSCRIPTION_TOKEN_USAGE, type MockMedia } from './media-upstream.js';

/** The mock's own contract, checked with bare fetch, so a gateway test can trust what it relays. */

type Json = Record<string, any>;

const AUTH = { authorization: 'Bearer sk-test' };
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

let mock: MockMedia;
beforeAll(async () => {
  mock = await startMockMedia();
});
afterAll(async () => {
  await mock.close();
});

function postJson(url: string, body: unknown, headers: Record<string, string> = AUTH) {
  return fetch(url, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

function postForm(url: string, form: FormData, headers: Record<string, string> = AUTH) {
  return fetch(url, { method: 'POST', headers, body: form });
}

const last = () => mock.requests[mock.requests.length - 1]!;

describe('media upstream mock', () => {
  test('listens on loopback with /v1 as base', () => {
    expect(mock.baseURL).toBe(`http://127.0.0.1:${mock.port}/v1`);
    expect(mock.origin).toBe(`http://127.0.0.1:${mock.port}`);
  });

  test('images/generations: ~200 KB of valid PNG, usage last for gpt-image', async () => {
    const res = await postJson(`${mock.baseURL}/images/generations`, { model: 'gpt-image-1', prompt: 'a cat' });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text.length).toBeGreaterThan(190_000);
    expect(text.length).toBeLessThan(220_000);
    expect(text.indexOf('"usage"')).toBeGreaterThan(text.length - 300);
    const body = JSON.parse(text) as Json;
    expect(body.data).toHaveLength(1);
    expect(Buffer.from(body.data[0].b64_json, 'base64').subarray(0, 8)).toEqual(PNG_SIGNATURE);
    expect(body.usage).toEqual(IMAGE_GENERATION_USAGE);
    expect(last().json).toMatchObject({ model: 'gpt-image-1', prompt: 'a cat' });

    const dalle = (await (await postJson(`${mock.baseURL}/images/generations`, { model: 'dall-e-3', prompt: 'a dog', n: 2 })).json()) as Json;
    expect(dalle.data).toHaveLength(2);
    expect(dalle.usage).toBeUndefined();
  });

  test('images/edits: multipart parsed and recorded, edit usage', async () => {
    const image = Buffer.from('not really a png, but bytes');
    const form = new FormData();
    form.append('model', 'gpt-image-1');
    form.append('prompt', 'add a hat');
    form.append('image[]', new Blob([image], { type: 'image/png' }), 'a.png');
    form.append('image[]', new Blob([Buffer.alloc(1000, 7)], { type: 'image/png' }), 'b.png');
    form.append('mask', new Blob([Buffer.alloc(10)], { type: 'image/png' }), 'mask.png');
    const res = await postForm(`${mock.baseURL}/images/edits`, form);
    expect(res.status).toBe(200);
    const body = (await res.json()) as Json;
    expect(body.usage).toEqual(IMAGE_EDIT_USAGE);
    const seen = last();
    expect(seen.fields).toEqual({ model: 'gpt-image-1', prompt: 'add a hat' });
    expect(seen.files.map((f) => [f.field, f.filename, f.mimeType, f.bytes])).toEqual([
      ['image[]', 'a.png', 'image/png', image.length],
      ['image[]', 'b.png', 'image/png', 1000],
      ['mask', 'mask.png', 'image/png', 10],
    ]);
    expect(seen.files[0]!.sha256).toBe(createHash('sha256').update(image).digest('hex'));
    expect(seen.bytes).toBeGreaterThan(1000);

    const noImage = new FormData();
    noImage.append('prompt', 'add a hat');
    const refused = await postForm(`${mock.baseURL}/images/edits`, noImage);
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as Json).error).toMatchObject({ param: 'image', type: 'invalid_request_error' });
  });

  test('audio/speech: 64 KiB in 4 chunked pieces', async () => {
    const res = await postJson(`${mock.baseURL}/audio/speech`, { model: 'gpt-4o-mini-tts', input: 'Hello', voice: 'alloy' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('audio/mpeg');
    expect(res.headers.get('transfer-encoding')).toBe('chunked');
    const reader = res.body!.getReader();
    const parts: Uint8Array[] = [];
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      parts.push(value);
    }
    expect(parts.length).toBeGreaterThan(1);
    const all = Buffer.concat(parts);
    expect(all.length).toBe(64 * 1024);
    for (let i = 0; i < 4; i++) expect(all[i * 16384]).toBe(i + 1);
    expect(all[65535]).toBe(4);
  });

  test('audio/transcriptions: JSON, text and SSE; translations', async () => {
    const form = (fields: Record<string, string>) => {
      const f = new FormData();
      f.append('file', new Blob([Buffer.alloc(2048, 1)], { type: 'audio/wav' }), 'speech.wav');
      for (const [k, v] of Object.entries(fields)) f.append(k, v);
      return f;
    };
    const json = (await (await postForm(`${mock.baseURL}/audio/transcriptions`, form({ model: 'gpt-4o-transcribe' }))).json()) as Json;
    expect(json).toEqual({ text: 'Hello from the audio.', usage: TRANSCRIPTION_TOKEN_USAGE });
    expect(last().files[0]).toMatchObject({ field: 'file', filename: 'speech.wav', bytes: 2048 });

    const whisper = (await (await postForm(`${mock.baseURL}/audio/translations`, form({ model: 'whisper-1' }))).json()) as Json;
    expect(whisper).toEqual({ text: 'Hello from the audio.', usage: TRANSCRIPTION_DURATION_USAGE });

    const text = await postForm(`${mock.baseURL}/audio/transcriptions`, form({ model: 'whisper-1', response_format: 'text' }));
    expect(text.headers.get('content-type')).toMatch(/^text\/plain/);
    expect((await text.text()).trim()).toBe('Hello from the audio.');

    const sse = await postForm(`${mock.baseURL}/audio/transcriptions`, form({ model: 'gpt-4o-mini-transcribe', stream: 'true' }));
    expect(sse.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = (await sse.text())
      .split('\n\n')
      .filter((e) => e.startsWith('data: '))
      .map((e) => JSON.parse(e.slice(6)) as Json);
    const deltas = events.filter((e) => e.type === 'transcript.text.delta');
    expect(deltas).toHaveLength(4);
    expect(deltas.map((e) => e.delta).join('')).toBe('Hello from the audio.');
    expect(events.at(-1)).toEqual({ type: 'transcript.text.done', text: 'Hello from the audio.', usage: TRANSCRIPTION_TOKEN_USAGE });

    const noFile = new FormData();
    noFile.append('model', 'whisper-1');
    expect((await postForm(`${mock.baseURL}/audio/transcriptions`, noFile)).status).toBe(400);
  });

  test('moderations: flags "kill" as violence', async () => {
    const res = (await (await postJson(`${mock.baseURL}/moderations`, { input: 'I will kill the process' })).json()) as Json;
    expect(res.id).toMatch(/^modr-/);
    expect(res.model).toBe('omni-moderation-latest');
    expect(res.results[0]).toMatchObject({ flagged: true, categories: { violence: true }, category_scores: { violence: 0.9 } });
    const calm = (await (await postJson(`${mock.baseURL}/moderations`, { input: 'hello', model: 'text-moderation-latest' })).json()) as Json;
    expect(calm.model).toBe('text-moderation-latest');
    expect(calm.results[0]).toMatchObject({ flagged: false, categories: { violence: false }, category_scores: { violence: 0.01 } });
  });

  test('401 without credentials, recorded anyway', async () => {
    const before = mock.requests.length;
    const res = await postJson(`${mock.baseURL}/moderations`, { input: 'hi' }, {});
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ error: { message: expect.any(String), type: 'invalid_request_error', param: null, code: 'invalid_api_key' } });
    expect(mock.requests.length).toBe(before + 1);
  });

  test('failNext fails the next n requests, then answers normally', async () => {
    mock.failNext(503, 2);
    const url = `${mock.baseURL}/moderations`;
    const first = await postJson(url, { input: 'hi' });
    expect(first.status).toBe(503);
    expect(((await first.json()) as Json).error.type).toBe('server_error');
    expect((await postJson(url, { input: 'hi' })).status).toBe(503);
    expect((await postJson(url, { input: 'hi' })).status).toBe(200);
  });

  test('Azure classic and v1 paths, api-key auth; unknown paths 404', async () => {
    const classic = await postJson(`${mock.origin}/openai/deployments/img/images/generations?api-version=2025-04-01-preview`, { model: 'gpt-image-1', prompt: 'a cat' }, { 'api-key': 'azure-key' });
    expect(classic.status).toBe(200);
    expect(((await classic.json()) as Json).usage).toEqual(IMAGE_GENERATION_USAGE);
    expect(last()).toMatchObject({ path: '/openai/deployments/img/images/generations', query: { 'api-version': '2025-04-01-preview' } });
    expect(last().headers['api-key']).toBe('azure-key');

    const noVersion = await postJson(`${mock.origin}/openai/deployments/img/images/generations`, { prompt: 'a cat' }, { 'api-key': 'k' });
    expect(noVersion.status).toBe(404);

    const v1 = await postJson(`${mock.origin}/openai/v1/moderations`, { input: 'hi' }, { 'api-key': 'k' });
    expect(v1.status).toBe(200);

    const unknown = await postJson(`${mock.baseURL}/chat/completions`, { model: 'x' });
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as Json).error.message).toBe('Invalid URL (POST /v1/chat/completions)');
  });
});
