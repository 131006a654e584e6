import { effectiveBody, mapChunks, passThrough, type ChunkMap, stateKey, type GatewayResponse, type RequestContext, type Target, type UpstreamResponse, type Usage } from '../../core/index.js';
import { isObject } from '../json-object.js';
import { openAIFormatResponse } from './response.js';
import { toUsage } from './usage.js';

/*
 * Real usage for OpenAI-format streams the client asked no usage for.
 *
 * OpenAI reports a stream's usage only with `stream_options.include_usage`: without it the log, the
 * limits and the metrics had to count characters (docs/logs.md), which misses cached and reasoning
 * tokens. A provider that accepts the option asks for it on the client's behalf (`streamUsageBody`)
 * and answers through `streamUsageResponse`, which records the usage and keeps from the client what
 * it did not ask for: the usage-only event (`"choices":[]`, before `data: [DONE]`) is left out, and
 * a `usage` object a provider put on a content event is replaced by `null` (the value every other
 * event of such a stream carries). Every other byte passes through unchanged. A client that asked
 * for usage itself, and a front door's translated request (which asks for itself), are left alone.
 */

/**
 * Whether the gateway should ask this attempt's upstream for usage: the request streams (`stream: true`,
 * `override_params` applied) and neither the client nor the target's `override_params` set
 * `stream_options.include_usage: true`. False for a front door's translated body (`ctx.upstreamBody`:
 * the door asks for itself and reads the usage event), and for a `stream_options` that is not an
 * object (left for the upstream to refuse). No allocation: called on both sides of the call.
 */
export function asksStreamUsage(ctx: RequestContext, target: Target): boolean {
  if (ctx.upstreamBody !== null) return false;
  const body = ctx.body;
  if (body === null) return false;
  const o = target.override_params;
  const over = isObject(o) ? o : null;
  const stream = over !== null && 'stream' in over ? over.stream : body.stream;
  if (stream !== true) return false;
  const options = over !== null && 'stream_options' in over ? over.stream_options : body.stream_options;
  if (options === undefined || options === null) return true;
  return isObject(options) && options.include_usage !== true;
}

/** The client's `stream_options` with `include_usage: true`; its other fields (`include_obfuscation`, …) kept. */
export function withStreamUsage(options: unknown): Record<string, unknown> {
  return isObject(options) ? { ...options, include_usage: true } : { include_usage: true };
}

/** `,"stream_options":{"include_usage":true}`: spliced before the closing brace of a body that has no `stream_options`. */
const ASK = Buffer.from(',"stream_options":{"include_usage":true}');

interface AskedBody {
  source: Record<string, unknown>;
  overrides: unknown;
  changed: boolean;
  model: string | undefined;
  bytes: Buffer | string;
}

/** The asked-for body of a request, kept for its later attempts (a retry sends the same bytes). */
const ASKED_BODY = stateKey<AskedBody>('openai:stream-usage-body');

/**
 * The body to send when the gateway asks for usage ({@link asksStreamUsage}), else null (send the
 * usual body). Built once per request: the client's own bytes with `,"stream_options":{"include_usage":true}`
 * spliced in before their closing brace when nothing else changes them (no `stream_options`, no
 * `override_params`, the body unchanged by plugins, no `model` to replace), else the effective body
 * re-serialised with `stream_options.include_usage: true` (other `stream_options` fields kept) and
 * `model` when given (Azure's v1 API names the deployment there).
 */
export function streamUsageBody(ctx: RequestContext, target: Target, model?: string): Buffer | string | null {
  if (!asksStreamUsage(ctx, target)) return null;
  const source = ctx.body!;
  const overrides = target.override_params;
  const known = ctx.get(ASKED_BODY);
  if (known !== undefined && known.source === source && known.overrides === overrides && known.changed === ctx.bodyChanged && known.model === model) {
    return known.bytes;
  }
  let bytes: Buffer | string | null = null;
  if (model === undefined && !ctx.bodyChanged && !isObject(overrides) && ctx.rawBody !== null && !('stream_options' in source)) bytes = spliced(ctx.rawBody);
  if (bytes === null) {
    const body = { ...effectiveBody(ctx, target)! };
    body.stream_options = withStreamUsage(body.stream_options);
    if (model !== undefined) body.model = model;
    bytes = JSON.stringify(body);
  }
  ctx.set(ASKED_BODY, { source, overrides, changed: ctx.bodyChanged, model, bytes });
  return bytes;
}

/** The raw JSON object with {@link ASK} before its closing brace, or null when it does not end with one. */
function spliced(raw: Buffer): Buffer | null {
  let end = raw.length - 1;
  while (end > 0 && (raw[end] === 0x20 || raw[end] === 0x0a || raw[end] === 0x0d || raw[end] === 0x09)) end--;
  if (raw[end] !== 0x7d /* } */) return null;
  return Buffer.concat([raw.subarray(0, end), ASK, raw.subarray(end)], raw.length + ASK.length);
}

/**
 * The answer of an OpenAI-format upstream the gateway may have asked for usage: when `asked` and
 * the answer is a successful event stream, its bytes pass through {@link usageEventFilter} (usage
 * recorded in `ctx.usage`, the usage event left out); anything else is `openAIFormatResponse`'s.
 */
export function streamUsageResponse(upstream: UpstreamResponse, ctx: RequestContext, asked: boolean): GatewayResponse {
  if (!asked || upstream.status < 200 || upstream.status >= 300) return openAIFormatResponse(upstream, ctx);
  const type = upstream.headers['content-type'];
  if (typeof type !== 'string' || !type.startsWith('text/event-stream')) return openAIFormatResponse(upstream, ctx);
  // Compressed bytes (an encoding the client's forwarded `accept-encoding` asked for) cannot be read as events: passed as they are.
  const encoding = upstream.headers['content-encoding'];
  if (encoding !== undefined && encoding !== 'identity') return openAIFormatResponse(upstream, ctx);
  const response = passThrough(upstream);
  // The body loses an event: a length the upstream announced no longer holds.
  delete response.headers['content-length'];
  // As streamAnswer does: an upstream failure (a reset, a stall) fails the filtered stream with the same error.
  response.body = mapChunks(
    upstream.body,
    usageEventFilter((usage) => {
      ctx.usage = usage;
    }),
  );
  return response;
}

const USAGE_KEY = Buffer.from('"usage"');
/** An event held longer than this without its end is passed on unread (no usage event is this long). */
const MAX_HELD_BYTES = 1024 * 1024;

/**
 * An SSE byte stream without its usage: every event whose top-level `usage` is an object hands it
 * to `onUsage` (as the gateway's Usage) and is then left out when it carries no choice (OpenAI's
 * usage-only event), or sent with `"usage":null` in place of the object when it does (a provider
 * that reports usage on its last content event). Everything else passes byte for byte.
 *
 * Cheap on the hot path: a chunk that ends an event and holds no `"usage"` key followed by an
 * object goes out as it came (no copy, no decoding); only the event holding such a key is decoded
 * and parsed. An event split across chunks is held until its end (a blank line, `\n\n` or
 * `\r\n\r\n`); one longer than 1 MiB is passed on unread.
 */
export function usageEventFilter(onUsage: (usage: Usage) => void): ChunkMap {
  return new UsageEventFilter(onUsage);
}

const NOTHING = Buffer.alloc(0);

/** Joins what one chunk sends (at most two parts). */
function both(a: Buffer | undefined, b: Buffer | undefined): Buffer {
  if (a === undefined) return b ?? NOTHING;
  if (b === undefined) return a;
  return Buffer.concat([a, b], a.length + b.length);
}

class UsageEventFilter implements ChunkMap {
  readonly #onUsage: (usage: Usage) => void;
  /** The start of an event not yet ended. */
  #held: Buffer | null = null;
  /** The current event is being passed on unread (it outgrew MAX_HELD_BYTES): up to its end. */
  #skipping = false;

  constructor(onUsage: (usage: Usage) => void) {
    this.#onUsage = onUsage;
  }

  push(chunk: Buffer): Buffer {
    let buf = chunk;
    let first: Buffer | undefined;
    if (this.#skipping) {
      // (A blank line split across two chunks is not seen here: the next event then goes on unread too.)
      const end = nextEventEnd(buf, 0);
      if (end === -1) return buf;
      this.#skipping = false;
      if (end === buf.length) return buf;
      first = buf.subarray(0, end);
      buf = buf.subarray(end);
    }
    if (this.#held !== null) {
      buf = Buffer.concat([this.#held, buf], this.#held.length + buf.length);
      this.#held = null;
    }
    // The usual chunk ends an event: it goes out whole (unchanged unless it holds a usage object).
    const end = lastEventEnd(buf, buf.length);
    if (end === buf.length) return both(first, this.#filter(buf));
    const out = both(first, end === -1 ? undefined : this.#filter(buf.subarray(0, end)));
    const rest = end === -1 ? buf : buf.subarray(end);
    if (rest.length > MAX_HELD_BYTES) {
      // Not an event worth waiting for (no usage event is this long): it goes on, and the rest of it follows unread.
      this.#skipping = true;
      return both(out, rest);
    }
    this.#held = rest;
    return out;
  }

  end(): Buffer {
    const rest = this.#held;
    this.#held = null;
    // A last event without its blank line (a stream cut short, or an upstream that ends without one).
    return rest === null ? NOTHING : (this.#filter(rest) ?? NOTHING);
  }

  /** `block` (whole events) as it should go out: unchanged unless an event in it has a usage object. */
  #filter(block: Buffer): Buffer | undefined {
    let at = block.indexOf(USAGE_KEY);
    if (at === -1) return block;
    let parts: Buffer[] | null = null;
    let copied = 0;
    while (at !== -1) {
      const value = valueAt(block, at + USAGE_KEY.length);
      if (value === -1 || block[value] !== 0x7b /* { */) {
        at = block.indexOf(USAGE_KEY, at + USAGE_KEY.length);
        continue;
      }
      const start = Math.max(lastEventEnd(block, at), 0);
      const endAt = nextEventEnd(block, at);
      const end = endAt === -1 ? block.length : endAt;
      const event = block.subarray(start, end);
      const kept = this.#rewrite(event);
      if (kept !== event) {
        parts ??= [];
        if (start > copied) parts.push(block.subarray(copied, start));
        if (kept !== null) parts.push(kept);
        copied = end;
      }
      at = end >= block.length ? -1 : block.indexOf(USAGE_KEY, end);
    }
    if (parts === null) return block;
    if (copied < block.length) parts.push(block.subarray(copied));
    return parts.length === 0 ? undefined : parts.length === 1 ? parts[0] : Buffer.concat(parts);
  }

  /** One event holding a `"usage":{` key: null to leave it out, a new event, or the same one (not a usage event after all). */
  #rewrite(event: Buffer): Buffer | null {
    const text = event.toString('utf8');
    const data = dataOf(text);
    if (data === null) return event;
    let payload: unknown;
    try {
      payload = JSON.parse(data.json);
    } catch {
      return event;
    }
    if (!isObject(payload) || !isObject(payload.usage)) return event;
    const usage = toUsage(payload.usage);
    if (usage !== null) this.#onUsage(usage);
    const choices = payload.choices;
    const content = (Array.isArray(choices) && choices.length > 0) || payload.error !== undefined;
    if (!content) return null;
    // Usage on an event that carries content: the content goes on, the usage (which the client did not ask for) does not.
    if (data.line) {
      const range = topLevelObject(text, data.at, 'usage');
      if (range !== null) return Buffer.from(text.slice(0, range[0]) + 'null' + text.slice(range[1]));
    }
    return Buffer.from(`data: ${JSON.stringify({ ...payload, usage: null })}${text.endsWith('\r\n\r\n') ? '\r\n\r\n' : '\n\n'}`);
  }
}

/** The index just past the last blank line (`\n\n` or `\n\r\n`) before `before`, or -1. */
function lastEventEnd(buf: Buffer, before: number): number {
  let i = before > 0 ? buf.lastIndexOf(0x0a, before - 1) : -1;
  while (i > 0) {
    const p = buf[i - 1];
    if (p === 0x0a || (p === 0x0d && i > 1 && buf[i - 2] === 0x0a)) return i + 1;
    i = buf.lastIndexOf(0x0a, i - 1);
  }
  return -1;
}

/** The index just past the first blank line at or after `from`, or -1. */
function nextEventEnd(buf: Buffer, from: number): number {
  let i = buf.indexOf(0x0a, from);
  while (i !== -1) {
    const n = buf[i + 1];
    if (n === 0x0a) return i + 2;
    if (n === 0x0d && buf[i + 2] === 0x0a) return i + 3;
    i = buf.indexOf(0x0a, i + 1);
  }
  return -1;
}

/** After a key ending at `i`: the index of its value (past the colon and any spaces), or -1 when no colon follows. */
function valueAt(buf: Buffer, i: number): number {
  while (buf[i] === 0x20 || buf[i] === 0x09) i++;
  if (buf[i] !== 0x3a /* : */) return -1;
  i++;
  while (buf[i] === 0x20 || buf[i] === 0x09) i++;
  return i < buf.length ? i : -1;
}

/**
 * The `data:` payload of an event: its lines joined with `\n` (SSE), and, when it is one line, where
 * its JSON starts in `text` (so a field can be replaced in place).
 */
function dataOf(text: string): { json: string; line: boolean; at: number } | null {
  let json: string | null = null;
  let at = -1;
  let lines = 0;
  let start = 0;
  while (start < text.length) {
    let nl = text.indexOf('\n', start);
    if (nl === -1) nl = text.length;
    const end = nl > start && text.charCodeAt(nl - 1) === 13 ? nl - 1 : nl;
    if (text.startsWith('data:', start)) {
      const from = start + (text.charCodeAt(start + 5) === 32 ? 6 : 5);
      const value = text.slice(from, end);
      json = json === null ? value : `${json}\n${value}`;
      at = from;
      lines++;
    }
    start = nl + 1;
  }
  return json === null ? null : { json, line: lines === 1, at };
}

/** The range of the object value of a top-level `key` of the JSON object starting at `open` in `s`, or null. */
function topLevelObject(s: string, open: number, key: string): [number, number] | null {
  let depth = 0;
  for (let i = open; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 34 /* " */) {
      const from = i + 1;
      i = stringEnd(s, i);
      if (depth !== 1 || i - from !== key.length || s.slice(from, i) !== key) continue;
      let j = i + 1;
      while (s.charCodeAt(j) === 32 || s.charCodeAt(j) === 9) j++;
      if (s.charCodeAt(j) !== 58 /* : */) continue;
      j++;
      while (s.charCodeAt(j) === 32 || s.charCodeAt(j) === 9) j++;
      if (s.charCodeAt(j) !== 123 /* { */) return null;
      const close = closingBrace(s, j);
      return close === -1 ? null : [j, close + 1];
    }
    if (c === 123 || c === 91) depth++;
    else if (c === 125 || c === 93) depth--;
  }
  return null;
}

/** The index of the quote that ends the string opening at `i`. */
function stringEnd(s: string, i: number): number {
  for (let j = i + 1; j < s.length; j++) {
    const c = s.charCodeAt(j);
    if (c === 92 /* \ */) j++;
    else if (c === 34) return j;
  }
  return s.length;
}

/** The index of the brace that closes the object opening at `open`, or -1. */
function closingBrace(s: string, open: number): number {
  let depth = 0;
  for (let i = open; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 34) i = stringEnd(s, i);
    else if (c === 123 || c === 91) depth++;
    else if ((c === 125 || c === 93) && --depth === 0) return i;
  }
  return -1;
}
