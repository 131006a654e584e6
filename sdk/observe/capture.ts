import { serviceToken, STAGES, type GatewayResponse, type PluginAPI, type RequestContext, type Target } from '../../core/index.js';
import { SSEParser } from '../sse.js';

/** Where the captured response sits in `ctx.state`. */
const BODY_STATE = 'observe:response';

/** Default bytes of a response kept for the log (the assembled stream, the captured body, the answered model). */
export const DEFAULT_SCAN_LIMIT = 2 * 1024 * 1024;
/** Of a non-stream answer, at least this much is kept (enough to read its `model`). */
export const HEAD_BYTES = 4096;

/** The bytes of a response as they went out, kept up to a limit. */
export interface CapturedResponse {
  sse: boolean;
  json: boolean;
  contentType: string;
  chunks: Buffer[];
  /** Bytes kept. */
  kept: number;
  /** Bytes sent, kept or not. */
  total: number;
  ended: boolean;
  error: boolean;
}

/** What the shared observer keeps, widened by each plugin that asks for it. */
interface CaptureLimits {
  scanLimit: number;
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
  if (response.body === null || ctx.state.has(BODY_STATE)) return;
  const type = response.headers['content-type'];
  const contentType = ((Array.isArray(type) ? type[0] : type) ?? '').toLowerCase();
  const sse = contentType.startsWith('text/event-stream');
  const json = contentType.includes('json');
  // A stream is kept up to the scan limit (its text and usage are assembled from it); other answers up to
  // the body limit (what body capture keeps, or just their head).
  const limit = sse ? scanLimit : bodyLimit;
  const captured: CapturedResponse = { sse, json, contentType, chunks: [], kept: 0, total: 0, ended: false, error: false };
  ctx.state.set(BODY_STATE, captured);
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
  return (ctx.state.get(BODY_STATE) as CapturedResponse | undefined) ?? null;
}

export function capturedBytes(c: CapturedResponse): Buffer {
  return c.chunks.length === 1 ? c.chunks[0]! : Buffer.concat(c.chunks, c.kept);
}

/** What a streamed answer said, assembled from its SSE events. */
export interface AssembledStream {
  /** The text of every choice, in index order (tool-call arguments after a choice's text). */
  text: string;
  /** Characters of generated output (text and tool-call arguments), for token estimates. */
  outputChars: number;
  model: string | null;
  /** `usage` of the last event carrying one, as sent (OpenAI shape). */
  usage: Record<string, unknown> | null;
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * Assembles an OpenAI-format SSE answer (`chat.completion.chunk`, streamed
 * `text_completion`): the content deltas per choice, tool-call arguments,
 * the model and the usage chunk. Events that are not JSON are skipped.
 */
export function assembleSSE(text: string): AssembledStream {
  const parser = new SSEParser();
  const events = parser.push(text);
  for (const e of parser.end()) events.push(e);
  const choices = new Map<number, { text: string; tools: string }>();
  let model: string | null = null;
  let usage: Json | null = null;
  let outputChars = 0;
  for (const event of events) {
    const data = event.data;
    if (data === '' || data === '[DONE]' || data.charCodeAt(0) !== 123 /* { */) continue;
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch {
      continue;
    }
    if (!isObject(chunk)) continue;
    if (model === null && typeof chunk.model === 'string') model = chunk.model;
    if (isObject(chunk.usage)) usage = chunk.usage;
    if (!Array.isArray(chunk.choices)) continue;
    for (const c of chunk.choices as unknown[]) {
      if (!isObject(c)) continue;
      const index = typeof c.index === 'number' ? c.index : 0;
      let acc = choices.get(index);
      if (acc === undefined) {
        acc = { text: '', tools: '' };
        choices.set(index, acc);
      }
      if (typeof c.text === 'string') {
        acc.text += c.text;
        outputChars += c.text.length;
      }
      const delta = c.delta;
      if (!isObject(delta)) continue;
      for (const field of ['content', 'reasoning_content', 'refusal'] as const) {
        const piece = delta[field];
        if (typeof piece === 'string') {
          if (field === 'content') acc.text += piece;
          outputChars += piece.length;
        }
      }
      if (Array.isArray(delta.tool_calls)) {
        for (const t of delta.tool_calls as unknown[]) {
          const fn = isObject(t) && isObject(t.function) ? t.function : null;
          if (fn === null) continue;
          if (typeof fn.name === 'string') {
            acc.tools += `${acc.tools === '' ? '' : '\n'}${fn.name}`;
            outputChars += fn.name.length;
          }
          if (typeof fn.arguments === 'string') {
            acc.tools += fn.arguments;
            outputChars += fn.arguments.length;
          }
        }
      }
    }
  }
  const ordered = [...choices.entries()].sort((a, b) => a[0] - b[0]).map(([, c]) => (c.tools === '' ? c.text : `${c.text}${c.text === '' ? '' : '\n'}${c.tools}`));
  return { text: ordered.join('\n\n'), outputChars, model, usage };
}

/** The `model` field of a JSON answer's head, without parsing the whole answer. */
export function modelOfJson(head: string): string | null {
  const m = /"model"\s*:\s*"((?:[^"\\]|\\.){1,256})"/.exec(head);
  return m === null ? null : m[1]!;
}
