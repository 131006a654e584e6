import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { deflateSync } from 'node:zlib';
import busboy from 'busboy';

/** A request as the mock saw it, recorded before it is answered. */
export interface MediaRequest {
  method: string;
  /** The full path, prefix included (`/v1/images/edits`, `/openai/deployments/img/images/generations`). */
  path: string;
  query: Record<string, string>;
  headers: Record<string, string | string[] | undefined>;
  /** The `content-type` header, '' when absent. */
  contentType: string;
  /** Length of the body as received. */
  bytes: number;
  /** The body when it parsed as a JSON object, else null. */
  json: Record<string, unknown> | null;
  /** Multipart text fields (a repeated name keeps its last value); empty for other bodies. */
  fields: Record<string, string>;
  /** Multipart file parts, in the order they came. */
  files: Array<{ field: string; filename: string; mimeType: string; bytes: number; sha256: string }>;
}

export interface MockMedia {
  /** `http://127.0.0.1:<port>/v1`. */
  baseURL: string;
  /** `http://127.0.0.1:<port>`, for Azure (`/openai/...`) and Groq (`/openai/v1`) style base paths. */
  origin: string;
  port: number;
  requests: MediaRequest[];
  /**
   * The next `times` (default 1) authenticated media requests answer `status` with an OpenAI error
   * envelope (and `headers`, if given). Calls queue up: `failNext(500); failNext(429)` fails the next
   * request with 500 and the one after with 429.
   */
  failNext(status: number, times?: number, headers?: Record<string, string>): void;
  close(): Promise<void>;
}

/** The answer of the transcription endpoints. */
export const TRANSCRIPT_TEXT = 'Hello from the audio.';
/** Usage reported for `gpt-4o*` transcription models (JSON and the SSE `transcript.text.done` event). */
export const TRANSCRIPTION_TOKEN_USAGE = { type: 'tokens', input_tokens: 120, input_token_details: { text_tokens: 0, audio_tokens: 120 }, output_tokens: 8, total_tokens: 128 };
/** Usage reported for `whisper-1`. */
export const TRANSCRIPTION_DURATION_USAGE = { type: 'duration', seconds: 3 };
/** Usage of `images/generations` for `gpt-image*` models. */
export const IMAGE_GENERATION_USAGE = { total_tokens: 1100, input_tokens: 100, output_tokens: 1000, input_tokens_details: { text_tokens: 100, image_tokens: 0 } };
/** Usage of `images/edits` for `gpt-image*` models. */
export const IMAGE_EDIT_USAGE = { total_tokens: 1600, input_tokens: 600, output_tokens: 1000, input_tokens_details: { text_tokens: 100, image_tokens: 500 } };
/** `audio/speech` sends SPEECH_CHUNKS chunks of SPEECH_CHUNK_BYTES, chunk i filled with the byte i+1, SPEECH_CHUNK_DELAY_MS apart. */
export const SPEECH_CHUNKS = 4;
export const SPEECH_CHUNK_BYTES = 16 * 1024;
export const SPEECH_CHUNK_DELAY_MS = 10;

type Route = 'images/generations' | 'images/edits' | 'audio/speech' | 'audio/transcriptions' | 'audio/translations' | 'moderations';

/** The media endpoints, matched as the end of the path after any prefix (`/v1`, `/openai/v1`, `/openai/deployments/<name>`). */
const ROUTE = /^(.*)\/(images\/generations|images\/edits|audio\/speech|audio\/transcriptions|audio\/translations|moderations)\/?$/;
const AZURE_DEPLOYMENT = /^\/openai\/deployments\/([^/]+)$/;

/**
 * A loopback mock of OpenAI's media endpoints (images, audio, moderations) speaking the real wire format,
 * reachable under any path prefix: `/v1` (OpenAI), `/openai/v1` (Azure v1 and Groq), and
 * `/openai/deployments/<name>` (Azure classic, which needs `?api-version=`, else a 404 as Azure answers).
 *
 * Order of checks: unknown path or method → 404; Azure classic without api-version → 404; no
 * `authorization: Bearer …` nor `api-key` → 401; a queued `failNext` status; then the endpoint itself
 * (400 for a body it cannot use). Every request is recorded first, whatever its answer.
 *
 * The model (from the body, else the Azure deployment name) picks the usage reported: `gpt-image*` for
 * images, `gpt-4o*` (tokens) and `whisper-1` (duration) for audio. Streaming a transcription
 * (`stream=true`) works on `audio/transcriptions` for models other than `whisper-1`, which, as at OpenAI,
 * ignores it.
 */
export async function startMockMedia(): Promise<MockMedia> {
  const requests: MediaRequest[] = [];
  const failures: Array<{ status: number; headers: Record<string, string> }> = [];

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      handle(req, res, Buffer.concat(chunks)).catch((err: unknown) => {
        if (!res.headersSent) sendError(res, 500, `Mock failure: ${String(err)}`, 'server_error', null);
        else res.destroy();
      });
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse, body: Buffer) {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const query = Object.fromEntries(url.searchParams);
    const contentType = String(req.headers['content-type'] ?? '');
    const seen: MediaRequest = { method: req.method!, path: url.pathname, query, headers: { ...req.headers }, contentType, bytes: body.length, json: null, fields: {}, files: [] };

    let parseProblem: string | null = null;
    if (/^application\/json/i.test(contentType) || (contentType === '' && body.length > 0 && body[0] === 0x7b)) {
      try {
        const value: unknown = JSON.parse(body.toString('utf8'));
        if (value !== null && typeof value === 'object' && !Array.isArray(value)) seen.json = value as Record<string, unknown>;
        else parseProblem = 'The JSON body of your request must be an object.';
      } catch {
        parseProblem = 'We could not parse the JSON body of your request.';
      }
    } else if (/^multipart\/form-data/i.test(contentType)) {
      const parsed = await parseMultipart(req.headers, body);
      seen.fields = parsed.fields;
      seen.files = parsed.files;
      parseProblem = parsed.error;
    }
    requests.push(seen);

    const match = ROUTE.exec(url.pathname);
    if (req.method !== 'POST' || match === null) return sendError(res, 404, `Invalid URL (${req.method} ${url.pathname})`, 'invalid_request_error', null);
    const prefix = match[1]!;
    const route = match[2] as Route;
    const deployment = AZURE_DEPLOYMENT.exec(prefix)?.[1];
    if (deployment !== undefined && !query['api-version']) return sendJson(res, { error: { code: '404', message: 'Resource not found' } }, 404);

    if (!authenticated(req.headers)) {
      return sendError(res, 401, 'Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.', 'invalid_request_error', 'invalid_api_key');
    }
    const failure = failures.shift();
    if (failure !== undefined) return sendFailure(res, failure.status, failure.headers);

    if (parseProblem !== null) return sendError(res, 400, parseProblem, 'invalid_request_error', null);
    const multipart = route === 'images/edits' || route === 'audio/transcriptions' || route === 'audio/translations';
    if (multipart && !/^multipart\/form-data/i.test(contentType)) {
      return sendError(res, 400, `Invalid Content-Type header (${contentType || 'none'}), expected multipart/form-data.`, 'invalid_request_error', null);
    }
    if (!multipart && seen.json === null) return sendError(res, 400, 'We could not parse the JSON body of your request. (Expected a JSON object with content-type application/json.)', 'invalid_request_error', null);

    switch (route) {
      case 'images/generations':
        return generations(res, seen.json!, deployment);
      case 'images/edits':
        return edits(res, seen, deployment);
      case 'audio/speech':
        return speech(res, seen.json!);
      case 'audio/transcriptions':
      case 'audio/translations':
        return transcription(res, seen, route === 'audio/transcriptions', deployment);
      case 'moderations':
        return moderation(res, seen.json!);
    }
  }

  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const origin = `http://127.0.0.1:${port}`;
  return {
    baseURL: `${origin}/v1`,
    origin,
    port,
    requests,
    failNext(status: number, times = 1, headers: Record<string, string> = {}) {
      for (let i = 0; i < times; i++) failures.push({ status, headers });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function authenticated(headers: IncomingHttpHeaders): boolean {
  const auth = headers.authorization;
  if (typeof auth === 'string' && /^Bearer\s+\S+/i.test(auth)) return true;
  const key = headers['api-key'];
  return typeof key === 'string' && key.trim() !== '';
}

// ---------------------------------------------------------------------------------------------- images

function generations(res: ServerResponse, body: Record<string, unknown>, deployment: string | undefined) {
  if (typeof body.prompt !== 'string' || body.prompt === '') return missing(res, 'prompt');
  const model = modelOf(body.model, deployment, 'dall-e-2');
  sendImages(res, model, count(body.n), IMAGE_GENERATION_USAGE, body.prompt);
}

function edits(res: ServerResponse, seen: MediaRequest, deployment: string | undefined) {
  if (!seen.files.some((f) => f.field === 'image' || f.field === 'image[]')) return missing(res, 'image');
  const prompt = seen.fields.prompt;
  if (prompt === undefined || prompt === '') return missing(res, 'prompt');
  const model = modelOf(seen.fields.model, deployment, 'dall-e-2');
  sendImages(res, model, count(seen.fields.n), IMAGE_EDIT_USAGE, null);
}

/** `{created, data, usage?}`, usage last (after ~200 KB of image per item) and only for `gpt-image*` models. */
function sendImages(res: ServerResponse, model: string, n: number, usage: object, prompt: string | null) {
  const item = model === 'dall-e-3' && prompt !== null ? { b64_json: PADDED_PNG_B64, revised_prompt: prompt } : { b64_json: PADDED_PNG_B64 };
  const answer: Record<string, unknown> = { created: Math.floor(Date.now() / 1000), data: Array.from({ length: n }, () => item) };
  if (model.startsWith('gpt-image')) answer.usage = usage;
  sendJson(res, answer);
}

function count(value: unknown): number {
  const n = Number(value ?? 1);
  return Number.isInteger(n) && n >= 1 ? Math.min(n, 10) : 1;
}

// ----------------------------------------------------------------------------------------------- audio

const AUDIO_TYPES: Record<string, string> = { mp3: 'audio/mpeg', opus: 'audio/ogg', aac: 'audio/aac', flac: 'audio/flac', wav: 'audio/wav', pcm: 'audio/pcm' };

function speech(res: ServerResponse, body: Record<string, unknown>) {
  if (typeof body.model !== 'string' || body.model === '') return missing(res, 'model');
  if (typeof body.input !== 'string' || body.input === '') return missing(res, 'input');
  if (typeof body.voice !== 'string' || body.voice === '') return missing(res, 'voice');
  const type = AUDIO_TYPES[String(body.response_format ?? 'mp3')] ?? 'audio/mpeg';
  res.writeHead(200, { 'content-type': type, 'transfer-encoding': 'chunked', 'x-request-id': 'req_mock_media' });
  let i = 0;
  let timer: NodeJS.Timeout | undefined;
  res.on('close', () => clearTimeout(timer));
  const next = () => {
    if (res.destroyed) return;
    res.write(Buffer.alloc(SPEECH_CHUNK_BYTES, i + 1));
    i++;
    if (i < SPEECH_CHUNKS) timer = setTimeout(next, SPEECH_CHUNK_DELAY_MS);
    else res.end();
  };
  next();
}

function transcription(res: ServerResponse, seen: MediaRequest, isTranscription: boolean, deployment: string | undefined) {
  if (!seen.files.some((f) => f.field === 'file')) return missing(res, 'file');
  const model = modelOf(seen.fields.model, deployment, '');
  if (model === '') return missing(res, 'model');
  const usage = model.startsWith('gpt-4o') ? TRANSCRIPTION_TOKEN_USAGE : model === 'whisper-1' ? TRANSCRIPTION_DURATION_USAGE : undefined;
  const format = seen.fields.response_format ?? 'json';
  if (isTranscription && seen.fields.stream === 'true' && model !== 'whisper-1') return streamTranscript(res, usage);
  switch (format) {
    case 'text':
      return sendText(res, 'text/plain; charset=utf-8', `${TRANSCRIPT_TEXT}\n`);
    case 'srt':
      return sendText(res, 'text/plain; charset=utf-8', `1\n00:00:00,000 --> 00:00:03,000\n${TRANSCRIPT_TEXT}\n\n`);
    case 'vtt':
      return sendText(res, 'text/plain; charset=utf-8', `WEBVTT\n\n00:00:00.000 --> 00:00:03.000\n${TRANSCRIPT_TEXT}\n\n`);
    case 'verbose_json':
      return sendJson(res, {
        task: isTranscription ? 'transcribe' : 'translate',
        language: 'english',
        duration: 3,
        text: TRANSCRIPT_TEXT,
        segments: [{ id: 0, seek: 0, start: 0, end: 3, text: ` ${TRANSCRIPT_TEXT}`, tokens: [50364, 2425, 490, 264, 6278, 13], temperature: 0, avg_logprob: -0.2, compression_ratio: 0.8, no_speech_prob: 0.01 }],
        ...(usage ? { usage } : {}),
      });
    default:
      return sendJson(res, usage ? { text: TRANSCRIPT_TEXT, usage } : { text: TRANSCRIPT_TEXT });
  }
}

/** One `transcript.text.delta` per word (the deltas concatenate to the text), then `transcript.text.done`; no `[DONE]`, as at OpenAI. */
function streamTranscript(res: ServerResponse, usage: object | undefined) {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-request-id': 'req_mock_media' });
  const words = TRANSCRIPT_TEXT.split(' ');
  words.forEach((word, i) => res.write(`data: ${JSON.stringify({ type: 'transcript.text.delta', delta: i === 0 ? word : ` ${word}` })}\n\n`));
  res.end(`data: ${JSON.stringify({ type: 'transcript.text.done', text: TRANSCRIPT_TEXT, ...(usage ? { usage } : {}) })}\n\n`);
}

// ----------------------------------------------------------------------------------------- moderations

const CATEGORIES = ['harassment', 'harassment/threatening', 'hate', 'hate/threatening', 'illicit', 'illicit/violent', 'self-harm', 'self-harm/instructions', 'self-harm/intent', 'sexual', 'sexual/minors', 'violence', 'violence/graphic'];

function moderation(res: ServerResponse, body: Record<string, unknown>) {
  const input = body.input;
  if (input === undefined || input === null || input === '') return missing(res, 'input');
  // An array of strings is moderated item by item; a string, or an array of multimodal parts, as one input.
  const texts: string[] = typeof input === 'string' ? [input] : Array.isArray(input) && input.every((x) => typeof x === 'string') ? (input as string[]) : [JSON.stringify(input)];
  const results = texts.map((text) => {
    const violent = /kill/i.test(text);
    const categories = Object.fromEntries(CATEGORIES.map((c) => [c, c === 'violence' && violent]));
    const category_scores = Object.fromEntries(CATEGORIES.map((c) => [c, c === 'violence' && violent ? 0.9 : 0.01]));
    const category_applied_input_types = Object.fromEntries(CATEGORIES.map((c) => [c, ['text']]));
    return { flagged: violent, categories, category_scores, category_applied_input_types };
  });
  sendJson(res, { id: `modr-${randomBytes(12).toString('hex')}`, model: typeof body.model === 'string' && body.model !== '' ? body.model : 'omni-moderation-latest', results });
}

// ----------------------------------------------------------------------------------------------- parts

function modelOf(value: unknown, deployment: string | undefined, fallback: string): string {
  if (typeof value === 'string' && value !== '') return value;
  return deployment ?? fallback;
}

async function parseMultipart(headers: IncomingHttpHeaders, body: Buffer): Promise<{ fields: Record<string, string>; files: MediaRequest['files']; error: string | null }> {
  const fields: Record<string, string> = {};
  const files: MediaRequest['files'] = [];
  let bb: busboy.Busboy;
  try {
    bb = busboy({ headers, defParamCharset: 'utf8' });
  } catch (err) {
    return { fields, files, error: `Invalid multipart body: ${(err as Error).message}` };
  }
  const ended: Array<Promise<void>> = [];
  const error = await new Promise<string | null>((resolve) => {
    bb.on('field', (name, value) => {
      fields[name] = value;
    });
    bb.on('file', (field, stream, info) => {
      const entry = { field, filename: info.filename ?? '', mimeType: info.mimeType, bytes: 0, sha256: '' };
      files.push(entry);
      const hash = createHash('sha256');
      ended.push(
        new Promise<void>((done) => {
          stream.on('data', (c: Buffer) => {
            hash.update(c);
            entry.bytes += c.length;
          });
          stream.on('close', () => {
            entry.sha256 = hash.digest('hex');
            done();
          });
        }),
      );
    });
    bb.on('error', (err: Error) => resolve(`Invalid multipart body: ${err.message}`));
    bb.on('close', () => resolve(null));
    bb.end(body);
  });
  if (error === null) await Promise.all(ended);
  return { fields, files, error };
}

function sendJson(res: ServerResponse, value: unknown, status = 200, headers: Record<string, string> = {}) {
  const text = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'x-request-id': 'req_mock_media', ...headers });
  res.end(text);
}

function sendText(res: ServerResponse, type: string, text: string) {
  res.writeHead(200, { 'content-type': type, 'content-length': Buffer.byteLength(text), 'x-request-id': 'req_mock_media' });
  res.end(text);
}

function sendError(res: ServerResponse, status: number, message: string, type: string, code: string | null, param: string | null = null, headers: Record<string, string> = {}) {
  sendJson(res, { error: { message, type, param, code } }, status, headers);
}

function missing(res: ServerResponse, param: string) {
  sendError(res, 400, `Missing required parameter: '${param}'.`, 'invalid_request_error', 'missing_required_parameter', param);
}

function sendFailure(res: ServerResponse, status: number, headers: Record<string, string>) {
  const type = status === 429 ? 'requests' : status === 401 ? 'invalid_request_error' : status >= 500 ? 'server_error' : 'invalid_request_error';
  const code = status === 429 ? 'rate_limit_exceeded' : status === 401 ? 'invalid_api_key' : null;
  sendError(res, status, `Mock failure ${status}`, type, code, null, headers);
}

// ----------------------------------------------------------------------------------------- a tiny PNG

function paddedPng(b64Length: number): Buffer {
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(1, 0); // width
  ihdr.writeUInt32BE(1, 4); // height
  ihdr[8] = 8; // bit depth
  ihdr[9] = 6; // RGBA
  const idat = deflateSync(Buffer.from([0, 0x4a, 0x90, 0xe2, 0xff])); // filter byte, one pixel
  const head = Buffer.concat([signature, pngChunk('IHDR', ihdr)]);
  const tail = Buffer.concat([pngChunk('IDAT', idat), pngChunk('IEND', Buffer.alloc(0))]);
  const keyword = Buffer.from('Comment\0', 'latin1');
  const target = Math.floor(b64Length / 4) * 3;
  const padding = Math.max(0, target - head.length - tail.length - 12 - keyword.length);
  return Buffer.concat([head, pngChunk('tEXt', Buffer.concat([keyword, Buffer.alloc(padding, 0x78)])), tail]);
}

function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const typed = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(typed));
  return Buffer.concat([length, typed, crc]);
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(buf: Buffer): number {
  let c = 0xffffffff;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** About 200 KB of base64: a valid 1x1 PNG, padded with a `tEXt` chunk so usage sits far from the head. (Last: it needs CRC_TABLE.) */
export const PADDED_PNG_B64 = paddedPng(200 * 1024).toString('base64');
