import type * as v from 'valibot';
import type { UpstreamClient } from '../core/index.js';

/** What a check sees. */
export interface CheckInput {
  /** `input`: before the request goes upstream; `output`: on the answer. */
  phase: 'input' | 'output';
  /**
   * The text under check. Input: the last message's text (chat), the prompt
   * (completions) or the input (embeddings). Output: the answer's text, all
   * choices joined by newlines.
   */
  text: string;
  /** The request body as JSON (after earlier hooks' transformations). */
  request: Record<string, unknown>;
  /** The answer as JSON, for output checks on a non-stream answer; null on input and for streams. */
  response: Record<string, unknown> | null;
  /** Route name, e.g. `chat.completions`. */
  route: string;
  /** Requested model. */
  model: string | null;
  /** `x-gateway-metadata`. */
  metadata: Record<string, unknown> | null;
  /** Aborted when the client goes away. */
  signal: AbortSignal;
  /** The gateway's pooled HTTP client, for checks that call out. */
  upstream: UpstreamClient;
}

/** A check's verdict. */
export interface CheckResult {
  /** true: the check passed. */
  verdict: boolean;
  /** Why, in a sentence a person can act on. */
  explanation?: string;
  /** Details (matches found, scores…), recorded in the hook results. */
  data?: unknown;
  /**
   * A rewritten request (input) or answer (output) body, e.g. with PII masked.
   * Recorded as a transformation; later hooks and the provider (or the client) see it.
   */
  transformed?: Record<string, unknown>;
  /**
   * Spans of `text` to replace (PII, secrets), for a streamed answer, where there is no body to
   * rewrite: in a hook whose `stream_mode` is `redact`, each is replaced before it leaves the gateway.
   * Offsets are into `text`.
   */
  redactions?: ReadonlyArray<{ start: number; end: number; replacement: string }>;
}

/**
 * How a check judges a streamed answer while it arrives (docs/guardrails.md#streams).
 * - `window`: on the latest text, a sliding window (the hook's `stream_window` characters before the new
 *   text, plus it): for a failure that is a match no longer than the window (a word, a pattern, PII).
 * - `all`: on all the text so far, for a failure on part of the text that is final (a maximum count
 *   exceeded, a webhook's verdict), at most every `every` characters.
 */
export interface StreamJudgement<P = unknown> {
  /** `window`: the latest text; `all`: all the text so far. */
  scope: 'window' | 'all';
  /** `all` only: the fewest new characters between two runs (a webhook's cadence). Default: the hook's `stream_check_every`. */
  every?: number;
  /** The parameters to run with on part of the text (a count check drops its minimum, which only the whole text can meet). Default: the check's own. */
  parameters?: P;
  /** The check returns `redactions` (with these parameters): a hook with it defaults to `stream_mode: redact`. */
  redacts?: boolean;
}

/**
 * A guardrail check, registered by id (`<namespace>.<check>`) in `api.checks`.
 * `parameters` is a valibot schema: a config whose parameters fail it is a 400
 * before any check runs, never a crash at run time.
 */
export interface GuardrailCheck<P = unknown> {
  /** The valibot schema of the check's parameters in a config; a config whose parameters fail it is refused with a 400. */
  parameters: v.GenericSchema<unknown, P>;
  /** Runs the check on one request or answer with its parsed parameters. A check that throws fails, with the error in `hook_results`. */
  run(parameters: P, input: CheckInput): CheckResult | Promise<CheckResult>;
  /**
   * The error code a denial caused by this check answers with (default
   * `guardrail_denied`), so clients can tell it apart. Declare it in your
   * plugin's `errorCodes` with status 446; the guardrails plugin checks at boot.
   */
  denyCode?: string;
  /**
   * Parameter names whose values are credentials (a webhook's `headers`). Wherever the
   * gateway stores a guardrail or a config that uses the check, every string under them
   * is sealed at rest and masked in answers, while requests still use them.
   */
  credentials?: readonly string[];
  /**
   * Whether (and how) the check can judge a streamed answer as it arrives, for these parameters; absent
   * or null: it runs once, on the whole text, when the stream ends. See {@link StreamJudgement}.
   */
  stream?(parameters: P): StreamJudgement<P> | null;
}

/** Declares a check with its parameter type inferred from the schema. */
export function defineCheck<S extends v.GenericSchema>(check: {
  parameters: S;
  run(parameters: v.InferOutput<S>, input: CheckInput): CheckResult | Promise<CheckResult>;
  denyCode?: string;
  credentials?: readonly string[];
  stream?(parameters: v.InferOutput<S>): StreamJudgement<v.InferOutput<S>> | null;
}): GuardrailCheck<v.InferOutput<S>> {
  return check;
}

/** Part types whose `text` is text: chat's, and the Responses API's input and output text. */
const TEXT_PARTS: ReadonlySet<unknown> = new Set(['text', 'input_text', 'output_text']);

/** The text of one message's content: a string, or the text parts of a part array (chat, Responses and Messages parts alike). */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let out = '';
  for (const part of content) {
    if (part && typeof part === 'object' && TEXT_PARTS.has((part as { type?: unknown }).type) && typeof (part as { text?: unknown }).text === 'string') {
      out += (out === '' ? '' : '\n') + (part as { text: string }).text;
    }
  }
  return out;
}

/**
 * The text an input check sees for a request body (see `CheckInput.text`):
 * the last message's text (chat, Messages), the last input item's (Responses:
 * a message's text, or a function call's output), the prompt (completions),
 * the input (embeddings).
 */
export function requestText(route: string, body: Record<string, unknown>): string {
  if ((route === 'chat.completions' || route === 'messages' || route === 'messages.count_tokens') && Array.isArray(body.messages)) {
    const last = body.messages.at(-1) as { content?: unknown } | undefined;
    return contentText(last?.content);
  }
  if (route === 'responses') {
    if (typeof body.input === 'string') return body.input;
    const last = Array.isArray(body.input) ? (body.input.at(-1) as { content?: unknown; output?: unknown } | undefined) : undefined;
    return last === undefined ? '' : last.content !== undefined ? contentText(last.content) : contentText(last.output);
  }
  const field = route === 'embeddings' ? body.input : body.prompt;
  if (typeof field === 'string') return field;
  if (Array.isArray(field)) return field.filter((x) => typeof x === 'string').join('\n');
  return '';
}

/**
 * The text an output check sees for an answer: a chat or text completion's
 * choices, a Responses object's output text, a Messages answer's text blocks.
 */
export function responseText(answer: Record<string, unknown>): string {
  if (answer.object === 'response' && Array.isArray(answer.output)) {
    return (answer.output as Record<string, unknown>[])
      .filter((item) => item?.type === 'message')
      .map((item) => contentText(item.content))
      .filter((t) => t !== '')
      .join('\n');
  }
  if (answer.type === 'message' && Array.isArray(answer.content)) return contentText(answer.content);
  const choices = Array.isArray(answer.choices) ? answer.choices : [];
  return choices
    .map((c: Record<string, any>) => (typeof c?.text === 'string' ? c.text : contentText(c?.message?.content)))
    .filter((t) => t !== '')
    .join('\n');
}
