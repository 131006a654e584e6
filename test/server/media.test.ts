import { createHash } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { DEFAULT_CONFIG } from '../../server/default-config.js';
import { GATEWAY_KEY, startTestServer, storedLogEntry } from '../helpers/gateway.js';
import { IMAGE_EDIT_USAGE, IMAGE_GENERATION_USAGE, PADDED_PNG_B64, SPEECH_CHUNK_BYTES, SPEECH_CHUNKS, startMockMedia, TRANSCRIPT_TEXT, type MockMedia } from '../mocks/media-upstream.js';

/*
 * Images, audio and moderations through the bundled server (docs/media.md): native for OpenAI, Azure OpenAI and the
 * compatible providers that have them, with the request lifecycle (fallbacks, the log, the price), multipart uploads
 * within bounds, and the official openai SDK's helpers unchanged.
 */
const UPLOAD_LIMIT = 256 * 1024;
let gw: Awaited<ReturnType<typeof startTestServer>>;
let mock: MockMedia;

beforeAll(async () => {
  mock = await startMockMedia();
  const plugins = DEFAULT_CONFIG.plugins.map((p) => (p.name === 'media' ? { ...p, options: { maxUploadBytes: UPLOAD_LIMIT } } : p));
  gw = await startTestServer({ config: { ...DEFAULT_CONFIG, plugins } });
});
afterAll(async () => {
  await gw?.close();
  await mock?.close();
});

const openaiTarget = (extra: Record<string, unknown> = {}) => ({ provider: 'openai', api_key: 'sk-media-upstream', custom_host: mock.baseURL, ...extra });
const sdk = (config: unknown, traceId: string) =>
  new OpenAI({ apiKey: 'unused', baseURL: `${gw.url}/v1`, maxRetries: 0, defaultHeaders: { 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-config': JSON.stringify(config), 'x-gateway-trace-id': traceId } });
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const PNG = Buffer.from(PADDED_PNG_B64.slice(0, 4096), 'base64');

const logOf = (traceId: string) => storedLogEntry(gw.url, traceId);

describe('images', () => {
  test("generations through OpenAI with the SDK's images.generate: the answer as sent, usage from its end, priced", async () => {
    const image = await sdk(openaiTarget(), 'media-gen-1').images.generate({ model: 'gpt-image-1', prompt: 'A lighthouse at dusk' });
    expect(image.data![0]!.b64_json).toBe(PADDED_PNG_B64);
    expect(mock.requests.at(-1)).toMatchObject({ path: '/v1/images/generations', json: { model: 'gpt-image-1', prompt: 'A lighthouse at dusk' } });
    expect(mock.requests.at(-1)!.headers.authorization).toBe('Bearer sk-media-upstream');
    const entry = await logOf('media-gen-1');
    expect(entry).toMatchObject({ route: 'images.generations', provider: 'openai', model: 'gpt-image-1', status: 200 });
    expect([entry.prompt_tokens, entry.completion_tokens, entry.total_tokens]).toEqual([IMAGE_GENERATION_USAGE.input_tokens, IMAGE_GENERATION_USAGE.output_tokens, IMAGE_GENERATION_USAGE.total_tokens]);
    // gpt-image-1 per million: text in $5, image in $10, out $40.
    expect(entry.cost).toBeCloseTo((100 * 5 + 1000 * 40) / 1e6, 9);
  }, 30_000);

  test('generations through Together (an OpenAI-compatible provider that has them)', async () => {
    const image = await sdk({ provider: 'together-ai', api_key: 'tg-key', custom_host: mock.baseURL }, 'media-gen-2').images.generate({ model: 'black-forest-labs/FLUX.1-schnell', prompt: 'A fox' });
    expect(image.data!.length).toBe(1);
    expect(mock.requests.at(-1)).toMatchObject({ path: '/v1/images/generations', json: { model: 'black-forest-labs/FLUX.1-schnell' } });
    expect(mock.requests.at(-1)!.headers.authorization).toBe('Bearer tg-key');
  }, 30_000);

  test("edits (multipart) with the SDK's images.edit: the file reaches OpenAI byte for byte; priced with image-input tokens", async () => {
    const image = await sdk(openaiTarget(), 'media-edit-1').images.edit({ model: 'gpt-image-1', prompt: 'Add a moon', image: await toFile(PNG, 'in.png', { type: 'image/png' }) });
    expect(image.data!.length).toBe(1);
    const seen = mock.requests.at(-1)!;
    expect(seen.path).toBe('/v1/images/edits');
    expect(seen.fields).toMatchObject({ model: 'gpt-image-1', prompt: 'Add a moon' });
    expect(seen.files).toEqual([expect.objectContaining({ filename: 'in.png', bytes: PNG.length, sha256: sha(PNG) })]);
    const entry = await logOf('media-edit-1');
    expect(entry).toMatchObject({ route: 'images.edits', model: 'gpt-image-1', total_tokens: IMAGE_EDIT_USAGE.total_tokens });
    expect(entry.cost).toBeCloseTo((100 * 5 + 500 * 10 + 1000 * 40) / 1e6, 9);
  }, 30_000);

  test('edits through Azure OpenAI, at the deployment; a fallback after a 503 sends the same upload again', async () => {
    mock.failNext(503);
    const config = {
      strategy: { mode: 'fallback' },
      targets: [openaiTarget(), { provider: 'azure-openai', api_key: 'az-key', resource_name: 'res', custom_host: mock.origin, deployment_id: 'img', api_version: '2025-04-01-preview' }],
    };
    const image = await sdk(config, 'media-edit-2').images.edit({ model: 'gpt-image-1', prompt: 'Add a moon', image: await toFile(PNG, 'in.png', { type: 'image/png' }) });
    expect(image.data!.length).toBe(1);
    const [first, second] = mock.requests.slice(-2);
    expect(first!.path).toBe('/v1/images/edits');
    expect(second!.path).toBe('/openai/deployments/img/images/edits');
    expect(second!.query['api-version']).toBe('2025-04-01-preview');
    expect(second!.headers['api-key']).toBe('az-key');
    expect(second!.files[0]!.sha256).toBe(first!.files[0]!.sha256);
    const entry = await logOf('media-edit-2');
    expect(entry.attempts.map((a: { status: number }) => a.status)).toEqual([503, 200]);
  }, 30_000);
});

describe('audio', () => {
  test("transcriptions with the SDK: OpenAI (token usage, priced with audio rates) and Groq (its own base path; translations too)", async () => {
    const text = await sdk(openaiTarget(), 'media-stt-1').audio.transcriptions.create({ model: 'gpt-4o-transcribe', file: await toFile(Buffer.alloc(3000, 7), 'a.wav', { type: 'audio/wav' }) });
    expect(text.text).toBe(TRANSCRIPT_TEXT);
    expect(mock.requests.at(-1)).toMatchObject({ path: '/v1/audio/transcriptions', fields: { model: 'gpt-4o-transcribe' } });
    const entry = await logOf('media-stt-1');
    expect(entry).toMatchObject({ route: 'audio.transcriptions', model: 'gpt-4o-transcribe', prompt_tokens: 120, completion_tokens: 8 });
    // gpt-4o-transcribe per million: audio in $6, text out $10.
    expect(entry.cost).toBeCloseTo((120 * 6 + 8 * 10) / 1e6, 9);

    const groqClient = sdk({ provider: 'groq', api_key: 'gq-key', custom_host: `${mock.origin}/openai/v1` }, 'media-stt-2');
    const heard = await groqClient.audio.transcriptions.create({ model: 'whisper-large-v3-turbo', file: await toFile(Buffer.alloc(2500, 8), 'e.flac', { type: 'audio/flac' }) });
    expect(heard.text).toBe(TRANSCRIPT_TEXT);
    expect(mock.requests.at(-1)).toMatchObject({ path: '/openai/v1/audio/transcriptions', fields: { model: 'whisper-large-v3-turbo' } });
    expect(mock.requests.at(-1)!.headers.authorization).toBe('Bearer gq-key');
    const groq = await groqClient.audio.translations.create({ model: 'whisper-large-v3', file: await toFile(Buffer.alloc(2000, 9), 'b.mp3', { type: 'audio/mpeg' }) });
    expect(groq.text).toBe(TRANSCRIPT_TEXT);
    expect(mock.requests.at(-1)).toMatchObject({ path: '/openai/v1/audio/translations', fields: { model: 'whisper-large-v3' } });
  }, 30_000);

  test('a streamed transcription comes back as server-sent events, with its usage read from the last event', async () => {
    const stream = await sdk(openaiTarget(), 'media-stt-3').audio.transcriptions.create({ model: 'gpt-4o-mini-transcribe', file: await toFile(Buffer.alloc(1000, 1), 'c.wav'), stream: true });
    const deltas: string[] = [];
    for await (const event of stream) if (event.type === 'transcript.text.delta') deltas.push(event.delta);
    expect(deltas.join('')).toBe(TRANSCRIPT_TEXT);
    expect((await logOf('media-stt-3')).total_tokens).toBe(128);
  }, 30_000);

  test("speech with the SDK's audio.speech.create: the audio streamed back byte for byte, through OpenAI and Groq", async () => {
    for (const [config, path] of [
      [openaiTarget(), '/v1/audio/speech'],
      [{ provider: 'groq', api_key: 'gq-key', custom_host: `${mock.origin}/openai/v1` }, '/openai/v1/audio/speech'],
    ] as const) {
      const res = await sdk(config, `media-tts-${path.length}`).audio.speech.create({ model: 'gpt-4o-mini-tts', voice: 'alloy', input: 'Hello there' });
      expect(res.headers.get('content-type')).toBe('audio/mpeg');
      const bytes = Buffer.from(await res.arrayBuffer());
      expect(bytes.length).toBe(SPEECH_CHUNKS * SPEECH_CHUNK_BYTES);
      for (let i = 0; i < SPEECH_CHUNKS; i++) expect(bytes[i * SPEECH_CHUNK_BYTES]).toBe(i + 1);
      expect(mock.requests.at(-1)!.path).toBe(path);
    }
  }, 30_000);
});

test('the OpenAPI document lists the media and realtime routes', async () => {
  const doc = (await (await fetch(`${gw.url}/v1/openapi.json`, { headers: { 'x-gateway-api-key': GATEWAY_KEY } })).json()) as { paths: Record<string, Record<string, { tags?: string[]; requestBody?: { content: Record<string, unknown> } }>> };
  for (const path of ['/v1/images/generations', '/v1/images/edits', '/v1/audio/speech', '/v1/audio/transcriptions', '/v1/audio/translations', '/v1/moderations', '/v1/realtime/client_secrets']) {
    expect(doc.paths[path]?.post, path).toBeDefined();
  }
  expect(Object.keys(doc.paths['/v1/images/edits']!.post!.requestBody!.content)).toEqual(['multipart/form-data']);
  expect(doc.paths['/v1/realtime']?.get?.tags).toEqual(['Realtime']);
});

describe('models billed per image, second or character', () => {
  test('DALL·E 3 by the image (quality and size), whisper-1 by the second, tts-1 by the character', async () => {
    await sdk(openaiTarget(), 'media-unit-1').images.generate({ model: 'dall-e-3', prompt: 'A kite', size: '1792x1024', quality: 'hd', n: 1 });
    const image = await logOf('media-unit-1');
    expect(image).toMatchObject({ model: 'dall-e-3', cost_status: 'priced' });
    expect(image.cost).toBeCloseTo(0.12, 9);
    expect(image.price.components).toEqual([
      { name: 'input', tokens: 0, rate: 0, amount: 0 },
      { name: 'output', tokens: 0, rate: 0, amount: 0 },
      { name: 'image', tokens: 1, rate: 0.12, amount: 0.12 },
    ]);

    await sdk(openaiTarget(), 'media-unit-2').audio.transcriptions.create({ model: 'whisper-1', file: await toFile(Buffer.alloc(500, 2), 'd.wav') });
    // The answer said 3 seconds; whisper-1 is $0.006 a minute.
    expect((await logOf('media-unit-2')).cost).toBeCloseTo(3 * 0.0001, 9);

    const speech = await sdk(openaiTarget(), 'media-unit-3').audio.speech.create({ model: 'tts-1', voice: 'alloy', input: 'Hello there' });
    await speech.arrayBuffer();
    expect((await logOf('media-unit-3')).cost).toBeCloseTo((11 * 15) / 1e6, 12);

    // A size the price list has no price for is unpriced, not free.
    await sdk(openaiTarget(), 'media-unit-4').images.generate({ model: 'dall-e-3', prompt: 'A kite', size: '256x256' as never });
    expect(await logOf('media-unit-4')).toMatchObject({ cost: null, cost_status: 'unpriced' });
  }, 30_000);
});

describe('moderations and refusals', () => {
  test("moderations with the SDK's moderations.create", async () => {
    const result = await sdk(openaiTarget(), 'media-mod-1').moderations.create({ model: 'omni-moderation-latest', input: 'I will kill the process' });
    expect(result.results[0]!.flagged).toBe(true);
    expect((await logOf('media-mod-1')).route).toBe('moderations');
    // The cache serves it the second time, without a call.
    const cached = { ...openaiTarget(), cache: { mode: 'simple' } };
    const before = mock.requests.length;
    await sdk(cached, 'media-mod-2').moderations.create({ model: 'omni-moderation-latest', input: 'A calm sentence' });
    const again = await sdk(cached, 'media-mod-3').moderations.create({ model: 'omni-moderation-latest', input: 'A calm sentence' }).withResponse();
    expect(again.response.headers.get('x-gateway-cache-status')).toBe('HIT');
    expect(again.data.results[0]!.flagged).toBe(false);
    expect(mock.requests.length).toBe(before + 1);
  }, 30_000);

  test('a provider without the capability is a 400 naming those that have it; a bad body is a 400 naming the field', async () => {
    const refused = await fetch(`${gw.url}/v1/images/generations`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-config': JSON.stringify({ provider: 'anthropic', api_key: 'sk-ant', custom_host: mock.origin }) },
      body: JSON.stringify({ model: 'x', prompt: 'A cat' }),
    });
    expect(refused.status).toBe(400);
    const body = (await refused.json()) as { error: { message: string; code: string } };
    expect(body.error.code).toBe('route_not_supported');
    expect(body.error.message).toContain('Provider "anthropic" does not support images.generations; providers that do: openai');
    expect(body.error.message).toContain('together-ai');

    const bad = await fetch(`${gw.url}/v1/audio/speech`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-config': JSON.stringify(openaiTarget()) },
      body: JSON.stringify({ model: 'tts-1', voice: 'alloy' }),
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { param: string } }).error.param).toBe('input');

    const noModel = new FormData();
    noModel.set('file', new Blob([Buffer.alloc(10)]), 'a.wav');
    const missing = await fetch(`${gw.url}/v1/audio/transcriptions`, { method: 'POST', headers: { 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-config': JSON.stringify(openaiTarget()) }, body: noModel });
    expect(missing.status).toBe(400);
    expect(((await missing.json()) as { error: { param: string } }).error.param).toBe('model');
  }, 30_000);

  test('an upload over the limit is a 413 before any provider is called, and the gateway stops reading it', async () => {
    const before = mock.requests.length;
    // Declared too large: refused before a byte is read.
    const declared = await fetch(`${gw.url}/v1/audio/transcriptions`, {
      method: 'POST',
      headers: { 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-config': JSON.stringify(openaiTarget()), 'content-type': 'multipart/form-data; boundary=x', 'content-length': String(UPLOAD_LIMIT + 1) },
      body: Buffer.alloc(UPLOAD_LIMIT + 1),
    }).catch((err: Error) => err);
    if (!(declared instanceof Error)) expect(declared.status).toBe(413);

    // Chunked, with no length: the 413 comes once the limit is passed, while the client is still sending.
    const boundary = 'gwboundary';
    const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nwhisper-1\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.wav"\r\nContent-Type: audio/wav\r\n\r\n`);
    const answer = await new Promise<{ status: number; body: string; sentWhenAnswered: number }>((resolve, reject) => {
      const url = new URL(`${gw.url}/v1/audio/transcriptions`);
      let sent = 0;
      let stop = false;
      const req = httpRequest({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-config': JSON.stringify(openaiTarget()), 'content-type': `multipart/form-data; boundary=${boundary}` } }, (res) => {
        stop = true;
        const answeredAt = sent;
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, body, sentWhenAnswered: answeredAt }));
      });
      req.on('error', (err) => (stop ? undefined : reject(err)));
      req.write(head);
      const chunk = Buffer.alloc(16 * 1024, 3);
      const pump = () => {
        // Up to 16 times the limit, unless the answer comes first.
        while (!stop && sent < UPLOAD_LIMIT * 16) {
          sent += chunk.length;
          if (!req.write(chunk)) return void req.once('drain', pump);
        }
        if (!stop) req.end(`\r\n--${boundary}--\r\n`);
      };
      pump();
    });
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body).error.code).toBe('payload_too_large');
    expect(answer.sentWhenAnswered).toBeLessThan(UPLOAD_LIMIT * 16);
    expect(mock.requests.length).toBe(before);
  }, 30_000);
});
