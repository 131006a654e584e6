import { GatewayError } from '../../core/index.js';
import { responseItemId } from './ids.js';
import { isObject } from '../json-object.js';

/**
 * The Responses API request translated to a chat completions body
 * (docs/formats.md, "The Responses door"). Pure: the conversation of a
 * `previous_response_id` arrives already loaded, as items.
 */

type Json = Record<string, unknown>;

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

function invalid(param: string, message: string): GatewayError {
  return new GatewayError('invalid_request', message, { param });
}

/** Request fields with no chat equivalent that change what is asked: refused rather than silently dropped. */
const REFUSED_FIELDS = ['background', 'prompt', 'conversation'] as const;

/**
 * The client's `input` as a list of items with ids: a string becomes one user
 * message; a message without `type` gets `type: "message"`; string content
 * becomes one `input_text` part (`output_text` for the assistant). Items keep
 * every field they came with. Ids are given to items that have none, so they
 * can be listed (`GET /v1/responses/{id}/input_items`).
 */
export function inputItems(input: unknown): Json[] {
  if (input === undefined || input === null) return [];
  if (typeof input === 'string') return [{ id: responseItemId('msg'), type: 'message', role: 'user', content: [{ type: 'input_text', text: input }] }];
  if (!Array.isArray(input)) throw invalid('input', "'input' must be a string or an array of input items.");
  return input.map((item: unknown, i: number) => {
    if (!isObject(item)) throw invalid(`input[${i}]`, `'input[${i}]' must be an object.`);
    const type = item.type ?? 'message';
    if (type !== 'message') return typeof item.id === 'string' ? { ...item } : { id: responseItemId(type === 'function_call_output' ? 'fco' : 'item'), ...item };
    if (typeof item.role !== 'string') throw invalid(`input[${i}].role`, `'input[${i}].role' is required: user, assistant, system or developer.`);
    const content = typeof item.content === 'string' ? [{ type: item.role === 'assistant' ? 'output_text' : 'input_text', text: item.content }] : item.content;
    return { id: typeof item.id === 'string' ? item.id : responseItemId('msg'), ...item, type: 'message', content };
  });
}

/** What the chat body is built from besides the client's request. */
export interface ChatRequestOptions {
  /** Provider name, for error messages. */
  provider: string;
  /** The items of the conversation so far (earlier turns' input and output), oldest first; empty for none. */
  history: readonly Json[];
  /** This turn's input items (from {@link inputItems}), possibly shortened by truncation. */
  input: readonly Json[];
}

/**
 * A Responses API body → a chat completions body. Mapped: `instructions`
 * (a system message first), the items (messages with text, image and file
 * parts, function calls, function call outputs; reasoning items are dropped),
 * function `tools`, `tool_choice`, `parallel_tool_calls`, `text.format`
 * (JSON schema or JSON object), `reasoning.effort` (as `reasoning_effort`),
 * `max_output_tokens` (as `max_tokens`), `temperature`, `top_p`, `user`,
 * `stream` (with the usage chunk on) and `include: ["message.output_text.logprobs"]`
 * (with `top_logprobs`). Dropped: `store`, `metadata`, `truncation`,
 * `previous_response_id` (the gateway applies them), `service_tier`,
 * `safety_identifier`, `prompt_cache_key`. Refused with a 400: hosted tools
 * (web search, file search, computer use, MCP…), `background`, `prompt`,
 * `conversation` and `item_reference` items.
 */
export function toChatRequest(body: Json, options: ChatRequestOptions): Json {
  const { provider } = options;
  for (const field of REFUSED_FIELDS) {
    const value = body[field];
    if (value !== undefined && value !== null && value !== false) {
      throw invalid(field, `'${field}' is not supported by provider "${provider}" through the Responses API translation.`);
    }
  }
  const messages: Json[] = [];
  const instructions = body.instructions;
  if (typeof instructions === 'string' && instructions !== '') messages.push({ role: 'system', content: instructions });
  else if (Array.isArray(instructions)) appendItems(messages, inputItems(instructions), 'instructions', provider);
  appendItems(messages, options.history, 'previous_response_id', provider);
  appendItems(messages, options.input, 'input', provider);
  if (messages.length === 0) throw invalid('input', "'input' is required: a string or at least one input item.");

  const out: Json = { model: body.model, messages };
  const tools = mapTools(body.tools, provider);
  if (tools.length > 0) {
    out.tools = tools;
    const choice = mapToolChoice(body.tool_choice, provider);
    if (choice !== undefined) out.tool_choice = choice;
    if (typeof body.parallel_tool_calls === 'boolean') out.parallel_tool_calls = body.parallel_tool_calls;
  }
  const format = isObject(body.text) ? body.text.format : undefined;
  if (isObject(format)) {
    if (format.type === 'json_schema') {
      if (!isObject(format.schema)) throw invalid('text.format.schema', "'text.format.schema' must be a JSON schema object.");
      const spec: Json = { name: typeof format.name === 'string' ? format.name : 'response', schema: format.schema };
      if (typeof format.description === 'string') spec.description = format.description;
      if (typeof format.strict === 'boolean') spec.strict = format.strict;
      out.response_format = { type: 'json_schema', json_schema: spec };
    } else if (format.type === 'json_object') {
      out.response_format = { type: 'json_object' };
    } else if (format.type !== 'text') {
      throw invalid('text.format.type', "'text.format.type' must be text, json_schema or json_object.");
    }
  }
  const effort = isObject(body.reasoning) ? body.reasoning.effort : undefined;
  if (typeof effort === 'string') out.reasoning_effort = effort;
  const max = num(body.max_output_tokens);
  if (max !== undefined) out.max_tokens = max;
  for (const field of ['temperature', 'top_p'] as const) if (num(body[field]) !== undefined) out[field] = body[field];
  if (typeof body.user === 'string') out.user = body.user;
  if (Array.isArray(body.include) && body.include.includes('message.output_text.logprobs')) {
    out.logprobs = true;
    if (num(body.top_logprobs) !== undefined) out.top_logprobs = body.top_logprobs;
  }
  if (body.stream === true) {
    out.stream = true;
    // The door reports usage on response.completed, so it always asks for the usage chunk.
    out.stream_options = { include_usage: true };
  }
  return out;
}

/** Appends chat messages for items: consecutive function calls join the assistant message before them. */
function appendItems(messages: Json[], items: readonly Json[], where: string, provider: string): void {
  items.forEach((item, i) => {
    const at = `${where}[${i}]`;
    switch (item.type ?? 'message') {
      case 'message': {
        const role = item.role;
        if (role === 'assistant') {
          messages.push({ role: 'assistant', content: assistantText(item.content, at) });
        } else if (role === 'user' || role === 'system' || role === 'developer') {
          messages.push({ role, content: userContent(item.content, at, provider) });
        } else {
          throw invalid(`${at}.role`, `'${at}.role' must be user, assistant, system or developer.`);
        }
        break;
      }
      case 'function_call': {
        if (typeof item.call_id !== 'string' || typeof item.name !== 'string') throw invalid(at, `'${at}' needs call_id and name.`);
        const call = { id: item.call_id, type: 'function', function: { name: item.name, arguments: typeof item.arguments === 'string' ? item.arguments : JSON.stringify(item.arguments ?? {}) } };
        const last = messages.at(-1);
        if (last !== undefined && last.role === 'assistant') {
          const calls = Array.isArray(last.tool_calls) ? last.tool_calls : (last.tool_calls = []);
          (calls as Json[]).push(call);
        } else {
          messages.push({ role: 'assistant', content: null, tool_calls: [call] });
        }
        break;
      }
      case 'function_call_output': {
        if (typeof item.call_id !== 'string') throw invalid(`${at}.call_id`, `'${at}.call_id' is required.`);
        messages.push({ role: 'tool', tool_call_id: item.call_id, content: toolOutput(item.output, at, provider) });
        break;
      }
      case 'reasoning':
        // Reasoning a model produced cannot be replayed to another model's chat API: dropped.
        break;
      case 'item_reference':
        throw invalid(at, `'${at}': item_reference is not supported by provider "${provider}" through the Responses API translation; send the item itself.`);
      default:
        throw invalid(`${at}.type`, `Input item type '${String(item.type)}' is not supported by provider "${provider}" through the Responses API translation.`);
    }
  });
}

/** An assistant message's text: `output_text` (and `refusal`) parts joined; null when it has none. */
function assistantText(content: unknown, at: string): string | null {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw invalid(`${at}.content`, `'${at}.content' must be a string or an array of content parts.`);
  let text = '';
  for (const part of content) {
    if (!isObject(part)) continue;
    if ((part.type === 'output_text' || part.type === 'input_text' || part.type === 'text') && typeof part.text === 'string') text += part.text;
    else if (part.type === 'refusal' && typeof part.refusal === 'string') text += part.refusal;
  }
  return text === '' ? null : text;
}

/** A user, system or developer message's content as chat content: a string, or text, image and file parts. */
function userContent(content: unknown, at: string, provider: string): string | Json[] {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw invalid(`${at}.content`, `'${at}.content' must be a string or an array of content parts.`);
  const parts = content.map((part: unknown, j: number) => contentPart(part, `${at}.content[${j}]`, provider));
  // One plain text part is sent as a string: the form every chat provider takes.
  const only = parts.length === 1 ? parts[0]! : undefined;
  return only !== undefined && only.type === 'text' && only.cache_control === undefined ? (only.text as string) : parts;
}

function contentPart(part: unknown, at: string, provider: string): Json {
  if (!isObject(part)) throw invalid(at, `'${at}' must be a content part object.`);
  let out: Json;
  switch (part.type) {
    case 'input_text':
    case 'output_text':
    case 'text':
      if (typeof part.text !== 'string') throw invalid(`${at}.text`, `'${at}.text' must be a string.`);
      out = { type: 'text', text: part.text };
      break;
    case 'input_image': {
      if (typeof part.image_url !== 'string') {
        throw invalid(`${at}.image_url`, `'${at}.image_url' is required (a URL or a data URL); file_id is not supported by provider "${provider}" through the Responses API translation.`);
      }
      const image: Json = { url: part.image_url };
      if (typeof part.detail === 'string') image.detail = part.detail;
      out = { type: 'image_url', image_url: image };
      break;
    }
    case 'input_file': {
      const file: Json = {};
      if (typeof part.file_data === 'string') file.file_data = part.file_data;
      else if (typeof part.file_url === 'string') file.file_url = part.file_url;
      else throw invalid(at, `'${at}' needs file_data or file_url; file_id is not supported by provider "${provider}" through the Responses API translation.`);
      if (typeof part.filename === 'string') file.filename = part.filename;
      out = { type: 'file', file };
      break;
    }
    default:
      throw invalid(`${at}.type`, `Content part type '${String(part.type)}' is not supported by provider "${provider}" through the Responses API translation.`);
  }
  // Prompt-caching markers travel on to the providers that read them (the Anthropic family).
  if (isObject(part.cache_control)) out.cache_control = part.cache_control;
  return out;
}

/** A function call output: a string, or parts (their text joined; images kept as parts). */
function toolOutput(output: unknown, at: string, provider: string): string | Json[] {
  if (typeof output === 'string') return output;
  if (Array.isArray(output)) return output.map((part: unknown, j: number) => contentPart(part, `${at}.output[${j}]`, provider));
  if (output === undefined || output === null) return '';
  return JSON.stringify(output);
}

function mapTools(tools: unknown, provider: string): Json[] {
  if (tools === undefined || tools === null) return [];
  if (!Array.isArray(tools)) throw invalid('tools', "'tools' must be an array.");
  return tools.map((tool: unknown, i: number) => {
    if (!isObject(tool) || tool.type !== 'function') {
      const type = isObject(tool) ? String(tool.type) : typeof tool;
      throw invalid(`tools[${i}].type`, `Tool type '${type}' is not supported by provider "${provider}" through the Responses API translation (function tools only).`);
    }
    if (typeof tool.name !== 'string' || tool.name === '') throw invalid(`tools[${i}].name`, `'tools[${i}].name' is required.`);
    const fn: Json = { name: tool.name };
    if (typeof tool.description === 'string') fn.description = tool.description;
    fn.parameters = isObject(tool.parameters) ? tool.parameters : { type: 'object', properties: {} };
    if (typeof tool.strict === 'boolean') fn.strict = tool.strict;
    return { type: 'function', function: fn };
  });
}

function mapToolChoice(choice: unknown, provider: string): unknown {
  if (choice === undefined || choice === null) return undefined;
  if (choice === 'none' || choice === 'auto' || choice === 'required') return choice;
  if (isObject(choice) && choice.type === 'function' && typeof choice.name === 'string') return { type: 'function', function: { name: choice.name } };
  throw invalid('tool_choice', `'tool_choice' must be none, auto, required or {"type":"function","name":…} for provider "${provider}" through the Responses API translation.`);
}
