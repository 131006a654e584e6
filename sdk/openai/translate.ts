import type { Readable } from 'node:stream';
import { forwardableHeaders, GatewayError, mapChunks, UpstreamBody, type GatewayResponse, type RequestContext, type UpstreamResponse, type Usage } from '../../core/index.js';
import { CACHE_WRITE_1H, type OpenAIUsage } from './chunks.js';

/** Largest non-stream upstream answer read for translation. */
const MAX_TRANSLATED_BYTES = 32 * 1024 * 1024;

/** Upstream headers that describe the body we replace; the rest (rate limits, request ids, retry hints) pass on. */
const BODY_HEADERS = new Set(['content-type', 'content-length', 'content-encoding', 'transfer-encoding', 'etag']);

/** Reads a whole upstream body (or another stream) as text; a body over the limit is a 502. */
export async function readText(body: UpstreamBody | Readable, limit = MAX_TRANSLATED_BYTES): Promise<string> {
  if (body instanceof UpstreamBody) return body.text(limit);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      body.destroy();
      throw new GatewayError('upstream_invalid_response', `The upstream answer is larger than ${limit} bytes.`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size).toString('utf8');
}

/** Parses an upstream JSON answer; anything else is a 502 (never the raw bytes in the message). */
export function readJson(upstream: UpstreamResponse): Promise<unknown> {
  return upstream.body.json(MAX_TRANSLATED_BYTES);
}

/** Converts OpenAI usage to the gateway's, for the log and for pricing (every billed component it carries). */
export function toGatewayUsage(u: OpenAIUsage): Usage {
  const usage: Usage = { prompt_tokens: u.prompt_tokens, completion_tokens: u.completion_tokens, total_tokens: u.total_tokens };
  // Objects only: an upstream may send `"prompt_tokens_details": null`.
  const input = u.prompt_tokens_details;
  if (typeof input === 'object' && input !== null) {
    usage.cached_tokens = input.cached_tokens;
    if (input.cache_write_tokens !== undefined) usage.cache_write_tokens = input.cache_write_tokens;
    if (input.audio_tokens !== undefined) usage.input_audio_tokens = input.audio_tokens;
    if (input.image_tokens !== undefined) usage.input_image_tokens = input.image_tokens;
  }
  const output = u.completion_tokens_details;
  if (typeof output === 'object' && output !== null) {
    usage.reasoning_tokens = output.reasoning_tokens;
    if (output.audio_tokens !== undefined) usage.output_audio_tokens = output.audio_tokens;
  }
  const hour = u[CACHE_WRITE_1H];
  if (hour !== undefined) usage.cache_write_1h_tokens = hour;
  return usage;
}

function headersFrom(upstream: UpstreamResponse, contentType: string): Record<string, string | string[]> {
  const headers = forwardableHeaders(upstream.headers, BODY_HEADERS);
  headers['content-type'] = contentType;
  return headers;
}

/** A translated JSON answer, keeping the upstream's status and informative headers. */
export function jsonAnswer(upstream: UpstreamResponse, status: number, value: unknown): GatewayResponse {
  return { status, headers: headersFrom(upstream, 'application/json'), body: JSON.stringify(value), observers: null };
}

/** The fields of an OpenAI error envelope. */
export interface ErrorFields {
  /** The error's message, for people. */
  message: string;
  /** The error's type, e.g. `invalid_request_error`. */
  type: string;
  /** A code programs may match on; null or absent when there is none. */
  code?: string | null;
  /** The request parameter at fault; null or absent when none. */
  param?: string | null;
}

/**
 * An upstream error in the gateway envelope: the upstream status (or `status`
 * when the provider's needs mapping, e.g. 529 → 503), its message and type
 * kept, and its retry hints passed on (`retry-after` also as `retry-after-ms`).
 */
export function errorAnswer(upstream: UpstreamResponse, fields: ErrorFields, status = upstream.status): GatewayResponse {
  const response = jsonAnswer(upstream, status, { error: { message: fields.message, type: fields.type, param: fields.param ?? null, code: fields.code ?? null } });
  const after = response.headers['retry-after'];
  if (typeof after === 'string' && response.headers['retry-after-ms'] === undefined && /^\d+(\.\d+)?$/.test(after.trim())) {
    response.headers['retry-after-ms'] = String(Math.round(Number(after) * 1000));
  }
  return response;
}

/**
 * OpenAI's error `type` for an HTTP status, for a provider whose error body
 * names none: 401, 403, 404, 408 and 429 have their own, 5xx is `server_error`,
 * anything else `invalid_request_error`.
 */
export function openAIErrorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 408) return 'timeout_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

/** Turns native stream bytes into OpenAI SSE text, chunk by chunk. */
export interface StreamTranslator {
  /** Text to send for this upstream chunk ('' for none). */
  push(chunk: Buffer): string;
  /** Text to send when the upstream body ended cleanly (the tail, usage, `[DONE]`). */
  end(): string;
}

/**
 * A streamed answer translated as it arrives: each upstream chunk goes through
 * the translator and out at once, so nothing is held back or buffered whole;
 * backpressure and cancellation reach the upstream ({@link mapChunks}).
 */
export function streamAnswer(upstream: UpstreamResponse, translator: StreamTranslator): GatewayResponse {
  const body = mapChunks(upstream.body, translator);
  const headers = headersFrom(upstream, 'text/event-stream; charset=utf-8');
  headers['cache-control'] = 'no-cache';
  return { status: 200, headers, body, observers: null };
}

/** Whether the client asked for a usage chunk (or the front door that translated the request did, for itself). */
export function wantsUsage(ctx: RequestContext): boolean {
  const options = (ctx.upstreamBody ?? ctx.body)?.stream_options as { include_usage?: unknown } | undefined;
  return options?.include_usage === true;
}
