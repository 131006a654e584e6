import type { GatewayResponse, RequestContext, Target } from '../../core/index.js';
import { isObject } from '../json-object.js';

type Json = Record<string, unknown>;

/**
 * How a continuation asks the model to go on (docs/formats.md, "Streams that survive a provider failure"):
 * - `prefill`: the partial answer is the assistant's turn so far and the model continues it natively
 *   (Anthropic, and Claude on Bedrock and Vertex AI); its trailing whitespace is left out (Anthropic refuses it).
 * - `prefix`: the same through an assistant-prefix flag (`prefix: true`: Mistral, through the chat door); an answer
 *   that repeats the prefix first has it trimmed.
 * - `instruct`: for every other provider, the partial answer as the assistant's message and a user message asking
 *   to continue it without repeating; a repeat at the seam is trimmed.
 * - `restart`: nothing had been said yet: the request is sent again as it was.
 */
export type ContinuationMode = 'prefill' | 'prefix' | 'instruct' | 'restart';

/** The user message of the `instruct` mode. */
export const CONTINUE_INSTRUCTION =
  'Your previous answer was cut off. Continue it exactly where it stopped: do not repeat anything already written, ' +
  'do not add a preamble or a comment, and start with the very next characters.';

/** Providers that continue an assistant turn given as the last message. */
const PREFILL = new Set(['anthropic']);
/** Providers that continue one whose model is Claude. */
const PREFILL_CLAUDE = new Set(['bedrock', 'vertex-ai']);
/**
 * OpenAI-compatible providers with an assistant-prefix flag on the last message (chat completions). DeepSeek has one
 * too, but only on its beta base URL, which the bundled provider does not call: it gets `instruct`.
 */
const PREFIX = new Set(['mistral-ai']);

/**
 * The mode for a target: by the provider it names (a target reached through a virtual key or an integration,
 * `@…`, is not known until it is resolved and gets `instruct`, which every provider takes).
 */
export function continuationMode(route: string, target: Target, body: Json, partial: string): ContinuationMode {
  if (partial.trim() === '') return 'restart';
  const provider = typeof target.provider === 'string' ? target.provider : '';
  const over = isObject(target.override_params) ? target.override_params : null;
  const model = String(over?.model ?? body.model ?? '');
  if (PREFILL.has(provider) || (PREFILL_CLAUDE.has(provider) && /claude|anthropic/i.test(model))) return 'prefill';
  if (PREFIX.has(provider) && route === 'chat.completions') return 'prefix';
  return 'instruct';
}

/** The request body (in the front door's format, `route`) that asks for the rest of `partial`. */
export function continuationBody(route: string, body: Json, partial: string, mode: ContinuationMode): Json {
  if (mode === 'restart') return body;
  const said = trimmed(partial, mode);
  if (route === 'responses') {
    const input: unknown[] = typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : Array.isArray(body.input) ? [...(body.input as unknown[])] : [];
    input.push({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: said }] });
    if (mode !== 'prefill') input.push({ role: 'user', content: CONTINUE_INSTRUCTION });
    return { ...body, input };
  }
  const messages = Array.isArray(body.messages) ? [...(body.messages as unknown[])] : [];
  const last = messages.at(-1);
  const flag = mode === 'prefix' ? { prefix: true } : {};
  if (isObject(last) && last.role === 'assistant') {
    // The client's own prefill: the partial answer goes on from its text.
    const content = typeof last.content === 'string' ? trimmed(last.content + partial, mode) : [...contentBlocks(last.content), { type: 'text', text: said }];
    messages[messages.length - 1] = { ...last, content, ...flag };
  } else {
    messages.push({ role: 'assistant', content: said, ...flag });
  }
  if (mode === 'instruct') messages.push({ role: 'user', content: CONTINUE_INSTRUCTION });
  return { ...body, messages };
}

const trimmed = (text: string, mode: ContinuationMode): string => (mode === 'prefill' ? text.trimEnd() : text);

function contentBlocks(content: unknown): unknown[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  return Array.isArray(content) ? (content as unknown[]) : [];
}

/** A continuation call that answered: its answer, and how it was asked. */
export interface Continued {
  /** The continuation's answer (any status; the recovery splices only a 2xx event stream). */
  response: GatewayResponse;
  /** How it was asked to continue (what the seam trims). */
  mode: ContinuationMode;
  /** Its target's `stream_idle_timeout` (ms), when it has one: the silence that breaks this call's stream. */
  idleMs?: number;
}

/**
 * Sends the continuation of `partial` to `target`: the request's body is the continuation's while `send` builds
 * and sends the call (a leaf run by a strategy, or the inner chain of an interceptor), and the client's again
 * once it answered, for the log and everything after. `signal` calls it off: the attempt is aborted and the
 * client's body is back at once.
 */
export async function runContinuation(ctx: RequestContext, route: string, target: Target, partial: string, send: () => Promise<GatewayResponse>, signal?: AbortSignal): Promise<Continued> {
  const body = ctx.body ?? {};
  const mode = continuationMode(route, target, body, partial);
  const saved = { body: ctx.body, changed: ctx.bodyChanged, upstream: ctx.upstreamBody, attempt: ctx.attemptSignal };
  let restored = false;
  const restore = () => {
    if (restored) return;
    restored = true;
    ctx.body = saved.body;
    ctx.bodyChanged = saved.changed;
    ctx.upstreamBody = saved.upstream;
    ctx.attemptSignal = saved.attempt;
  };
  ctx.body = continuationBody(route, body, partial, mode);
  ctx.bodyChanged = mode !== 'restart' || saved.changed;
  ctx.upstreamBody = null;
  if (signal !== undefined) {
    if (signal.aborted) {
      restore();
      throw signal.reason;
    }
    // The attempt listens to both: the client's request, and the stream that asked for it.
    ctx.attemptSignal = AbortSignal.any([saved.attempt ?? ctx.signal, signal]);
    signal.addEventListener('abort', restore, { once: true });
  }
  try {
    const response = await send();
    const idle = ctx.resolvedTarget?.stream_idle_timeout;
    return { response, mode, ...(typeof idle === 'number' && idle > 0 ? { idleMs: idle } : {}) };
  } finally {
    signal?.removeEventListener('abort', restore);
    restore();
  }
}
