import { createHash, createHmac } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { encodeMessage } from '../../../plugins/providers/bedrock/eventstream.js';
import { anthropicEvents, anthropicMessage } from './anthropic.js';
import type { ContractMock, Scenario, SeenNativeRequest } from '../../../server/testing/index.js';
import { startRecordingServer } from '../../../server/testing/index.js';

/**
 * A Bedrock Runtime (and Agent Runtime rerank) mock, per shared/providers/bedrock.md:
 * - every request must carry a valid SigV4 signature for the test credentials,
 *   re-computed here independently of the gateway's signer (node:crypto, steps 3–6
 *   of §2b): a bad one is 403 InvalidSignatureException, a missing one 403
 *   MissingAuthenticationTokenException; a Bedrock API key (Bearer) is accepted too;
 * - Converse answers JSON, ConverseStream answers real binary event-stream frames
 *   built with @smithy/eventstream-codec (with `p` padding), one frame split across
 *   two TCP writes;
 * - errors are `{"message"}` with `x-amzn-ErrorType`;
 * - `corrupt` makes the next stream send a frame with a bad message CRC (or a bad
 *   length prefix) after the first text delta.
 */

export const AWS_KEY_ID = 'AKIDEXAMPLE';
export const AWS_SECRET = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY';
export const BEDROCK_API_KEY = 'bedrock-api-key-test';

const EXCEPTION: Record<number, string> = {
  400: 'ValidationException',
  401: 'UnrecognizedClientException',
  403: 'AccessDeniedException',
  404: 'ResourceNotFoundException',
  408: 'ModelTimeoutException',
  424: 'ModelErrorException',
  429: 'ThrottlingException',
  500: 'InternalServerException',
  503: 'ServiceUnavailableException',
};

const STOP: Record<string, string> = { stop: 'end_turn', length: 'max_tokens', content_filter: 'guardrail_intervened' };

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data).digest();
/** RFC 3986 encoding, as SigV4 wants (upper-case hex, unreserved kept). */
const rfc3986 = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

export interface SignatureCheck {
  ok: boolean;
  reason?: string;
  signedHeaders?: string[];
}

/** Verifies the SigV4 signature of a received request (non-S3 rules: the path is encoded again). */
export function verifySigV4(req: { method: string; url: string; headers: IncomingMessage['headers'] }, body: Buffer, secret: string): SignatureCheck {
  const auth = req.headers.authorization;
  if (typeof auth !== 'string' || !auth.startsWith('AWS4-HMAC-SHA256 ')) return { ok: false, reason: 'missing' };
  const m = /Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})/.exec(auth);
  if (m === null) return { ok: false, reason: 'malformed' };
  const [, , date, region, service, signedList, signature] = m;
  const signed = signedList!.split(';');
  const amzDate = req.headers['x-amz-date'];
  if (typeof amzDate !== 'string' || !amzDate.startsWith(date!)) return { ok: false, reason: 'date' };
  if (!signed.includes('host') || !signed.includes('x-amz-date')) return { ok: false, reason: 'headers' };
  const [rawPath, rawQuery = ''] = req.url.split('?');
  const canonicalURI = rawPath!.split('/').map(rfc3986).join('/');
  const query = rawQuery === '' ? '' : rawQuery
    .split('&')
    .map((kv) => kv.split('=').map((s) => rfc3986(decodeURIComponent(s))) as [string, string?])
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : (a[1] ?? '') < (b[1] ?? '') ? -1 : 1))
    .map(([k, v]) => `${k}=${v ?? ''}`)
    .join('&');
  const headerLines = signed.map((name) => {
    const value = req.headers[name];
    return `${name}:${String(Array.isArray(value) ? value.join(',') : (value ?? '')).trim().replace(/\s+/g, ' ')}\n`;
  });
  const payloadHash = sha256(body);
  const declared = req.headers['x-amz-content-sha256'];
  if (declared !== undefined && declared !== payloadHash) return { ok: false, reason: 'payload hash' };
  const canonical = [req.method, canonicalURI, query, headerLines.join(''), signed.join(';'), payloadHash].join('\n');
  const scope = `${date}/${region}/${service}/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonical)].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${secret}`, date!), region!), service!), 'aws4_request');
  const expected = createHmac('sha256', key).update(toSign).digest('hex');
  return expected === signature ? { ok: true, signedHeaders: signed } : { ok: false, reason: 'signature' };
}

export type Corruption = 'crc' | 'length' | 'prelude-crc' | 'truncated' | null;

export interface BedrockContractMock extends ContractMock {
  /** Raw bodies by request, for signature checks in tests. */
  rawBodies: Buffer[];
  /** The result of the last signature check. */
  lastSignature: SignatureCheck | null;
  /** Damages the next stream after its first text delta. */
  corrupt(kind: Corruption): void;
}

function sendError(res: ServerResponse, status: number, name: string, message: string, headers: Record<string, string> = {}): void {
  const text = JSON.stringify({ message });
  res.writeHead(status, { 'content-type': 'application/json', 'x-amzn-requestid': 'req-err-1', 'x-amzn-errortype': `${name}:http://internal.amazon.com/coral/com.amazon.bedrock/`, ...headers });
  res.end(text);
}

const frame = (eventType: string, payload: unknown) =>
  Buffer.from(encodeMessage({ ':event-type': eventType, ':content-type': 'application/json', ':message-type': 'event' }, JSON.stringify(payload)));
const exceptionFrame = (type: string, message: string) =>
  Buffer.from(encodeMessage({ ':exception-type': type, ':content-type': 'application/json', ':message-type': 'exception' }, JSON.stringify({ message })));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Writes frames as separate TCP writes; a frame in `split` is cut in two writes with a pause between. */
async function writeFrames(res: ServerResponse, frames: Buffer[], split: Set<number>): Promise<void> {
  res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream', 'x-amzn-requestid': 'req-stream-1' });
  for (let i = 0; i < frames.length; i++) {
    const f = frames[i]!;
    if (split.has(i)) {
      const cut = Math.floor(f.length / 2);
      res.write(f.subarray(0, 7));
      await sleep(5);
      res.write(f.subarray(7, cut));
      await sleep(5);
      res.write(f.subarray(cut));
    } else res.write(f);
    await sleep(1);
  }
  res.end();
}

export async function startBedrockContractMock(): Promise<BedrockContractMock> {
  let scenario: Scenario = { kind: 'text' };
  let corruption: Corruption = null;
  const rawBodies: Buffer[] = [];
  const mock: Partial<BedrockContractMock> = { lastSignature: null };

  const rec = await startRecordingServer((req, res, seen: SeenNativeRequest) => {
    void handle(req, res, seen).catch(() => res.destroy());
  });

  async function handle(req: IncomingMessage, res: ServerResponse, seen: SeenNativeRequest): Promise<void> {
    const raw = rawBodies.at(-1) ?? Buffer.alloc(0);
    if (req.headers.authorization === `Bearer ${BEDROCK_API_KEY}`) {
      mock.lastSignature = null;
    } else {
      const check = verifySigV4({ method: seen.method, url: seen.path, headers: req.headers }, raw, AWS_SECRET);
      mock.lastSignature = check;
      if (!check.ok) {
        return check.reason === 'missing'
          ? sendError(res, 403, 'MissingAuthenticationTokenException', 'Missing Authentication Token')
          : sendError(res, 403, 'InvalidSignatureException', `The request signature we calculated does not match the signature you provided (${check.reason}).`);
      }
    }
    const body = seen.body as Record<string, any>;
    if (seen.method === 'POST' && seen.path === '/rerank') return rerankAnswer(res, body);
    const m = /^\/model\/([^/]+)\/(converse|converse-stream|invoke|invoke-with-response-stream)$/.exec(seen.path);
    if (seen.method !== 'POST' || m === null) return sendError(res, 404, 'UnknownOperationException', 'Not found');
    const modelId = decodeURIComponent(m[1]!);
    if (m[2] === 'invoke' && !/anthropic\./.test(modelId)) return embedAnswer(res, modelId, body);
    if (m[2] === 'invoke' || m[2] === 'invoke-with-response-stream') return invokeClaude(res, modelId, body, m[2] === 'invoke-with-response-stream');
    if (!Array.isArray(body?.messages) || body.messages.length === 0) return sendError(res, 400, 'ValidationException', 'messages: must not be empty');
    if ('model' in body || 'stream' in body) return sendError(res, 400, 'ValidationException', 'Unexpected field in Converse body');

    const s = scenario;
    if (s.kind === 'error') {
      const name = EXCEPTION[s.status] ?? 'InternalServerException';
      return sendError(res, s.status, name, `Mock error ${s.status}`, s.status === 429 ? { 'retry-after': '7' } : {});
    }
    const stopReason = s.kind === 'tool_call' ? 'tool_use' : STOP[s.kind === 'text' ? (s.finish ?? 'stop') : 'stop']!;
    const usage = { inputTokens: 6, outputTokens: 2, totalTokens: 11, cacheReadInputTokens: 3, cacheWriteInputTokens: 0 };

    if (m[2] === 'converse') {
      const content =
        s.kind === 'tool_call' ? [{ toolUse: { toolUseId: 'tooluse_Wm2Kq8sTQ4yJ3mV1oZ9xfA', name: 'get_weather', input: { city: 'Paris' } } }] : [{ text: 'Hello!' }];
      const text = JSON.stringify({ output: { message: { role: 'assistant', content } }, stopReason, usage, metrics: { latencyMs: 12 } });
      res.writeHead(200, { 'content-type': 'application/json', 'x-amzn-requestid': 'req-converse-1' });
      return void res.end(text);
    }

    const frames: Buffer[] = [frame('messageStart', { p: 'abcdefghijklmnopqrstuvwxyz', role: 'assistant' })];
    const split = new Set<number>();
    if (s.kind === 'stream_error') {
      frames.push(frame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'Hel' }, p: 'abcd' }));
      frames.push(exceptionFrame('modelStreamErrorException', 'Mock stream failure'));
      return writeFrames(res, frames, split);
    }
    if (s.kind === 'tool_call') {
      frames.push(
        frame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'Let me check.' }, p: 'ab' }),
        frame('contentBlockStop', { contentBlockIndex: 0 }),
        frame('contentBlockStart', { contentBlockIndex: 1, start: { toolUse: { toolUseId: 'tooluse_Wm2Kq8sTQ4yJ3mV1oZ9xfA', name: 'get_weather' } }, p: 'abcd' }),
        frame('contentBlockDelta', { contentBlockIndex: 1, delta: { toolUse: { input: '{"city": "Pa' } }, p: 'abcdefgh' }),
        frame('contentBlockDelta', { contentBlockIndex: 1, delta: { toolUse: { input: 'ris"}' } }, p: 'ab' }),
        frame('contentBlockStop', { contentBlockIndex: 1 }),
      );
      split.add(4);
    } else {
      frames.push(frame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'Hello' }, p: 'abcd' }));
      if (corruption !== null) {
        const kind = corruption;
        corruption = null;
        const next = frame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: '!' }, p: 'a' });
        if (kind === 'crc') next[next.length - 1]! ^= 0xff;
        else if (kind === 'prelude-crc') next[9]! ^= 0xff;
        else if (kind === 'length') next.writeUInt32BE(5, 0);
        frames.push(kind === 'truncated' ? next.subarray(0, next.length - 6) : next);
        if (kind !== 'truncated') frames.push(frame('contentBlockStop', { contentBlockIndex: 0 }), frame('messageStop', { stopReason }), frame('metadata', { usage, metrics: { latencyMs: 12 } }));
        return writeFrames(res, frames, split);
      }
      frames.push(frame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: '!' }, p: 'abcdefghijklmnopq' }), frame('contentBlockStop', { contentBlockIndex: 0 }));
      split.add(2);
    }
    frames.push(frame('messageStop', { stopReason }), frame('metadata', { usage, metrics: { latencyMs: 12 } }));
    return writeFrames(res, frames, split);
  }

  /**
   * Claude through InvokeModel (bedrock.md §7): Anthropic's body without `model` and `stream`, with
   * `anthropic_version: "bedrock-2023-05-31"`; the answer is Anthropic's message, or its events, each
   * in an event-stream `chunk` frame as `{"bytes": base64}`. Errors are Bedrock's.
   */
  async function invokeClaude(res: ServerResponse, modelId: string, body: Record<string, any>, stream: boolean): Promise<void> {
    if (body?.anthropic_version !== 'bedrock-2023-05-31') return sendError(res, 400, 'ValidationException', 'anthropic_version: bedrock-2023-05-31 is required');
    if ('model' in body || 'stream' in body) return sendError(res, 400, 'ValidationException', 'Unexpected field in the InvokeModel body: model, stream');
    if (typeof body.max_tokens !== 'number') return sendError(res, 400, 'ValidationException', 'max_tokens: required');
    const s = scenario;
    if (s.kind === 'error') {
      const name = EXCEPTION[s.status] ?? 'InternalServerException';
      return sendError(res, s.status, name, `Mock error ${s.status}`, s.status === 429 ? { 'retry-after': '7' } : {});
    }
    if (!stream) {
      res.writeHead(200, { 'content-type': 'application/json', 'x-amzn-requestid': 'req-invoke-1' });
      return void res.end(JSON.stringify(anthropicMessage(s, modelId)));
    }
    const chunk = (event: object) => frame('chunk', { bytes: Buffer.from(JSON.stringify(event)).toString('base64') });
    const events = anthropicEvents(s, modelId);
    const frames = events.filter((e) => e.type !== 'error').map(chunk);
    if (s.kind === 'stream_error') frames.push(exceptionFrame('modelStreamErrorException', 'Mock stream failure'));
    return writeFrames(res, frames, new Set([1]));
  }

  function embedAnswer(res: ServerResponse, modelId: string, body: Record<string, any>): void {
    res.setHeader('x-amzn-requestid', 'req-embed-1');
    if (/amazon\.titan-embed/.test(modelId)) {
      if (typeof body.inputText !== 'string') return sendError(res, 400, 'ValidationException', 'inputText is required');
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ embedding: [0.25, -0.5, 1], inputTextTokenCount: 4 }));
    }
    if (/cohere\.embed/.test(modelId)) {
      if (!Array.isArray(body.texts) || typeof body.input_type !== 'string') return sendError(res, 400, 'ValidationException', 'texts and input_type are required');
      res.writeHead(200, { 'content-type': 'application/json', 'x-amzn-bedrock-input-token-count': String(body.texts.length * 2) });
      return void res.end(JSON.stringify({ id: 'emb-1', embeddings: body.texts.map((_: unknown, i: number) => [i, 0.5]), texts: body.texts, response_type: 'embeddings_floats' }));
    }
    sendError(res, 400, 'ValidationException', 'The provided model does not support embeddings');
  }

  function rerankAnswer(res: ServerResponse, body: Record<string, any>): void {
    const sources = body?.sources;
    const arn = body?.rerankingConfiguration?.bedrockRerankingConfiguration?.modelConfiguration?.modelArn;
    if (!Array.isArray(sources) || typeof arn !== 'string' || body.queries?.[0]?.textQuery?.text === undefined) return sendError(res, 400, 'ValidationException', 'Malformed rerank request');
    if (sources.length > 3) return sendError(res, 429, 'ThrottlingException', 'Mock rerank throttled', { 'retry-after': '2' });
    // Scores by document length, answered in index order (the gateway sorts).
    const results = sources.map((s: any, index: number) => ({ index, relevanceScore: Math.min(1, s.inlineDocumentSource.textDocument.text.length / 100) }));
    const n = body.rerankingConfiguration.bedrockRerankingConfiguration.numberOfResults;
    const top = typeof n === 'number' ? [...results].sort((a, b) => b.relevanceScore - a.relevanceScore).slice(0, n) : results;
    res.writeHead(200, { 'content-type': 'application/json', 'x-amzn-requestid': 'req-rerank-1' });
    res.end(JSON.stringify({ results: top }));
  }

  // Keep the raw bytes (the recording server parses JSON): record them as they arrive.
  rec.server.prependListener('request', (req: IncomingMessage) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => rawBodies.push(Buffer.concat(chunks)));
  });

  return Object.assign(mock, {
    baseURL: rec.url,
    requests: rec.requests,
    rawBodies,
    next(s: Scenario) {
      scenario = s;
    },
    corrupt(kind: Corruption) {
      corruption = kind;
    },
    close: rec.close,
  }) as BedrockContractMock;
}
