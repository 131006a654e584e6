import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AWS_KEY_ID, AWS_SECRET, verifySigV4, type SignatureCheck } from './contract/bedrock.js';

export { AWS_KEY_ID, AWS_SECRET };

/** The Gemini API key the mock accepts (`x-goog-api-key`). */
export const GOOGLE_KEY = 'gk-images-test';
/** The Vertex AI access token the mock accepts (`authorization: Bearer`), passed as the target's `api_key`. */
export const VERTEX_TOKEN = 'ya29.images-test-token';
/** A prompt containing this makes the mock answer as when the provider's safety filters drop every image. */
export const BLOCKED_WORD = 'FORBIDDEN';
/** The message of Bedrock's `error` field for a blocked prompt. */
export const BEDROCK_BLOCKED_MESSAGE = 'This request has been blocked by our content filters.';

/** The base64 image the mock returns at `index` for a provider: distinct per image and per provider. */
export const imageB64 = (provider: 'google' | 'vertex' | 'bedrock', index: number): string => Buffer.from(`\x89PNG ${provider} image ${index}`).toString('base64');

export type ImageProvider = 'google' | 'vertex' | 'bedrock';

/** A request as the mock saw it, recorded before it is answered. */
export interface ImageProviderRequest {
  provider: ImageProvider | null;
  method: string;
  /** The path with its query, prefix included (`/google/v1beta/models/…:predict`). */
  path: string;
  headers: IncomingHttpHeaders;
  /** The body parsed as JSON, else null. */
  json: Record<string, any> | null;
  /** Bedrock only: the SigV4 check of the request, made here independently of the gateway's signer. */
  signature: SignatureCheck | null;
}

export interface MockImageProviders {
  /** `http://127.0.0.1:<port>`. */
  origin: string;
  /** The `custom_host` of each provider: `<origin>/google`, `<origin>/vertex`, `<origin>/bedrock`. */
  google: string;
  vertex: string;
  bedrock: string;
  requests: ImageProviderRequest[];
  /** The next authenticated request answers `status` with its provider's native error (Google's envelope; Bedrock's `{message}` and `x-amzn-errortype`). Calls queue up. */
  failNext(status: number, message?: string): void;
  close(): Promise<void>;
}

const GOOGLE_STATUS: Record<number, string> = { 400: 'INVALID_ARGUMENT', 401: 'UNAUTHENTICATED', 403: 'PERMISSION_DENIED', 404: 'NOT_FOUND', 429: 'RESOURCE_EXHAUSTED', 500: 'INTERNAL', 503: 'UNAVAILABLE' };
const BEDROCK_EXCEPTION: Record<number, string> = { 400: 'ValidationException', 403: 'AccessDeniedException', 404: 'ResourceNotFoundException', 429: 'ThrottlingException', 500: 'InternalServerException', 503: 'ServiceUnavailableException' };

const GOOGLE_PATH = /^\/google\/v1beta\/models\/([A-Za-z0-9._@-]+):predict$/;
const VERTEX_PATH = /^\/vertex\/v1\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/google\/models\/([A-Za-z0-9._@-]+):predict$/;
const BEDROCK_PATH = /^\/bedrock\/model\/([^/]+)\/invoke$/;

/**
 * A loopback mock of the three image APIs the gateway translates OpenAI's image generation to:
 * - the Gemini API's Imagen: `POST /google/v1beta/models/{model}:predict`, key in `x-goog-api-key`;
 * - Vertex AI's Imagen: `POST /vertex/v1/projects/{p}/locations/{r}/publishers/google/models/{model}:predict`, `authorization: Bearer`;
 * - Bedrock's InvokeModel for Nova Canvas / Titan Image: `POST /bedrock/model/{id}/invoke`, SigV4-signed (verified).
 *
 * Order of checks: unknown path → 404; bad credentials → 401 (Google) or 403 (Bedrock, InvalidSignatureException);
 * a queued `failNext`; a body the real API would refuse → 400 in its native shape; then the answer:
 * `{predictions: [{bytesBase64Encoded, mimeType}] × sampleCount}` (Imagen, `sampleCount` 1–4) or
 * `{images: [<base64>] × numberOfImages}` (Bedrock, 1–5, sides multiples of 16 in 320–4096). A prompt with
 * {@link BLOCKED_WORD} answers `{}` (Imagen) or `{images: [], error}` (Bedrock), as their filters do.
 * Every request is recorded first, whatever its answer.
 */
export async function startMockImageProviders(): Promise<MockImageProviders> {
  const requests: ImageProviderRequest[] = [];
  const failures: Array<{ status: number; message: string }> = [];

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      let json: Record<string, any> | null = null;
      try {
        const parsed: unknown = JSON.parse(raw.toString('utf8'));
        if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) json = parsed as Record<string, any>;
      } catch {
        /* not JSON */
      }
      const path = req.url ?? '/';
      const provider: ImageProvider | null = GOOGLE_PATH.test(path) ? 'google' : VERTEX_PATH.test(path) ? 'vertex' : BEDROCK_PATH.test(path) ? 'bedrock' : null;
      const signature = provider === 'bedrock' ? verifySigV4({ method: req.method!, url: path, headers: req.headers }, raw, AWS_SECRET) : null;
      requests.push({ provider, method: req.method!, path, headers: req.headers, json, signature });

      const send = (status: number, value: unknown, headers: Record<string, string> = {}) => {
        const text = JSON.stringify(value);
        res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)), ...headers });
        res.end(text);
      };
      const googleError = (status: number, message: string) => send(status, { error: { code: status, message, status: GOOGLE_STATUS[status] ?? 'UNKNOWN' } });
      const bedrockError = (status: number, message: string, name = BEDROCK_EXCEPTION[status] ?? 'InternalServerException') =>
        send(status, { message }, { 'x-amzn-requestid': 'req-img-err', 'x-amzn-errortype': `${name}:http://internal.amazon.com/coral/com.amazon.bedrock/` });

      if (provider === null || req.method !== 'POST') return send(404, { error: { code: 404, message: `No route for ${req.method} ${path}`, status: 'NOT_FOUND' } });

      if (provider === 'google' && req.headers['x-goog-api-key'] !== GOOGLE_KEY) return googleError(401, 'API key not valid. Please pass a valid API key.');
      if (provider === 'vertex' && req.headers.authorization !== `Bearer ${VERTEX_TOKEN}`) return googleError(401, 'Request had invalid authentication credentials.');
      if (provider === 'bedrock' && !signature!.ok) return bedrockError(403, `The request signature we calculated does not match (${signature!.reason}).`, 'InvalidSignatureException');

      const failure = failures.shift();
      if (failure !== undefined) return provider === 'bedrock' ? bedrockError(failure.status, failure.message) : googleError(failure.status, failure.message);

      if (provider === 'bedrock') {
        const config = json?.imageGenerationConfig;
        const text = json?.textToImageParams?.text;
        if (json?.taskType !== 'TEXT_IMAGE' || typeof text !== 'string' || text === '' || typeof config !== 'object' || config === null) return bedrockError(400, 'Malformed input request: taskType TEXT_IMAGE, textToImageParams.text and imageGenerationConfig are required.');
        const count = config.numberOfImages;
        if (!Number.isInteger(count) || count < 1 || count > 5) return bedrockError(400, 'Malformed input request: numberOfImages must be between 1 and 5.');
        for (const side of [config.width, config.height]) {
          if (!Number.isInteger(side) || side < 320 || side > 4096 || side % 16 !== 0) return bedrockError(400, 'Malformed input request: width and height must be multiples of 16 between 320 and 4096.');
        }
        if (config.quality !== undefined && config.quality !== 'standard' && config.quality !== 'premium') return bedrockError(400, 'Malformed input request: quality must be standard or premium.');
        if (text.includes(BLOCKED_WORD)) return send(200, { images: [], error: BEDROCK_BLOCKED_MESSAGE });
        return send(200, { images: Array.from({ length: count }, (_, i) => imageB64('bedrock', i)) }, { 'x-amzn-requestid': 'req-img-1' });
      }

      const prompt = json?.instances?.[0]?.prompt;
      const count = json?.parameters?.sampleCount;
      if (typeof prompt !== 'string' || prompt === '') return googleError(400, 'instances[0].prompt is required.');
      if (!Number.isInteger(count) || count < 1 || count > 4) return googleError(400, 'sampleCount must be between 1 and 4.');
      const ratio = json?.parameters?.aspectRatio;
      if (ratio !== undefined && !['1:1', '16:9', '9:16', '4:3', '3:4'].includes(ratio)) return googleError(400, `Unsupported aspect ratio ${String(ratio)}.`);
      if (prompt.includes(BLOCKED_WORD)) return send(200, {});
      return send(200, { predictions: Array.from({ length: count }, (_, i) => ({ mimeType: 'image/png', bytesBase64Encoded: imageB64(provider, i) })) });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    google: `${origin}/google`,
    vertex: `${origin}/vertex`,
    bedrock: `${origin}/bedrock`,
    requests,
    failNext(status, message = `The upstream failed with ${status}.`) {
      failures.push({ status, message });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
