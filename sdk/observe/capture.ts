import { serviceToken, STAGES, type GatewayResponse, type PluginAPI, type RequestContext, type Target, stateKey } from '../../core/index.js';

/** Where the captured response is kept on the request. */
const BODY_STATE = stateKey<CapturedResponse>('observe:response');

/** Default bytes of a response kept for the log (the assembled stream, the captured body, the answered model). */
export const DEFAULT_SCAN_LIMIT = 2 * 1024 * 1024;
/** Of a non-stream answer, at least this much is kept (enough to read its `model`). */
export const HEAD_BYTES = 4096;

/** The bytes of a response as they went out, kept up to a limit. */
export interface CapturedResponse {
  /** The answer is a server-sent event stream (`text/event-stream`). */
  sse: boolean;
  /** The answer is JSON (its content type names `json`). */
  json: boolean;
  /** The answer's content type, lower case; empty when it had none. */
  contentType: string;
  /** The bytes kept, in order; join them with {@link capturedBytes}. */
  chunks: Buffer[];
  /** Bytes kept. */
  kept: number;
  /** Bytes sent, kept or not. */
  total: number;
  /** The body ended (whole or broken off); until then more may come. */
  ended: boolean;
  /** The body broke off (client left, upstream reset) instead of ending whole. */
  error: boolean;
}

/** What the shared observer keeps, widened by each plugin that asks for it. */
export interface CaptureLimits {
  /** Bytes of a stream to keep (its text and usage are assembled from them). */
  scanLimit: number;
  /** Bytes of any other answer to keep (at least {@link HEAD_BYTES}). */
  bodyLimit: number;
}

/** The capture limits of one gateway, registered by the first plugin that captures. */
const CAPTURE = serviceToken<CaptureLimits>('gateway.observe.capture');

/**
 * Keeps the outgoing bytes of every response for the plugins that account for
 * requests (log store, metrics): a stream up to `scanLimit`, another answer up
 * to `bodyLimit` (at least its head). One afterResponse tap per gateway, at
 * `STAGES.afterResponse.OBSERVE` (after every tap that could change the bytes);
 * a second caller's limits widen the first's. Call from `apply`.
 */
export function captureResponses(api: PluginAPI, options: CaptureLimits): void {
  const existing = api.tryResolve(CAPTURE);
  if (existing !== undefined) {
    existing.scanLimit = Math.max(existing.scanLimit, options.scanLimit);
    existing.bodyLimit = Math.max(existing.bodyLimit, options.bodyLimit);
    return;
  }
  const current: CaptureLimits = { scanLimit: options.scanLimit, bodyLimit: Math.max(HEAD_BYTES, options.bodyLimit) };
  api.provide(CAPTURE, current);
  api.hooks.afterResponse.tap({ name: 'observe:capture', stage: STAGES.afterResponse.OBSERVE }, (response, ctx) => {
    observeResponse(ctx, response, current.bodyLimit, current.scanLimit);
    return response;
  });
}

/** The provider as the request named its leaf target: `@slug`, `@virtual-key` or a name; null when no leaf was called. */
export function requestedProvider(ctx: RequestContext): string | null {
  const target = ctx.leafTarget;
  if (target === null) return null;
  if (typeof target.provider === 'string' && target.provider !== '') return target.provider;
  if (typeof target.virtual_key === 'string' && target.virtual_key !== '') return `@${target.virtual_key}`;
  return null;
}

/**
 * An integration's `pricing_adjustments.multiplier`, which the control plane puts on the resolved
 * target as `pricing_multiplier`; a provider slug in the server config's `providers` may set
 * `pricing_multiplier` (or `pricing_adjustments.multiplier`) itself.
 */
export function pricingMultiplier(target: Target | null): number {
  if (target === null) return 1;
  const direct = target.pricing_multiplier;
  if (typeof direct === 'number' && Number.isFinite(direct) && direct >= 0) return direct;
  const adjustments = target.pricing_adjustments as { multiplier?: unknown } | undefined;
  const nested = adjustments?.multiplier;
  if (typeof nested === 'number' && Number.isFinite(nested) && nested >= 0) return nested;
  return 1;
}

function observeResponse(ctx: RequestContext, response: GatewayResponse, bodyLimit: number, scanLimit: number): void {
  if (response.body === null || ctx.has(BODY_STATE)) return;
  const type = response.headers['content-type'];
  const contentType = ((Array.isArray(type) ? type[0] : type) ?? '').toLowerCase();
  const sse = contentType.startsWith('text/event-stream');
  const json = contentType.includes('json');
  // A stream is kept up to the scan limit (its text and usage are assembled from it); other answers up to
  // the body limit (what body capture keeps, or just their head).
  const limit = sse ? scanLimit : bodyLimit;
  const captured: CapturedResponse = { sse, json, contentType, chunks: [], kept: 0, total: 0, ended: false, error: false };
  ctx.set(BODY_STATE, captured);
  const observer = {
    onChunk(chunk: Buffer) {
      captured.total += chunk.length;
      if (captured.kept >= limit) return;
      const room = limit - captured.kept;
      const part = chunk.length <= room ? chunk : chunk.subarray(0, room);
      captured.chunks.push(part);
      captured.kept += part.length;
    },
    onEnd(error: Error | null) {
      captured.ended = true;
      captured.error = error !== null;
    },
  };
  response.observers = response.observers === null ? [observer] : [...response.observers, observer];
}

/** The response bytes captured for this request, if an observer saw it. */
export function capturedResponse(ctx: RequestContext): CapturedResponse | null {
  return ctx.get(BODY_STATE) ?? null;
}

/** The captured bytes as one buffer (the first `kept` bytes of the answer). */
export function capturedBytes(c: CapturedResponse): Buffer {
  return c.chunks.length === 1 ? c.chunks[0]! : Buffer.concat(c.chunks, c.kept);
}

/** The `model` field of a JSON answer's head, without parsing the whole answer. */
export function modelOfJson(head: string): string | null {
  const m = /"model"\s*:\s*"((?:[^"\\]|\\.){1,256})"/.exec(head);
  return m === null ? null : m[1]!;
}
