// @ts-check
/**
 * The `quill` provider: an example plugin package for switchyard-gateway whose upstream speaks a
 * wire format of its own, neither OpenAI's nor one the gateway bundles. docs/plugins.md ("A
 * provider with its own wire format") builds this file step by step.
 *
 * Quill's API (invented for the example):
 *   POST {base}/generate, key in x-quill-key
 *   {"prompt": "...", "max_tokens"?: N, "temperature"?: T, "stop"?: ["..."], "stream"?: true}
 *   → {"text": "...", "finish": "done" | "max_tokens" | "filtered", "tokens": {"in": N, "out": M, "cached": K}}
 *   → streamed (application/x-ndjson), a JSON object per line: {"delta": "Hel"} …, then
 *     {"done": {"finish": "done", "tokens": {...}}}, or {"failure": {...}} if it breaks off
 *   → an error: {"failure": {"reason": "...", "kind": "bad_input" | "auth" | "quota" | "server"}}, with its HTTP status
 */
import {
  addShapedRoutes,
  ChatChunkWriter,
  completionId,
  effectiveBody,
  errorAnswer,
  GatewayError,
  isObject,
  jsonAnswer,
  NDJSONParser,
  openAIErrorType,
  openAIUsage,
  parseOptions,
  readErrorJson,
  readJson,
  streamAnswer,
  toGatewayUsage,
  v,
  wantsUsage,
} from 'switchyard-gateway/sdk';

/** @typedef {import('switchyard-gateway/sdk').RequestContext} RequestContext */
/** @typedef {import('switchyard-gateway/sdk').Target} Target */
/** @typedef {import('switchyard-gateway/sdk').UpstreamResponse} UpstreamResponse */
/** @typedef {import('switchyard-gateway/sdk').GatewayResponse} GatewayResponse */
/** @typedef {import('switchyard-gateway/sdk').FinishReason} FinishReason */
/** @typedef {import('switchyard-gateway/sdk').OpenAIUsage} OpenAIUsage */

const NAME = 'quill';

const QuillOptions = v.strictObject({
  /** Where Quill's API lives; a target's `custom_host` replaces it. */
  baseURL: v.optional(v.pipe(v.string(), v.url('baseURL must be a URL')), 'https://api.quill.example/v1'),
  /** The key sent when the request's target carries no `api_key`. */
  apiKey: v.optional(v.pipe(v.string(), v.minLength(1, 'apiKey must not be empty'))),
});

/**
 * The `quill` provider: OpenAI chat completions, JSON and streamed, translated to Quill's
 * `/generate` and back. The Responses and Messages front doors reach it through chat.
 *
 * @param {v.InferInput<typeof QuillOptions>} [options]
 * @returns {import('switchyard-gateway/sdk').GatewayPlugin}
 */
export default function quill(options = {}) {
  const opts = parseOptions(NAME, QuillOptions, options);
  /** @type {import('switchyard-gateway/sdk').Provider} */
  const provider = {
    name: NAME,
    baseURL: opts.baseURL.replace(/\/$/, ''),
    authHeaders(target) {
      const key = typeof target.api_key === 'string' && target.api_key !== '' ? target.api_key : opts.apiKey;
      /** @type {Record<string, string>} */
      const headers = {};
      if (key !== undefined) headers['x-quill-key'] = key;
      return headers;
    },
    routes: {
      'chat.completions': {
        path: '/generate',
        body: (ctx, target) => JSON.stringify(toQuillRequest(chatBody(ctx, target))),
        response: quillResponse,
      },
    },
  };
  return {
    name: NAME,
    gatewayApi: '^2.0.0',
    state: [], // keeps nothing between requests (docs/security.md, "Declaring state")
    apply(api) {
      addShapedRoutes(api, ['chat.completions']);
      api.providers.add(NAME, provider);
    },
  };
}

/**
 * The chat body of this attempt: the client's (with the target's `override_params`), or the
 * one a front door (Responses, Messages) translated its request to.
 *
 * @param {RequestContext} ctx
 * @param {Target} target
 */
function chatBody(ctx, target) {
  const body = effectiveBody(ctx, target);
  if (body === null) throw new GatewayError('invalid_request', 'The request needs a JSON body.');
  return body;
}

/** A 400 in the gateway's envelope whose `param` names the field. */
const refuse = (/** @type {string} */ param, /** @type {string} */ message) => new GatewayError('invalid_request', message, { param });

/**
 * OpenAI chat body → Quill's. Sent: the conversation as one prompt, `max_completion_tokens`
 * (or `max_tokens`), `temperature`, `stop` (always a list), `stream`. Refused with a 400 naming
 * the field and the provider, because Quill cannot honour them: tools (and the older
 * `functions`), tool calls and results in the conversation, images and any other non-text
 * part, `n` > 1. Dropped: `tool_choice` (nothing to choose without tools), `top_p`, `seed`, the
 * penalties, `logit_bias`, `user`, `stream_options` (the gateway writes the usage chunk itself).
 * Quill serves one model per key, so `model` is not sent; the answer names the one asked for.
 *
 * @param {Record<string, unknown>} body
 */
export function toQuillRequest(body) {
  for (const field of ['tools', 'functions']) {
    const value = body[field];
    if (Array.isArray(value) && value.length > 0) throw refuse(field, `Provider "${NAME}" does not support tools ('${field}'): Quill has no function calling.`);
  }
  if (typeof body.n === 'number' && body.n > 1) throw refuse('n', `Provider "${NAME}" does not support n > 1 (got n = ${body.n}); send one request per choice.`);
  /** @type {Record<string, unknown>} */
  const out = { prompt: flatten(body.messages) };
  const maxTokens = body.max_completion_tokens ?? body.max_tokens;
  if (typeof maxTokens === 'number') out.max_tokens = maxTokens;
  if (typeof body.temperature === 'number') out.temperature = body.temperature;
  if (typeof body.stop === 'string') out.stop = [body.stop];
  else if (Array.isArray(body.stop) && body.stop.length > 0) out.stop = body.stop;
  if (body.stream === true) out.stream = true;
  return out;
}

/** Each chat role's label in the prompt (`developer` is OpenAI's newer name for `system`). */
const LABELS = new Map([
  ['system', 'System'],
  ['developer', 'System'],
  ['user', 'User'],
  ['assistant', 'Assistant'],
]);

/**
 * The conversation as Quill's one prompt: a paragraph per message, led by its role's label,
 * then `Assistant:` for Quill to continue. `[system "Be terse.", user "Hi"]` is
 * "System: Be terse.\n\nUser: Hi\n\nAssistant:".
 *
 * @param {unknown} messages
 * @returns {string}
 */
export function flatten(messages) {
  if (!Array.isArray(messages) || messages.length === 0) throw refuse('messages', "'messages' must be a non-empty array.");
  const paragraphs = messages.map((message, i) => {
    const at = `messages[${i}]`;
    if (!isObject(message)) throw refuse(at, `'${at}' must be an object.`);
    if (message.role === 'tool') throw refuse(`${at}.role`, `Provider "${NAME}" does not support tools: '${at}' is a tool result.`);
    if (Array.isArray(message.tool_calls) && message.tool_calls.length > 0) throw refuse(`${at}.tool_calls`, `Provider "${NAME}" does not support tools: '${at}' holds tool calls.`);
    const label = typeof message.role === 'string' ? LABELS.get(message.role) : undefined;
    if (label === undefined) throw refuse(`${at}.role`, `'${at}.role' must be system, developer, user or assistant for provider "${NAME}".`);
    return `${label}: ${textOf(message.content, `${at}.content`)}`;
  });
  return [...paragraphs, 'Assistant:'].join('\n\n');
}

/**
 * A message's text: a string, or its text parts one per line. An image, or any other part,
 * is refused, naming the part (`messages[0].content[1].type`).
 *
 * @param {unknown} content
 * @param {string} at
 * @returns {string}
 */
function textOf(content, at) {
  if (typeof content === 'string') return content;
  if (content === null || content === undefined) return '';
  if (!Array.isArray(content)) throw refuse(at, `'${at}' must be a string or an array of text parts.`);
  return content
    .map((part, j) => {
      if (isObject(part) && part.type === 'text' && typeof part.text === 'string') return part.text;
      const type = isObject(part) ? String(part.type) : typeof part;
      throw refuse(`${at}[${j}].type`, `Content part type '${type}' is not supported by provider "${NAME}": Quill takes text only.`);
    })
    .join('\n');
}

/**
 * Quill's `finish` → OpenAI's `finish_reason`.
 * @type {Map<string, FinishReason>}
 */
const FINISH = new Map([
  ['done', 'stop'],
  ['max_tokens', 'length'],
  ['filtered', 'content_filter'],
]);

/**
 * @param {unknown} finish
 * @returns {FinishReason}
 */
const finishReason = (finish) => (typeof finish === 'string' ? FINISH.get(finish) : undefined) ?? 'stop';

/**
 * Quill's `tokens` → OpenAI's usage. `in` counts the whole prompt, `cached` the part of it
 * Quill read from its cache (OpenAI's `prompt_tokens_details.cached_tokens`).
 *
 * @param {unknown} tokens
 * @returns {OpenAIUsage}
 */
export function quillUsage(tokens) {
  const t = isObject(tokens) ? tokens : {};
  const count = (/** @type {unknown} */ n) => (typeof n === 'number' && Number.isFinite(n) ? n : undefined);
  return openAIUsage(count(t.in) ?? 0, count(t.out) ?? 0, count(t.cached));
}

/**
 * Quill's answer → the client's: a failure in the gateway's error envelope, a stream as
 * OpenAI chunks, JSON as a `chat.completion`. A success sets `ctx.usage`, which the log,
 * the cost, the limits and the metrics read.
 *
 * @param {UpstreamResponse} upstream
 * @param {RequestContext} ctx
 * @param {Target} target
 * @returns {Promise<GatewayResponse>}
 */
async function quillResponse(upstream, ctx, target) {
  if (upstream.status < 200 || upstream.status >= 300) return quillError(upstream, await readErrorJson(upstream));
  const body = chatBody(ctx, target);
  const model = String(body.model ?? '');
  if (body.stream === true) {
    const onUsage = (/** @type {OpenAIUsage} */ usage) => void (ctx.usage = toGatewayUsage(usage));
    return streamAnswer(upstream, quillStream({ model, includeUsage: wantsUsage(ctx), onUsage }));
  }
  const answer = await readJson(upstream);
  if (!isObject(answer) || typeof answer.text !== 'string') throw new GatewayError('upstream_invalid_response', 'The upstream answer is not a Quill answer.');
  const usage = quillUsage(answer.tokens);
  ctx.usage = toGatewayUsage(usage);
  return jsonAnswer(upstream, upstream.status, {
    id: completionId(),
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{ index: 0, message: { role: 'assistant', content: answer.text, refusal: null }, logprobs: null, finish_reason: finishReason(answer.finish) }],
    usage,
  });
}

/** Quill's failure `kind` → the error envelope's `type`. */
const KIND_TYPES = new Map([
  ['bad_input', 'invalid_request_error'],
  ['auth', 'authentication_error'],
  ['quota', 'rate_limit_error'],
  ['server', 'server_error'],
]);

/**
 * A Quill failure (`{"failure": {"reason", "kind"}}`) as the envelope's fields: the reason as
 * the message, the kind as `code` and, mapped, as `type` (else the status's type).
 *
 * @param {unknown} failure
 * @param {number | null} status the HTTP status, or null for a failure line in a stream
 */
function failureFields(failure, status) {
  const f = isObject(failure) ? failure : {};
  const kind = typeof f.kind === 'string' ? f.kind : null;
  const reason = typeof f.reason === 'string' && f.reason !== '' ? f.reason : null;
  return {
    message: reason ?? (status === null ? 'The Quill stream failed.' : `Quill answered ${status}.`),
    type: (kind !== null ? KIND_TYPES.get(kind) : undefined) ?? (status === null ? 'server_error' : openAIErrorType(status)),
    code: kind,
  };
}

/**
 * An error answer in the gateway's envelope with Quill's status; `errorAnswer` passes
 * `retry-after` on (and adds `retry-after-ms`), so clients and the retry plugin wait as told.
 *
 * @param {UpstreamResponse} upstream
 * @param {unknown} json the error body, or null when it was not JSON
 */
function quillError(upstream, json) {
  return errorAnswer(upstream, failureFields(isObject(json) ? json.failure : null, upstream.status));
}

/**
 * Quill's NDJSON stream → OpenAI's chunks, as it arrives: the role first, a content chunk per
 * delta, then at `done` the finish chunk, the usage chunk (when the client asked for it) and
 * `[DONE]`. A `failure` line, a line that is not JSON, or an end without `done` becomes
 * OpenAI's in-band error event and `[DONE]`, so the client's SDK raises it instead of waiting.
 *
 * @param {{ model: string, includeUsage: boolean, onUsage: (usage: OpenAIUsage) => void }} options
 * @returns {import('switchyard-gateway/sdk').StreamTranslator}
 */
export function quillStream({ model, includeUsage, onUsage }) {
  const lines = new NDJSONParser();
  const chunks = new ChatChunkWriter({ model, includeUsage });
  let ended = false;
  const fail = (/** @type {{ message: string, type: string, code?: string | null }} */ error) => {
    ended = true;
    return chunks.error(error.message, error.type, error.code ?? null) + chunks.done();
  };
  const handle = (/** @type {import('switchyard-gateway/sdk').NDJSONLine} */ line) => {
    if (ended) return '';
    if (line.error !== undefined) return fail({ message: `Quill sent ${line.error}.`, type: 'upstream_error' });
    const event = line.value;
    if (!isObject(event)) return '';
    if (typeof event.delta === 'string') return chunks.role() + chunks.text(event.delta);
    if (event.failure !== undefined) return fail(failureFields(event.failure, null));
    if (isObject(event.done)) {
      const usage = quillUsage(event.done.tokens);
      onUsage(usage);
      ended = true;
      return chunks.finish(finishReason(event.done.finish)) + chunks.usage(usage) + chunks.done();
    }
    return ''; // a line this version does not know: skipped
  };
  const run = (/** @type {import('switchyard-gateway/sdk').NDJSONLine[]} */ batch) => batch.map(handle).join('');
  return {
    push: (chunk) => run(lines.push(chunk)),
    end() {
      const tail = run(lines.end());
      return ended ? tail : tail + fail({ message: 'The Quill stream ended before its done line.', type: 'upstream_error' });
    },
  };
}
