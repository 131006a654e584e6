import type { IncomingHttpHeaders } from 'node:http';
import type { Attempt } from '../../../sdk/index.js';
import type { LogEntry } from '../entry.js';

/**
 * How entries cross to the writer thread. Posted as objects, every entry is
 * structured-cloned property by property (58 names written and read back, an
 * object rebuilt key by key): measured, 10–12 µs an entry over both threads.
 * Packed, a group of entries is one string holding every text field end to
 * end, one Float64Array of numbers and text offsets (transferred, not copied),
 * and a small array of the fields that stay objects (metadata, hook results,
 * routing; null for most entries; the price comes as JSON text, with the texts): about 4 µs, packing included. The attempts are
 * packed as well when they have the core's shape. The writer cuts the strings
 * back out with `slice`, which shares the packed string's characters instead
 * of copying them.
 */
export interface PackedEntries {
  count: number;
  /** Every text field of every entry (header names and values included), end to end. */
  text: string;
  /** Per entry, in field order: numbers (NaN for null), booleans as 0/1, texts as start and end in `text` (start -1 for null), then the attempts and the headers. */
  numbers: Float64Array;
  /** Per entry: the attempts when they could not be packed (else null), the metadata, the hook results, the request headers. */
  objects: unknown[];
  /** Per entry, the size the main thread counted it at (so acknowledgements free exactly that). */
  sizes: number[];
}

/**
 * Packs entries for one message to the writer thread (see {@link PackedEntries}). Every field is
 * named here and in {@link unpackEntries}, in the same order: plain property reads and writes, which
 * is what makes packing cheap (a loop over field names costs as much as the structured clone saved).
 * The round-trip test gives every field a distinct value, so a field left out or read out of order fails it.
 */
export function packEntries(entries: readonly LogEntry[], sizes: readonly number[]): PackedEntries {
  let numbers = new Float64Array(entries.length * (PER_ENTRY + 4 * 16));
  const parts: string[] = [];
  const objects: unknown[] = [];
  let at = 0;
  let length = 0;
  /** Room for `n` more numbers (an entry with many headers or attempts may need more than the estimate). */
  const room = (n: number) => {
    if (at + n <= numbers.length) return;
    const grown = new Float64Array(Math.max(numbers.length * 2, at + n));
    grown.set(numbers);
    numbers = grown;
  };
  const num = (v: number | null) => {
    numbers[at++] = v === null || v === undefined ? NaN : v;
  };
  const bool = (v: boolean) => {
    numbers[at++] = v ? 1 : 0;
  };
  const text = (v: string | null) => {
    if (v === null || v === undefined) {
      numbers[at++] = -1;
      numbers[at++] = -1;
      return;
    }
    const s = typeof v === 'string' ? v : String(v);
    numbers[at++] = length;
    length += s.length;
    numbers[at++] = length;
    parts.push(s);
  };
  for (const e of entries) {
    room(PER_ENTRY);
    num(e.created_at); num(e.ended_at); num(e.prompt_version); num(e.status); num(e.latency_ms); num(e.upstream_latency_ms);
    num(e.first_byte_ms); num(e.ttft_ms); num(e.prompt_tokens); num(e.completion_tokens); num(e.total_tokens); num(e.cached_tokens);
    num(e.reasoning_tokens); num(e.cache_write_tokens); num(e.cache_write_1h_tokens); num(e.cost); num(e.pricing_multiplier); num(e.retry_count);
    num(e.attempt_count); num(e.fallback_count);
    bool(e.stream); bool(e.internal); bool(e.aborted); bool(e.tokens_estimated); bool(e.request_body_truncated);
    bool(e.response_body_truncated); bool(e.response_stream); bool(e.config_accepted);
    text(e.id); text(e.trace_id); text(e.span_id); text(e.parent_span_id); text(e.span_name); text(e.workspace_id); text(e.api_key_id);
    text(e.config_id); text(e.prompt_id); text(e.route); text(e.front_door); text(e.method); text(e.path); text(e.provider_requested);
    text(e.provider); text(e.model_requested); text(e.model); text(e.target_path); text(e.cost_status); text(e.cache_status);
    text(e.error_code); text(e.error_message); text(e.limit_policy_id); text(e.rpc_method); text(e.tool_name); text(e.request_body);
    text(e.response_body); text(e.kind); text(e.price);
    // Attempts of the core's shape are packed too (one each, usually; cloned as objects they cost as much as the rest).
    const attempts = e.attempts;
    if (attempts.every(plainAttempt)) {
      room(1 + attempts.length * ATTEMPT_NUMBERS);
      numbers[at++] = attempts.length;
      for (const a of attempts) {
        text(a.target); text(a.provider); num(a.status); num(a.startMs); num(a.latencyMs); text(a.error); text(a.via ?? null);
      }
      objects.push(null);
    } else {
      room(1);
      numbers[at++] = -1;
      objects.push(attempts);
    }
    objects.push(e.metadata, e.hook_results, e.request_headers, e.routing);
    const headers = e.received_headers;
    room(1);
    if (headers === null) {
      numbers[at++] = -1;
      continue;
    }
    const countAt = at++;
    let count = 0;
    for (const name in headers) {
      const value = headers[name];
      if (value === undefined) continue;
      room(4);
      text(name);
      text(typeof value === 'string' ? value : value.join(', '));
      count++;
    }
    numbers[countAt] = count;
  }
  // A typed array drops writes past its end without a word: had room() been asked for too little, say so here
  // (the hand-over counts the group as failed) rather than send entries with missing fields.
  if (at > numbers.length) throw new Error(`log store: packing entries overran its buffer (${at} > ${numbers.length})`);
  return { count: entries.length, text: parts.join(''), numbers: numbers.subarray(0, at), objects, sizes: sizes.slice() };
}

/** Numbers one packed attempt takes: five texts (two each) and three numbers. */
const ATTEMPT_NUMBERS = 5 * 2 + 3;

/** An attempt with only the fields the core gives one (so packing it loses nothing). */
function plainAttempt(a: Attempt): boolean {
  let keys = 0;
  for (const key in a) {
    if (key !== 'target' && key !== 'provider' && key !== 'status' && key !== 'startMs' && key !== 'latencyMs' && key !== 'error' && key !== 'via') return false;
    keys++;
  }
  return (
    keys >= 6 &&
    typeof a.target === 'string' &&
    typeof a.startMs === 'number' &&
    typeof a.latencyMs === 'number' &&
    (a.status === null || typeof a.status === 'number') &&
    (a.provider === null || typeof a.provider === 'string') &&
    (a.error === null || typeof a.error === 'string') &&
    (a.via === undefined || typeof a.via === 'string')
  );
}

/** Numbers per entry besides its attempts and headers: 20 numbers, 8 booleans, 29 texts (two each). */
const PER_ENTRY = 20 + 8 + 29 * 2;

/** The entries of a packed group, as the main thread built them (header values given as several are joined by `, `). */
export function unpackEntries(p: PackedEntries): LogEntry[] {
  const { numbers, text, objects } = p;
  const out: LogEntry[] = [];
  let at = 0;
  let o = 0;
  const num = () => {
    const v = numbers[at++]!;
    return v !== v ? null : v; // NaN: null
  };
  const bool = () => numbers[at++] === 1;
  const str = () => {
    const start = numbers[at++]!;
    const end = numbers[at++]!;
    return start < 0 ? null : text.slice(start, end);
  };
  for (let i = 0; i < p.count; i++) {
    // Read in the order packEntries wrote: numbers, booleans, texts, attempts, objects, headers.
    const created_at = num()!, ended_at = num()!, prompt_version = num(), status = num()!, latency_ms = num(), upstream_latency_ms = num();
    const first_byte_ms = num(), ttft_ms = num(), prompt_tokens = num(), completion_tokens = num(), total_tokens = num();
    const cached_tokens = num(), reasoning_tokens = num(), cache_write_tokens = num(), cache_write_1h_tokens = num(), cost = num();
    const pricing_multiplier = num()!, retry_count = num()!, attempt_count = num()!, fallback_count = num()!;
    const stream = bool(), internal = bool(), aborted = bool(), tokens_estimated = bool(), request_body_truncated = bool();
    const response_body_truncated = bool(), response_stream = bool(), config_accepted = bool();
    const id = str()!, trace_id = str(), span_id = str(), parent_span_id = str(), span_name = str(), workspace_id = str();
    const api_key_id = str(), config_id = str(), prompt_id = str(), route = str(), front_door = str(), method = str()!, path = str()!;
    const provider_requested = str(), provider = str(), model_requested = str(), model = str(), target_path = str();
    const cost_status = str()!, cache_status = str(), error_code = str(), error_message = str(), limit_policy_id = str();
    const rpc_method = str(), tool_name = str(), request_body = str(), response_body = str(), kind = (str() ?? 'api') as LogEntry['kind'];
    const price = str();
    const attemptCount = numbers[at++]!;
    let attempts = objects[o++] as LogEntry['attempts'];
    if (attemptCount >= 0) {
      attempts = [];
      for (let k = 0; k < attemptCount; k++) {
        const target = str()!, provider = str(), status = num(), startMs = num()!, latencyMs = num()!, error = str(), via = str();
        attempts.push(via === null ? { target, provider, status, startMs, latencyMs, error } : { target, provider, status, startMs, latencyMs, error, via });
      }
    }
    const metadata = objects[o++] as LogEntry['metadata'];
    const hook_results = objects[o++];
    const request_headers = objects[o++] as LogEntry['request_headers'];
    const routing = objects[o++];
    const headerCount = numbers[at++]!;
    let received_headers: IncomingHttpHeaders | null = null;
    if (headerCount >= 0) {
      // No prototype: a header named __proto__ stays a plain key (headersForLog skips it).
      received_headers = Object.create(null) as IncomingHttpHeaders;
      for (let h = 0; h < headerCount; h++) {
        const name = str()!;
        received_headers[name] = str()!;
      }
    }
    out.push({
      id, created_at, ended_at, trace_id, span_id, parent_span_id, span_name, workspace_id, api_key_id, config_id, prompt_id, prompt_version,
      route, front_door, method, path, provider_requested, provider, model_requested, model, target_path, status, stream, internal, aborted,
      latency_ms, upstream_latency_ms, first_byte_ms, ttft_ms, prompt_tokens, completion_tokens, total_tokens, cached_tokens, reasoning_tokens,
      cache_write_tokens, cache_write_1h_tokens, tokens_estimated, cost, cost_status, pricing_multiplier, cache_status, retry_count, attempt_count,
      fallback_count, attempts, metadata, hook_results, routing, price, error_code, error_message, limit_policy_id, rpc_method, tool_name, request_headers, request_body, request_body_truncated,
      response_body, response_body_truncated, response_stream, received_headers, config_accepted, kind,
    });
  }
  return out;
}
