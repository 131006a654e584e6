import { performance } from 'node:perf_hooks';
import { stateKey, type RequestContext, type Usage } from '../../core/index.js';
import type { CostStatus, PriceBreakdown, PricingTable } from '../pricing/table.js';
import { toUsage } from '../openai/usage.js';
import { assembleSSE } from './assemble.js';
import { capturedBytes, capturedResponse, modelOfJson, pricingMultiplier, requestedProvider, type CapturedResponse } from './capture.js';


/** Characters per token in the estimate used when a stream carries no usage. */
export const CHARS_PER_TOKEN = 4;

/** Cost outcome of one request: `cache_hit` costs 0 (no upstream call was made). */
export type RequestCostStatus = CostStatus | 'cache_hit';

/** What the log store and the metrics derive from a finished request; computed once per request. */
export interface RequestSummary {
  /** Wall-clock ms at arrival and at the end of the response. */
  startedAt: number;
  /** Wall-clock ms (epoch) at the end of the response. */
  endedAt: number;
  /** The provider that answered (`ctx.provider`), null for cache hits and handler routes. */
  provider: string | null;
  /** The provider as the request named it: `@slug`, `@virtual-key`, or a name; falls back to the answering one. */
  providerRequested: string | null;
  /** The model the request asked for (`ctx.model`), null when it named none. */
  modelRequested: string | null;
  /** The model the answer names (its `model` field), null when it names none. */
  modelAnswered: string | null;
  /** Token counts: reported by the upstream, read from the answer, or estimated (see `tokensEstimated`); null when unknown. */
  usage: Usage | null;
  /** True when the tokens were counted by the gateway (a stream without a usage chunk). */
  tokensEstimated: boolean;
  /** The cost in the price list's currency, the multiplier applied; 0 for a cache hit, null when not priced. */
  cost: number | null;
  /** How the cost came about: `priced`, `unpriced`, `no_usage` or `cache_hit`. */
  costStatus: RequestCostStatus;
  /**
   * The price the cost was computed with: the list's version, the entry, the tier, the rates and
   * amounts of each kind of token, so anyone can compute it again; null for a cache hit.
   */
  price: PriceBreakdown | null;
  /** The service tier the answer names (OpenAI's `service_tier`: `default`, `flex`, `priority`), null when it names none. */
  serviceTier: string | null;
  /** The pricing multiplier of the target that answered (`pricing_multiplier`), 1 when none. */
  multiplier: number;
  /** Upstream calls beyond the first on each target path, summed. */
  retries: number;
  /** Target paths tried beyond the first (a fallback moved on). */
  fallbacks: number;
  /** Attempts refused by an open circuit breaker. */
  circuitOpen: number;
  /** Time to first token: first body byte of a streamed answer, in ms from arrival. */
  ttftMs: number | null;
  /** The answer's text: assembled from a stream, or the body as sent (null when not kept, or left in `responseStream`). */
  responseText: string | null;
  /**
   * A streamed answer as sent (its SSE text), when its text is wanted but was not assembled here:
   * its usage was known from the usage chunk, so the only reader of the text (the log store) assembles
   * it where the entry is written (`assembleSSE`), off the response path. Null otherwise.
   */
  responseStream: string | null;
  /** True when `responseText` is shorter than the answer (scan limit reached). */
  responseCut: boolean;
  /** The answer was a server-sent event stream. */
  sse: boolean;
}

/** What {@link requestSummary} needs: the price list, and whether the answer's text is wanted. */
export interface SummaryOptions {
  /** The price list costs are computed with (see `pricingOf`). */
  pricing: PricingTable;
  /** Whether the answer's text is wanted (body capture on). */
  wantText: boolean;
}

/** One upstream call of a request whose stream was continued by another (stream recovery). */
export interface UsageSegment {
  /** The target path that answered it (`0`, `1`, …; null when unknown), for limits held per target. */
  target: string | null;
  /** The provider that answered it (null when unknown). */
  provider: string | null;
  /** The model its answer named (else the requested one). */
  model: string | null;
  /** The model its target was called with. */
  requestedModel: string | null;
  /** Its provider bills the model it was called with (Bedrock's inference profiles), not the one the answer names. */
  billedRequested: boolean;
  /** Its usage: reported, or estimated when the call broke before reporting all of it. */
  usage: Usage;
  /** Whether `usage` was estimated (in whole or in part). */
  estimated: boolean;
}

/**
 * The calls whose answers make up one continued stream, in order: `ctx.usage` is their sum, and each is priced
 * at its own provider's and model's rates (the continuation may have come from another target).
 */
export const USAGE_SEGMENTS = stateKey<UsageSegment[]>('observe:usage-segments');

/** Marks whether a kept summary holds the answer's text. */
const WITH_TEXT = Symbol('withText');

const SUMMARY_STATE = stateKey<RequestSummary & { [WITH_TEXT]: boolean }>('observe:summary');

/** The summary of a finished request, computed on first use and kept on the request. */
export function requestSummary(ctx: RequestContext, options: SummaryOptions): RequestSummary {
  const known = ctx.get(SUMMARY_STATE);
  // A summary made without the text serves every caller but one that wants the text (the log store
  // with body capture), which gets its own: whichever log tap ran first must not decide for the others.
  if (known !== undefined && (known[WITH_TEXT] || !options.wantText)) return known;
  const summary = Object.assign(summarize(ctx, options), { [WITH_TEXT]: options.wantText });
  ctx.set(SUMMARY_STATE, summary);
  return summary;
}

function summarize(ctx: RequestContext, { pricing, wantText }: SummaryOptions): RequestSummary {
  const endedAt = Date.now();
  const elapsed = ctx.latencyMs ?? performance.now() - ctx.startedAt;
  const captured = capturedResponse(ctx);
  const provider = ctx.provider?.name ?? null;
  const rootProvider = typeof ctx.target?.provider === 'string' ? ctx.target.provider : null;
  const providerRequested = requestedProvider(ctx) ?? rootProvider ?? provider;

  let usage = ctx.usage;
  let tokensEstimated = false;
  let modelAnswered: string | null = null;
  let responseText: string | null = null;
  let responseStream: string | null = null;
  let responseCut = false;
  const sse = captured?.sse === true;
  const ok = ctx.status >= 200 && ctx.status < 300;

  // Joined once: the usage, the model and the service tier are all read from them.
  const bytes = captured !== null && captured.kept > 0 ? capturedBytes(captured) : null;
  if (captured !== null && bytes !== null) {
    if (sse) {
      if (usage === null) {
        const assembled = assembleSSE(bytes.toString('utf8'));
        modelAnswered = assembled.model;
        if (wantText) {
          responseText = assembled.text;
          responseCut = captured.kept < captured.total;
        }
        if (usage === null && assembled.usage !== null) usage = toUsage(assembled.usage);
        if (usage === null && ok && (assembled.outputChars > 0 || assembled.model !== null)) {
          // No usage chunk: count. Beyond the scan limit the kept part's ratio is extrapolated.
          const scale = captured.kept > 0 ? captured.total / captured.kept : 1;
          const completion = Math.ceil((assembled.outputChars * scale) / CHARS_PER_TOKEN);
          const prompt = estimateRequestPromptTokens(ctx);
          usage = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
          tokensEstimated = true;
        }
      } else {
        // Decoded once: the model is read from the head of the same text the log store gets.
        const text = wantText ? bytes.toString('utf8') : null;
        modelAnswered = modelOfJson(text === null ? bytes.toString('utf8', 0, Math.min(bytes.length, 4096)) : text.length > 4096 ? text.slice(0, 4096) : text);
        if (text !== null) {
          responseStream = text;
          responseCut = captured.kept < captured.total;
        }
      }
    } else {
      const text = textOf(captured, bytes);
      if (captured.json && text !== null) {
        modelAnswered = modelOfJson(text.length > 4096 ? text.slice(0, 4096) : text);
        if (usage === null && ok) usage = usageOfJson(text);
      }
      if (wantText) {
        responseText = text ?? `<${captured.contentType || 'binary'} body, ${captured.total} bytes>`;
        responseCut = text !== null && captured.kept < captured.total;
      }
    }
  }
  if (responseText === null && wantText && ctx.error !== null && (captured === null || captured.kept === 0)) {
    responseText = JSON.stringify(ctx.error.toEnvelope());
  }

  const hit = ctx.cacheStatus === 'HIT' || ctx.cacheStatus === 'SEMANTIC HIT';
  const multiplier = pricingMultiplier(ctx.resolvedTarget);
  const priceProvider = provider ?? (providerRequested !== null && !providerRequested.startsWith('@') ? providerRequested : null);
  // Only a provider that bills by service tier (OpenAI, Azure OpenAI) names one that changes the price.
  const serviceTier = bytes === null || ctx.provider?.servesTiers !== true ? null : servedTier(bytes, sse);
  const startedAt = endedAt - elapsed;
  let cost: number | null;
  let costStatus: RequestCostStatus;
  let price: PriceBreakdown | null = null;
  if (hit) {
    cost = 0;
    costStatus = 'cache_hit';
  } else {
    // At the prices in force when the request ran, the service tier the answer names.
    const options = { at: startedAt, multiplier, serviceTier };
    // The model the provider bills: the one the answer names (a dated snapshot of an alias), unless the provider bills
    // by the id it was called with (Bedrock: the inference profile, `global.` or a region, sets the price; its answers
    // name the vendor's bare model).
    const requestedFirst = ctx.provider?.billedModel === 'requested';
    const first = requestedFirst ? (ctx.model ?? modelAnswered) : (modelAnswered ?? ctx.model);
    const second = requestedFirst ? modelAnswered : ctx.model;
    const segments = ctx.get(USAGE_SEGMENTS);
    if (segments !== undefined && segments.length > 0) {
      // A continued stream: every call at its own rates, summed (sdk/stream-recovery).
      price = priceSegments(pricing, segments, options);
      if (segments.some((s) => s.estimated)) tokensEstimated = true;
    } else {
      price = pricing.price(priceProvider, first, usage, options);
      if (price.status === 'unpriced' && price.price_id === null && second !== null && first !== null && second !== first) {
        // The first name may be one the list does not know (a snapshot it has no rule for); the other may be.
        price = pricing.price(priceProvider, second, usage, options);
      }
    }
    cost = price.cost;
    costStatus = price.status;
  }

  let retries = 0;
  let circuitOpen = 0;
  const paths = new Set<string>();
  for (const a of ctx.attempts) {
    if (paths.has(a.target)) retries++;
    else paths.add(a.target);
    if (a.error === 'circuit_open') circuitOpen++;
  }

  return {
    startedAt,
    endedAt,
    provider,
    providerRequested,
    modelRequested: ctx.model,
    modelAnswered,
    usage,
    tokensEstimated,
    cost,
    costStatus,
    price,
    serviceTier,
    multiplier,
    retries,
    fallbacks: Math.max(0, paths.size - 1),
    circuitOpen,
    ttftMs: sse || ctx.stream ? ctx.firstByteMs : null,
    responseText,
    responseStream,
    responseCut,
    sse,
  };
}

const SERVICE_TIER_KEY = Buffer.from('"service_tier"');
const RESPONSE_KEY = 'response';

/**
 * The service tier that served an answer, null when it names none. Only an answer's own field
 * counts: a JSON answer's top-level `service_tier` (a Responses object echoes the request's
 * `metadata` and `tools` beside it, whose keys the client chose), or in a stream the last event
 * that names one at its top level (every chat chunk) or in its `response` object (a Responses
 * stream's `response.completed`: its `response.created` echoes the tier asked for, `auto`). Read
 * from the bytes: nothing is decoded but the value, and only answers that hold the key are walked.
 */
export function servedTier(bytes: Buffer, sse: boolean): string | null {
  const last = bytes.lastIndexOf(SERVICE_TIER_KEY);
  if (last === -1) return null;
  if (!sse) return tierAt(bytes, 0, bytes.length);
  // Event by event from the last that holds the key, back to the first: the last event's own field wins.
  let end = bytes.length;
  let at = last;
  while (at !== -1) {
    // An event's `data:` starts a line; a newline never stands inside its JSON (strings escape it).
    const line = bytes.lastIndexOf(DATA_LINE, at);
    const start = line === -1 ? (bytes.subarray(0, 5).equals(DATA) ? 5 : 0) : line + DATA_LINE.length;
    const tier = tierAt(bytes, start, end);
    if (tier !== null) return tier;
    if (line === -1) break;
    end = line;
    at = bytes.lastIndexOf(SERVICE_TIER_KEY, end);
  }
  return null;
}
const DATA = Buffer.from('data:');
const DATA_LINE = Buffer.from('\ndata:');

/**
 * The `service_tier` string of the JSON object in `bytes[from, to)`: its top-level field, or its
 * `response` object's. A walk of its structure (strings skipped, nesting counted), so a key inside
 * an echoed value never counts.
 */
function tierAt(bytes: Buffer, from: number, to: number): string | null {
  let depth = 0;
  let key: string | null = null;
  let underResponse = false;
  let found: string | null = null;
  for (let i = from; i < to; i++) {
    const c = bytes[i]!;
    if (c === 0x22 /* " */) {
      let j = i + 1;
      while (j < to && bytes[j] !== 0x22) j += bytes[j] === 0x5c /* \ */ ? 2 : 1;
      // A key (a string followed by a colon) at the top level, or at the second level inside `response`.
      let k = j + 1;
      while (k < to && (bytes[k] === 0x20 || bytes[k] === 0x0a || bytes[k] === 0x0d || bytes[k] === 0x09)) k++;
      if (bytes[k] === 0x3a /* : */ && (depth === 1 || (depth === 2 && underResponse))) {
        const name = bytes.toString('utf8', i + 1, j);
        if (depth === 1) key = name;
        if (name === 'service_tier') {
          let v = k + 1;
          while (v < to && bytes[v] === 0x20) v++;
          if (bytes[v] === 0x22) {
            const close = bytes.indexOf(0x22, v + 1);
            if (close !== -1 && close < to && close - v <= 33) found = bytes.toString('utf8', v + 1, close);
          }
        }
      }
      i = j;
      continue;
    }
    if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      depth++;
      if (depth === 2) underResponse = c === 0x7b && key === RESPONSE_KEY;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      depth--;
    } else if (c === 0x0a && depth <= 0) {
      break;
    }
  }
  return found;
}

const TEXTUAL = /^(?:text\/|application\/(?:[a-z0-9.+-]*\+)?(?:json|xml|x-www-form-urlencoded|javascript|x-ndjson))/;

function textOf(captured: CapturedResponse, bytes: Buffer): string | null {
  if (captured.json || captured.contentType === '' || TEXTUAL.test(captured.contentType)) return bytes.toString('utf8');
  return null;
}

/** Usage from a JSON answer: OpenAI's `usage` (prompt/completion) or the Responses API's (input/output). */
function usageOfJson(text: string): Usage | null {
  const key = text.lastIndexOf('"usage"');
  if (key === -1) return null;
  try {
    const whole = JSON.parse(text) as { usage?: unknown };
    return toUsage(whole.usage);
  } catch {
    return null;
  }
}

/**
 * Prompt tokens estimated from the request body: characters of the message
 * texts (chat, Messages), the prompt (completions), the input (embeddings,
 * Responses: its items' texts and tool outputs), the `instructions`
 * (Responses) and the `system` prompt (Messages), divided by 4, rounded up.
 * Images, audio and tool definitions are not counted.
 */
export function estimatePromptTokens(body: Record<string, unknown> | null): number {
  if (body === null) return 0;
  let chars = 0;
  const add = (v: unknown): void => {
    if (typeof v === 'string') chars += v.length;
    else if (Array.isArray(v)) for (const item of v) add(item);
    else if (v !== null && typeof v === 'object') {
      const part = v as Record<string, unknown>;
      if (typeof part.text === 'string') chars += part.text.length;
      else if (typeof part.content === 'string' || Array.isArray(part.content)) add(part.content);
      // A Responses `function_call_output` item: the tool's output, as a chat `tool` message's content counts.
      else if (typeof part.output === 'string' || Array.isArray(part.output)) add(part.output);
    }
  };
  if (Array.isArray(body.messages)) {
    for (const m of body.messages as unknown[]) if (m !== null && typeof m === 'object') add((m as Record<string, unknown>).content);
  }
  add(body.prompt);
  add(body.input);
  add(body.instructions);
  add(body.system);
  return Math.ceil(chars / CHARS_PER_TOKEN);
}

const IMPLICIT_PROMPT_STATE = stateKey<number>('observe:implicit-prompt-tokens');

/**
 * Records prompt tokens a request sends that its body does not show: the
 * conversation a front door rebuilds from its store (`previous_response_id`).
 * Estimates made before the call (the `limits` plugin's reservations) and
 * after it (a stream without usage) add them; call it before
 * `STAGES.beforeRequest.LIMIT` (at `VALIDATE`, with the body's checks).
 */
export function addImplicitPromptTokens(ctx: RequestContext, tokens: number): void {
  if (!Number.isFinite(tokens) || tokens <= 0) return;
  ctx.set(IMPLICIT_PROMPT_STATE, (ctx.get(IMPLICIT_PROMPT_STATE) ?? 0) + Math.ceil(tokens));
}

/**
 * The price of a continued stream: each call's, summed. The breakdown is the last call's with the total cost and
 * every call's own breakdown in `segments`; unpriced when any call is.
 */
function priceSegments(pricing: PricingTable, segments: readonly UsageSegment[], options: { at: number; multiplier: number; serviceTier: string | null }): PriceBreakdown {
  const parts = segments.map((s) => {
    // As for one call: the model the provider bills first, the other name when the list does not know the first.
    const first = s.billedRequested ? (s.requestedModel ?? s.model) : (s.model ?? s.requestedModel);
    const second = s.billedRequested ? s.model : s.requestedModel;
    let price = pricing.price(s.provider, first, s.usage, options);
    if (price.status === 'unpriced' && price.price_id === null && second !== null && first !== null && second !== first) price = pricing.price(s.provider, second, s.usage, options);
    return Object.assign(price, { provider: s.provider, model: first });
  });
  const last = parts[parts.length - 1]!;
  const unpriced = parts.find((p) => p.status !== 'priced');
  const cost = unpriced === undefined ? parts.reduce((sum, p) => sum + (p.cost ?? 0), 0) : null;
  return { ...last, cost, status: unpriced === undefined ? 'priced' : unpriced.status, segments: parts, ...(unpriced?.reason !== undefined ? { reason: unpriced.reason } : {}) };
}

/** A request's prompt tokens, estimated: its body's (`estimatePromptTokens`) plus what `addImplicitPromptTokens` recorded. */
export function estimateRequestPromptTokens(ctx: RequestContext): number {
  return estimatePromptTokens(ctx.body) + (ctx.get(IMPLICIT_PROMPT_STATE) ?? 0);
}
