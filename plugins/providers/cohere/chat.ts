import {
  completionId,
  errorAnswer,
  type FinishReason,
  GatewayError,
  type GatewayResponse,
  isObject,
  openAIUsage,
  type OpenAIUsage,
  type UpstreamResponse,
} from '../../../sdk/index.js';

/**
 * OpenAI chat ⇄ Cohere Chat v2 (`POST /v2/chat`, shared/providers/cohere.md §4),
 * pure functions: nothing here reads a context or a target.
 */

type Json = Record<string, unknown>;

export { isObject };

const invalid = (param: string, message: string) => new GatewayError('invalid_request', message, { param });

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** Cohere `finish_reason` → OpenAI. `ERROR_TOXIC` (a refusal for unsafe content) is a content filter; ERROR and TIMEOUT end as `stop`. */
const FINISH: Readonly<Record<string, FinishReason>> = Object.freeze({
  COMPLETE: 'stop',
  STOP_SEQUENCE: 'stop',
  MAX_TOKENS: 'length',
  TOOL_CALL: 'tool_calls',
  ERROR_TOXIC: 'content_filter',
  ERROR: 'stop',
  TIMEOUT: 'stop',
});

export function cohereFinish(reason: unknown): FinishReason {
  return (typeof reason === 'string' ? FINISH[reason] : undefined) ?? 'stop';
}

/**
 * OpenAI chat body → Cohere v2 chat body. Mapped: messages (system/developer →
 * system; user text and image parts; assistant content + tool_calls; tool
 * results), tools, tool_choice (required → REQUIRED, none → NONE, a named
 * function → REQUIRED with only that tool), max_completion_tokens ?? max_tokens,
 * temperature, seed, penalties, stop → stop_sequences, top_p → p, top_k → k,
 * response_format (json_object, json_schema → json_object + json_schema),
 * logprobs. Dropped: logit_bias, top_logprobs, parallel_tool_calls, user,
 * stream_options (usage always comes), service_tier, store, metadata. n > 1 is a 400.
 */
export function toCohereChat(body: Json, provider: string, stream: boolean): Json {
  if (typeof body.n === 'number' && body.n > 1) throw invalid('n', `Provider "${provider}" does not support n > 1 (got n = ${body.n}); send one request per choice.`);
  const out: Json = { model: body.model, messages: mapMessages(body.messages, provider) };
  const maxTokens = num(body.max_completion_tokens) ?? num(body.max_tokens);
  if (maxTokens !== undefined) out.max_tokens = maxTokens;
  for (const field of ['temperature', 'seed', 'frequency_penalty', 'presence_penalty'] as const) {
    const value = num(body[field]);
    if (value !== undefined) out[field] = value;
  }
  if (num(body.top_p) !== undefined) out.p = body.top_p;
  if (num(body.top_k) !== undefined) out.k = body.top_k;
  if (typeof body.stop === 'string') out.stop_sequences = [body.stop];
  else if (Array.isArray(body.stop) && body.stop.length > 0) out.stop_sequences = body.stop;
  if (body.logprobs === true) out.logprobs = true;

  let tools = Array.isArray(body.tools) && body.tools.length > 0 ? (body.tools as unknown[]) : undefined;
  if (tools !== undefined) {
    tools.forEach((t, i) => {
      if (!isObject(t) || t.type !== 'function' || !isObject(t.function)) throw invalid(`tools[${i}]`, `'tools[${i}]' must be a function tool on provider "${provider}".`);
    });
    const choice = body.tool_choice;
    if (choice === 'required') out.tool_choice = 'REQUIRED';
    else if (choice === 'none') out.tool_choice = 'NONE';
    else if (isObject(choice)) {
      const name = isObject(choice.function) ? choice.function.name : undefined;
      if (typeof name !== 'string') throw invalid('tool_choice', `'tool_choice' must be none, auto, required or a named function for provider "${provider}".`);
      tools = tools.filter((t) => ((t as Json).function as Json).name === name);
      if (tools.length === 0) throw invalid('tool_choice', `'tool_choice' names the function "${name}", which is not among the tools.`);
      out.tool_choice = 'REQUIRED';
    }
    out.tools = tools.map((t) => {
      const fn = (t as Json).function as Json;
      const def: Json = { name: fn.name, parameters: isObject(fn.parameters) ? fn.parameters : { type: 'object', properties: {} } };
      if (typeof fn.description === 'string') def.description = fn.description;
      return { type: 'function', function: def };
    });
  }

  const format = body.response_format;
  if (isObject(format)) {
    if (format.type === 'json_object') out.response_format = { type: 'json_object' };
    else if (format.type === 'json_schema') {
      const spec = format.json_schema;
      if (!isObject(spec) || !isObject(spec.schema)) throw invalid('response_format.json_schema.schema', `Provider "${provider}" needs 'response_format.json_schema.schema' (a JSON schema object).`);
      out.response_format = { type: 'json_object', json_schema: spec.schema };
    }
  }
  out.stream = stream;
  return out;
}

function textOf(content: unknown, where: string, provider: string): string {
  if (typeof content === 'string') return content;
  if (content == null) return '';
  if (!Array.isArray(content)) throw invalid(where, `'${where}' must be a string or an array of text parts.`);
  return content
    .map((part: unknown, j: number) => {
      if (!isObject(part) || part.type !== 'text' || typeof part.text !== 'string') throw invalid(`${where}[${j}]`, `'${where}[${j}]' must be a text part for provider "${provider}".`);
      return part.text;
    })
    .join('');
}

function mapMessages(input: unknown, provider: string): Json[] {
  if (!Array.isArray(input)) throw invalid('messages', "'messages' is required and must be an array.");
  return input.map((message: unknown, i: number): Json => {
    const where = `messages[${i}]`;
    if (!isObject(message)) throw invalid(where, `'${where}' must be an object.`);
    switch (message.role) {
      case 'system':
      case 'developer':
        return { role: 'system', content: textOf(message.content, `${where}.content`, provider) };
      case 'user': {
        if (typeof message.content === 'string') return { role: 'user', content: message.content };
        if (!Array.isArray(message.content)) throw invalid(`${where}.content`, `'${where}.content' must be a string or an array of content parts.`);
        const parts = message.content.map((part: unknown, j: number): Json => {
          const at = `${where}.content[${j}]`;
          if (isObject(part) && part.type === 'text' && typeof part.text === 'string') return { type: 'text', text: part.text };
          if (isObject(part) && part.type === 'image_url') {
            const image = part.image_url;
            const url = typeof image === 'string' ? image : isObject(image) ? image.url : undefined;
            if (typeof url !== 'string') throw invalid(`${at}.image_url.url`, `'${at}.image_url.url' must be a string.`);
            const img: Json = { url };
            if (isObject(image) && typeof image.detail === 'string') img.detail = image.detail;
            return { type: 'image_url', image_url: img };
          }
          throw invalid(`${at}.type`, `Content part type '${String(isObject(part) ? part.type : typeof part)}' is not supported by provider "${provider}".`);
        });
        return { role: 'user', content: parts };
      }
      case 'assistant': {
        const out: Json = { role: 'assistant' };
        const text = textOf(message.content, `${where}.content`, provider);
        if (text !== '') out.content = text;
        if (Array.isArray(message.tool_calls) && message.tool_calls.length > 0) {
          out.tool_calls = message.tool_calls.map((call: unknown, j: number) => {
            const fn = isObject(call) ? call.function : undefined;
            if (!isObject(call) || !isObject(fn)) throw invalid(`${where}.tool_calls[${j}]`, `'${where}.tool_calls[${j}]' must be a function tool call.`);
            return { id: call.id, type: 'function', function: { name: fn.name, arguments: typeof fn.arguments === 'string' ? fn.arguments : JSON.stringify(fn.arguments ?? {}) } };
          });
        }
        return out;
      }
      case 'tool':
        return { role: 'tool', tool_call_id: message.tool_call_id, content: textOf(message.content, `${where}.content`, provider) };
      default:
        throw invalid(`${where}.role`, `'${where}.role' must be one of system, developer, user, assistant, tool for provider "${provider}".`);
    }
  });
}

/** Cohere usage → OpenAI: raw `tokens` preferred over `billed_units`; `cached_tokens` → cached. */
export function cohereUsage(usage: unknown): OpenAIUsage {
  const u = isObject(usage) ? usage : {};
  const tokens = isObject(u.tokens) ? u.tokens : {};
  const billed = isObject(u.billed_units) ? u.billed_units : {};
  const input = num(tokens.input_tokens) ?? num(billed.input_tokens) ?? 0;
  const output = num(tokens.output_tokens) ?? num(billed.output_tokens) ?? 0;
  return openAIUsage(input, output, num(u.cached_tokens) ?? 0);
}

/** A Cohere chat response → `chat.completion` and its usage. */
export function fromCohereChat(json: unknown, model: string): { completion: Json; usage: OpenAIUsage } {
  if (!isObject(json) || !isObject(json.message)) throw new GatewayError('upstream_invalid_response', 'The upstream answer is not a Cohere chat response.');
  const msg = json.message;
  let text = '';
  if (typeof msg.content === 'string') text = msg.content;
  else if (Array.isArray(msg.content)) for (const c of msg.content) if (isObject(c) && c.type === 'text' && typeof c.text === 'string') text += c.text;
  const calls = Array.isArray(msg.tool_calls)
    ? msg.tool_calls.flatMap((c: unknown) => {
        if (!isObject(c) || !isObject(c.function)) return [];
        const args = c.function.arguments;
        return [{ id: String(c.id ?? completionId('call_')), type: 'function', function: { name: String(c.function.name), arguments: typeof args === 'string' ? args : JSON.stringify(args ?? {}) } }];
      })
    : [];
  // `refusal` is required (a string or null) on every choice's message by OpenAI's schema.
  const message: Json = { role: 'assistant', content: calls.length > 0 && text === '' ? null : text, refusal: null };
  if (calls.length > 0) message.tool_calls = calls;
  const usage = cohereUsage(json.usage);
  return {
    completion: {
      id: typeof json.id === 'string' && json.id !== '' ? json.id : completionId(),
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model,
      choices: [{ index: 0, message, logprobs: null, finish_reason: cohereFinish(json.finish_reason) }],
      usage,
    },
    usage,
  };
}

/** A Cohere error body (`{"message": …}`) in the gateway envelope, upstream status and retry hints kept. */
export function cohereErrorAnswer(upstream: UpstreamResponse, json: unknown): GatewayResponse {
  const message = isObject(json) && typeof json.message === 'string' && json.message !== '' ? json.message : `The upstream answered ${upstream.status}.`;
  return errorAnswer(upstream, { message, type: 'cohere_error', code: String(upstream.status) });
}
