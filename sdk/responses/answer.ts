import { responseItemId } from './ids.js';
import { isObject } from '../json-object.js';

/**
 * Response objects (the Responses API's answer) built from chat completions:
 * the shell every answer starts from, the usage, and the output items of a
 * completed `chat.completion`. Pure.
 */

type Json = Record<string, unknown>;

const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

/** What a response object is made of besides the answer: its id, time, the request and the model. */
export interface ResponseMeta {
  /** The response id (`resp_…`, see `responseId`). */
  id: string;
  /** Unix seconds. */
  createdAt: number;
  /** The client's Responses request. */
  request: Json;
  /** The model named in the answer (the request's until the upstream names one). */
  model: string;
}

/**
 * The reasoning summary a Responses request asks for: `reasoning.summary`, else
 * `reasoning.generate_summary` (its older name, which the spec's response object
 * shows); null when it asks for none.
 */
export function requestedSummary(request: Json): string | null {
  const r = request.reasoning;
  if (!isObject(r)) return null;
  if (typeof r.summary === 'string') return r.summary;
  return typeof r.generate_summary === 'string' ? r.generate_summary : null;
}

/**
 * A response object with no output yet (`status: in_progress`): every field
 * of the spec's Model response, the request's settings echoed with their
 * defaults. `response.created` carries it, and the final object is it completed.
 */
export function responseShell(meta: ResponseMeta): Json {
  const r = meta.request;
  const reasoning = isObject(r.reasoning) ? r.reasoning : {};
  const summary = requestedSummary(r);
  return {
    id: meta.id,
    object: 'response',
    created_at: meta.createdAt,
    status: 'in_progress',
    background: false,
    error: null,
    incomplete_details: null,
    instructions: r.instructions ?? null,
    max_output_tokens: typeof r.max_output_tokens === 'number' ? r.max_output_tokens : null,
    model: meta.model,
    output: [],
    parallel_tool_calls: r.parallel_tool_calls !== false,
    previous_response_id: typeof r.previous_response_id === 'string' ? r.previous_response_id : null,
    // One setting under both its names: a client reading either sees what was asked.
    reasoning: { effort: reasoning.effort ?? null, summary, generate_summary: summary },
    store: r.store !== false,
    temperature: typeof r.temperature === 'number' ? r.temperature : 1,
    text: isObject(r.text) && isObject(r.text.format) ? r.text : { format: { type: 'text' } },
    tool_choice: r.tool_choice ?? 'auto',
    tools: Array.isArray(r.tools) ? r.tools : [],
    top_p: typeof r.top_p === 'number' ? r.top_p : 1,
    truncation: r.truncation === 'auto' ? 'auto' : 'disabled',
    usage: null,
    user: typeof r.user === 'string' ? r.user : null,
    metadata: isObject(r.metadata) ? r.metadata : {},
  };
}

/** Chat usage (`prompt_tokens`, …) → Responses usage (`input_tokens`, …); null when there is none. */
export function responsesUsage(usage: unknown): Json | null {
  if (!isObject(usage)) return null;
  const input = num(usage.prompt_tokens);
  const output = num(usage.completion_tokens);
  const details = isObject(usage.prompt_tokens_details) ? usage.prompt_tokens_details : {};
  const out = isObject(usage.completion_tokens_details) ? usage.completion_tokens_details : {};
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: num(details.cached_tokens) },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: num(out.reasoning_tokens) },
    total_tokens: typeof usage.total_tokens === 'number' ? usage.total_tokens : input + output,
  };
}

/** How a chat `finish_reason` ends a response: its status and, when incomplete, why. */
export function finishStatus(finish: unknown): { status: 'completed' | 'incomplete'; reason: string | null } {
  if (finish === 'length') return { status: 'incomplete', reason: 'max_output_tokens' };
  if (finish === 'content_filter') return { status: 'incomplete', reason: 'content_filter' };
  return { status: 'completed', reason: null };
}

/** Chat `logprobs.content` → the `logprobs` of an `output_text` part. */
export function outputLogprobs(logprobs: unknown): Json[] {
  if (!isObject(logprobs) || !Array.isArray(logprobs.content)) return [];
  return (logprobs.content as unknown[]).filter(isObject).map((t) => ({
    token: t.token,
    logprob: t.logprob,
    bytes: Array.isArray(t.bytes) ? t.bytes : [],
    top_logprobs: Array.isArray(t.top_logprobs) ? t.top_logprobs : [],
  }));
}

/**
 * A `chat.completion` → the completed response object: a reasoning item
 * (from `reasoning_content` or thinking blocks, when the adapter passed them on), a message item
 * (text, or a refusal), one `function_call` item per tool call, the status
 * from the finish reason and the usage.
 */
export function fromChatCompletion(completion: Json, meta: ResponseMeta): Json {
  const response = responseShell({ ...meta, model: typeof completion.model === 'string' && completion.model !== '' ? completion.model : meta.model });
  const choice = Array.isArray(completion.choices) && isObject(completion.choices[0]) ? completion.choices[0] : {};
  const message = isObject(choice.message) ? choice.message : {};
  const { status, reason } = finishStatus(choice.finish_reason);
  const output: Json[] = [];
  const reasoning = reasoningText(message);
  if (reasoning !== '') output.push({ id: responseItemId('rs'), type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: reasoning }] });
  const content: Json[] = [];
  if (typeof message.content === 'string' && message.content !== '') {
    content.push({ type: 'output_text', text: message.content, annotations: [], logprobs: outputLogprobs(choice.logprobs) });
  }
  if (typeof message.refusal === 'string' && message.refusal !== '') content.push({ type: 'refusal', refusal: message.refusal });
  if (content.length > 0) output.push({ id: responseItemId('msg'), type: 'message', status, role: 'assistant', content });
  if (Array.isArray(message.tool_calls)) {
    for (const call of message.tool_calls as unknown[]) {
      if (!isObject(call) || !isObject(call.function)) continue;
      output.push({
        id: responseItemId('fc'),
        type: 'function_call',
        status: 'completed',
        call_id: call.id,
        name: call.function.name,
        arguments: typeof call.function.arguments === 'string' ? call.function.arguments : '{}',
      });
    }
  }
  response.status = status;
  response.incomplete_details = reason === null ? null : { reason };
  response.output = output;
  response.usage = responsesUsage(completion.usage);
  return response;
}

/**
 * The reasoning a chat message carries: `reasoning_content`, else its `thinking`
 * blocks joined (`content_blocks`, which the Anthropic and Gemini adapters fill
 * instead for a non-strict target's whole answer; their streams send
 * `reasoning_content` deltas).
 */
function reasoningText(message: Json): string {
  if (typeof message.reasoning_content === 'string') return message.reasoning_content;
  if (!Array.isArray(message.content_blocks)) return '';
  let text = '';
  for (const block of message.content_blocks as unknown[]) if (isObject(block) && block.type === 'thinking' && typeof block.thinking === 'string') text += block.thinking;
  return text;
}

/** The text of a response's `output_text` parts, joined (what the SDKs call `output_text`). */
export function outputText(response: Json): string {
  let text = '';
  for (const item of Array.isArray(response.output) ? (response.output as unknown[]) : []) {
    if (!isObject(item) || item.type !== 'message' || !Array.isArray(item.content)) continue;
    for (const part of item.content as unknown[]) if (isObject(part) && part.type === 'output_text' && typeof part.text === 'string') text += part.text;
  }
  return text;
}
