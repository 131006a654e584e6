import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { GATEWAY_KEY, startTestServer, storedLogEntry } from '../helpers/gateway.js';
import {
  AWS_KEY_ID,
  AWS_SECRET,
  BEDROCK_BLOCKED_MESSAGE,
  BLOCKED_WORD,
  GOOGLE_KEY,
  imageB64,
  startMockImageProviders,
  VERTEX_TOKEN,
  type MockImageProviders,
} from '../mocks/image-providers.js';

/*
 * OpenAI's image generation (POST /v1/images/generations, docs/media.md) translated to the providers' own image
 * APIs, through the bundled server: Imagen on the Gemini API and on Vertex AI (`:predict`), Nova Canvas and Titan
 * Image Generator on Bedrock (InvokeModel, SigV4-signed). The mock speaks each native shape and records what it got.
 */
let gw: Awaited<ReturnType<typeof startTestServer>>;
let mock: MockImageProviders;

beforeAll(async () => {
  mock = await startMockImageProviders();
  gw = await startTestServer();
});
afterAll(async () => {
  await gw?.close();
  await mock?.close();
});

const PROJECT = 'proj-images';
const REGION = 'us-central1';
const googleTarget = () => ({ provider: 'google', api_key: GOOGLE_KEY, custom_host: mock.google });
const vertexTarget = () => ({ provider: 'vertex-ai', api_key: VERTEX_TOKEN, vertex_project_id: PROJECT, vertex_region: REGION, custom_host: mock.vertex });
const bedrockTarget = () => ({ provider: 'bedrock', aws_access_key_id: AWS_KEY_ID, aws_secret_access_key: AWS_SECRET, aws_region: 'us-east-1', custom_host: mock.bedrock });

async function generate(config: unknown, body: Record<string, unknown>, traceId?: string): Promise<{ status: number; json: any }> {
  const headers: Record<string, string> = { 'content-type': 'application/json', 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-config': JSON.stringify(config) };
  if (traceId !== undefined) headers['x-gateway-trace-id'] = traceId;
  const res = await fetch(`${gw.url}/v1/images/generations`, { method: 'POST', headers, body: JSON.stringify(body) });
  return { status: res.status, json: await res.json() };
}

/** An OpenAI image answer: `created` in Unix seconds (now), and the images as `b64_json` only. */
function expectImages(json: any, images: string[]): void {
  expect(Object.keys(json).sort()).toEqual(['created', 'data']);
  expect(Number.isInteger(json.created)).toBe(true);
  expect(Math.abs(json.created - Date.now() / 1000)).toBeLessThan(60);
  expect(json.data).toEqual(images.map((b64_json) => ({ b64_json })));
}

const googlePath = (model: string) => `/google/v1beta/models/${model}:predict`;
const vertexPath = (model: string) => `/vertex/v1/projects/${PROJECT}/locations/${REGION}/publishers/google/models/${model}:predict`;
const bedrockPath = (model: string) => `/bedrock/model/${encodeURIComponent(model)}/invoke`;

describe('Gemini API (Imagen)', () => {
  test('OpenAI body → `:predict` with instances and parameters; the predictions come back as b64_json; the log names the model', async () => {
    const { status, json } = await generate(googleTarget(), { model: 'imagen-4.0-fast-generate-001', prompt: 'A lighthouse at dusk', n: 2, size: '1792x1024' }, 'img-google-1');
    expect(status).toBe(200);
    expectImages(json, [imageB64('google', 0), imageB64('google', 1)]);
    const seen = mock.requests.at(-1)!;
    expect(seen.method).toBe('POST');
    expect(seen.path).toBe(googlePath('imagen-4.0-fast-generate-001'));
    expect(seen.headers['x-goog-api-key']).toBe(GOOGLE_KEY);
    expect(seen.headers['content-type']).toBe('application/json');
    expect(seen.json).toEqual({ instances: [{ prompt: 'A lighthouse at dusk' }], parameters: { sampleCount: 2, aspectRatio: '16:9' } });
    const entry = await storedLogEntry(gw.url, 'img-google-1');
    expect(entry).toMatchObject({ route: 'images.generations', provider: 'google', model: 'imagen-4.0-fast-generate-001', status: 200 });
  }, 30_000);

  test('without model, n or size: imagen-4.0-generate-001, one image (not Imagen\'s default of four), no aspect ratio', async () => {
    const { status, json } = await generate(googleTarget(), { prompt: 'A fox' });
    expect(status).toBe(200);
    expectImages(json, [imageB64('google', 0)]);
    expect(mock.requests.at(-1)!.path).toBe(googlePath('imagen-4.0-generate-001'));
    expect(mock.requests.at(-1)!.json).toEqual({ instances: [{ prompt: 'A fox' }], parameters: { sampleCount: 1 } });
  }, 30_000);

  test('size → the nearest Imagen aspect ratio; auto sends none; a size that is not WxH is a 400 naming it', async () => {
    const cases: Array<[string, string | undefined]> = [
      ['1024x1024', '1:1'],
      ['1792x1024', '16:9'],
      ['1024x1792', '9:16'],
      ['1536x1024', '4:3'],
      ['1024x1536', '3:4'],
      ['512x512', '1:1'],
      ['1920x1080', '16:9'],
      ['auto', undefined],
    ];
    for (const [size, ratio] of cases) {
      const { status } = await generate(googleTarget(), { prompt: 'A cat', size });
      expect(status, size).toBe(200);
      expect(mock.requests.at(-1)!.json!.parameters.aspectRatio, size).toBe(ratio);
    }
    const before = mock.requests.length;
    const bad = await generate(googleTarget(), { prompt: 'A cat', size: 'large' });
    expect(bad.status).toBe(400);
    expect(bad.json.error.param).toBe('size');
    expect(mock.requests.length).toBe(before);
  }, 30_000);

  test("through the official SDK's images.generate", async () => {
    const client = new OpenAI({
      apiKey: 'unused',
      baseURL: `${gw.url}/v1`,
      maxRetries: 0,
      defaultHeaders: { 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-config': JSON.stringify(googleTarget()) },
    });
    const image = await client.images.generate({ model: 'imagen-4.0-generate-001', prompt: 'A red bicycle', n: 3, size: '1024x1536' });
    expect(image.data!.map((d) => d.b64_json)).toEqual([imageB64('google', 0), imageB64('google', 1), imageB64('google', 2)]);
    expect(image.data![0]!.url).toBeUndefined();
    expect(typeof image.created).toBe('number');
    expect(mock.requests.at(-1)!.json).toEqual({ instances: [{ prompt: 'A red bicycle' }], parameters: { sampleCount: 3, aspectRatio: '3:4' } });
  }, 30_000);

  test("Google's error becomes the gateway envelope with the upstream status", async () => {
    mock.failNext(429, 'Quota exceeded for imagen requests.');
    const { status, json } = await generate(googleTarget(), { prompt: 'A cat' });
    expect(status).toBe(429);
    expect(json.error).toEqual({ message: 'Quota exceeded for imagen requests.', type: 'RESOURCE_EXHAUSTED', param: null, code: '429' });
  }, 30_000);

  test('an answer without images (the safety filters dropped them) is a 400 content_policy_violation', async () => {
    const { status, json } = await generate(googleTarget(), { prompt: `Something ${BLOCKED_WORD}` });
    expect(status).toBe(400);
    expect(json.error).toMatchObject({ type: 'invalid_request_error', code: 'content_policy_violation' });
    expect(json.error.message).toContain('google');
  }, 30_000);
});

describe('Vertex AI (Imagen)', () => {
  test("the Imagen body at the publisher model's :predict, with the target's token", async () => {
    const { status, json } = await generate(vertexTarget(), { model: 'imagen-3.0-generate-002', prompt: 'A harbour at night', n: 2, size: '1024x1536' }, 'img-vertex-1');
    expect(status).toBe(200);
    expectImages(json, [imageB64('vertex', 0), imageB64('vertex', 1)]);
    const seen = mock.requests.at(-1)!;
    expect(seen.path).toBe(vertexPath('imagen-3.0-generate-002'));
    expect(seen.headers.authorization).toBe(`Bearer ${VERTEX_TOKEN}`);
    expect(seen.json).toEqual({ instances: [{ prompt: 'A harbour at night' }], parameters: { sampleCount: 2, aspectRatio: '3:4' } });
    expect(await storedLogEntry(gw.url, 'img-vertex-1')).toMatchObject({ route: 'images.generations', provider: 'vertex-ai', model: 'imagen-3.0-generate-002', status: 200 });
  }, 30_000);

  test('without a model: imagen-4.0-generate-001; an error keeps its status', async () => {
    expect((await generate(vertexTarget(), { prompt: 'A boat', size: '1536x1024' })).status).toBe(200);
    expect(mock.requests.at(-1)!.path).toBe(vertexPath('imagen-4.0-generate-001'));
    expect(mock.requests.at(-1)!.json!.parameters).toEqual({ sampleCount: 1, aspectRatio: '4:3' });

    mock.failNext(403, 'Permission denied on resource project proj-images.');
    const { status, json } = await generate(vertexTarget(), { prompt: 'A boat' });
    expect(status).toBe(403);
    expect(json.error).toEqual({ message: 'Permission denied on resource project proj-images.', type: 'PERMISSION_DENIED', param: null, code: '403' });
  }, 30_000);
});

describe('Bedrock (Nova Canvas, Titan Image Generator)', () => {
  test('InvokeModel with the TEXT_IMAGE body, signed; size → width and height, quality hd → premium', async () => {
    const model = 'amazon.nova-canvas-v1:0';
    const { status, json } = await generate(bedrockTarget(), { model, prompt: 'A mountain lake', n: 2, size: '1536x1024', quality: 'hd' }, 'img-bedrock-1');
    expect(status).toBe(200);
    expectImages(json, [imageB64('bedrock', 0), imageB64('bedrock', 1)]);
    const seen = mock.requests.at(-1)!;
    expect(seen.method).toBe('POST');
    expect(seen.path).toBe(bedrockPath(model));
    expect(seen.path).toBe('/bedrock/model/amazon.nova-canvas-v1%3A0/invoke');
    expect(seen.signature).toMatchObject({ ok: true });
    expect(seen.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/us-east-1\/bedrock\/aws4_request, /);
    expect(seen.headers.accept).toBe('application/json');
    expect(seen.json).toEqual({
      taskType: 'TEXT_IMAGE',
      textToImageParams: { text: 'A mountain lake' },
      imageGenerationConfig: { numberOfImages: 2, width: 1536, height: 1024, quality: 'premium' },
    });
    expect(await storedLogEntry(gw.url, 'img-bedrock-1')).toMatchObject({ route: 'images.generations', provider: 'bedrock', model, status: 200 });
  }, 30_000);

  test('defaults: 1024x1024, one image, no quality; high → premium, other qualities → standard; cfg_scale → cfgScale', async () => {
    const model = 'amazon.titan-image-generator-v2:0';
    expect((await generate(bedrockTarget(), { model, prompt: 'A tree' })).status).toBe(200);
    expect(mock.requests.at(-1)!.path).toBe(bedrockPath(model));
    expect(mock.requests.at(-1)!.json!.imageGenerationConfig).toEqual({ numberOfImages: 1, width: 1024, height: 1024 });

    const cases: Array<[string, string]> = [
      ['high', 'premium'],
      ['hd', 'premium'],
      ['standard', 'standard'],
      ['medium', 'standard'],
      ['low', 'standard'],
      ['auto', 'standard'],
    ];
    for (const [quality, expected] of cases) {
      expect((await generate(bedrockTarget(), { model, prompt: 'A tree', quality, size: '1024x1792' })).status, quality).toBe(200);
      expect(mock.requests.at(-1)!.json!.imageGenerationConfig, quality).toEqual({ numberOfImages: 1, width: 1024, height: 1792, quality: expected });
    }

    expect((await generate(bedrockTarget(), { model: `us.${model}`, prompt: 'A tree', size: 'auto', cfg_scale: 6.5 })).status).toBe(200);
    expect(mock.requests.at(-1)!.json!.imageGenerationConfig).toEqual({ numberOfImages: 1, width: 1024, height: 1024, cfgScale: 6.5 });
  }, 30_000);

  test("Bedrock's exception becomes the envelope with its status; a filtered prompt is a 400 content_policy_violation", async () => {
    mock.failNext(429, 'Too many requests, please wait before trying again.');
    const throttled = await generate(bedrockTarget(), { model: 'amazon.nova-canvas-v1:0', prompt: 'A cat' });
    expect(throttled.status).toBe(429);
    expect(throttled.json.error).toEqual({ message: 'Too many requests, please wait before trying again.', type: 'rate_limit_error', param: null, code: 'ThrottlingException' });

    // The mock's own validation: Nova Canvas makes at most 5 images.
    const tooMany = await generate(bedrockTarget(), { model: 'amazon.nova-canvas-v1:0', prompt: 'A cat', n: 6 });
    expect(tooMany.status).toBe(400);
    expect(tooMany.json.error).toMatchObject({ type: 'invalid_request_error', code: 'ValidationException' });

    const blocked = await generate(bedrockTarget(), { model: 'amazon.nova-canvas-v1:0', prompt: `A ${BLOCKED_WORD} thing` });
    expect(blocked.status).toBe(400);
    expect(blocked.json.error).toMatchObject({ type: 'invalid_request_error', code: 'content_policy_violation' });
    expect(blocked.json.error.message).toContain(BEDROCK_BLOCKED_MESSAGE);
  }, 30_000);

  test('a model of another family, or none, is a 400 naming model, before any call', async () => {
    const before = mock.requests.length;
    const other = await generate(bedrockTarget(), { model: 'stability.sd3-5-large-v1:0', prompt: 'A cat' });
    expect(other.status).toBe(400);
    expect(other.json.error.param).toBe('model');
    expect(other.json.error.message).toContain('amazon.nova-canvas');
    const none = await generate(bedrockTarget(), { prompt: 'A cat' });
    expect(none.status).toBe(400);
    expect(none.json.error.param).toBe('model');
    expect(mock.requests.length).toBe(before);
  }, 30_000);
});

describe('all three', () => {
  test("response_format 'url' is a 400 naming the field, and nothing is sent", async () => {
    const before = mock.requests.length;
    for (const [config, model] of [
      [googleTarget(), 'imagen-4.0-generate-001'],
      [vertexTarget(), 'imagen-4.0-generate-001'],
      [bedrockTarget(), 'amazon.nova-canvas-v1:0'],
    ] as const) {
      const { status, json } = await generate(config, { model, prompt: 'A cat', response_format: 'url' });
      expect(status, config.provider).toBe(400);
      expect(json.error.param, config.provider).toBe('response_format');
      expect(json.error.message, config.provider).toContain('b64_json');
    }
    expect(mock.requests.length).toBe(before);
    // b64_json, asked for explicitly, is what they answer.
    expect((await generate(googleTarget(), { prompt: 'A cat', response_format: 'b64_json' })).status).toBe(200);
  }, 30_000);

  test('a fallback from Imagen (503) to Bedrock answers with the second provider, both attempts logged', async () => {
    mock.failNext(503, 'The service is currently unavailable.');
    const config = {
      strategy: { mode: 'fallback' },
      targets: [googleTarget(), { ...bedrockTarget(), override_params: { model: 'amazon.nova-canvas-v1:0' } }],
    };
    const { status, json } = await generate(config, { model: 'imagen-4.0-generate-001', prompt: 'A lighthouse', size: '1024x1792' }, 'img-fallback-1');
    expect(status).toBe(200);
    expectImages(json, [imageB64('bedrock', 0)]);
    const [first, second] = mock.requests.slice(-2);
    expect(first!.path).toBe(googlePath('imagen-4.0-generate-001'));
    expect(first!.json!.parameters).toEqual({ sampleCount: 1, aspectRatio: '9:16' });
    expect(second!.path).toBe(bedrockPath('amazon.nova-canvas-v1:0'));
    expect(second!.json!.imageGenerationConfig).toEqual({ numberOfImages: 1, width: 1024, height: 1792 });
    const entry = await storedLogEntry(gw.url, 'img-fallback-1');
    expect(entry.attempts.map((a: { provider: string; status: number }) => [a.provider, a.status])).toEqual([
      ['google', 503],
      ['bedrock', 200],
    ]);
  }, 30_000);
});
