import { GatewayError } from '../../core/index.js';
import { isObject } from '../json-object.js';

/**
 * Anthropic's Messages request translated to a chat completions body, for
 * providers that do not speak it (docs/formats.md, "The Messages door").
 * Pure: the caller says whether the target reads `cache_control` and `thinking`.
 */

type Json = Record<string, unknown>;

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

function invalid(param: string, message: string): GatewayError {
  return new GatewayError('invalid_request', message, { param });
}

/** How a Messages body becomes a chat body for one target. */
export interface MessagesToChatOptions {
  /** Provider name, for error messages. */
  provider: string;
  /** The target reads `cache_control` on chat content parts (the Anthropic family: prompt caching); else they are dropped. */
  cacheControl: boolean;
  /** The target may take `thinking` (its `strict_reference_compliance` is false); else it is dropped. */
  thinking: boolean;
}

/**
 * A Messages body → a chat completions body. Mapped: `system` (a string, or
 * text blocks keeping `cache_control`) as the first message; each turn's
 * blocks: `text`, `image` (base64 → a data URL, url), `document` (base64 PDF,
 * url, plain text), `tool_use` → the assistant's `tool_calls`, `tool_result`
 * → `tool` messages (placed right after the calls they answer, before the
 * turn's other blocks); `tools` (custom ones) → function tools;
 * `tool_choice` auto/any/tool/none (+ `disable_parallel_tool_use` →
 * `parallel_tool_calls: false`); `max_tokens`, `temperature`, `top_p`,
 * `top_k`, `stop_sequences` → `stop`, `metadata.user_id` → `user`,
 * `output_config.format` → `response_format`, `stream` (usage chunk on).
 * `thinking` only for targets that may take it. Dropped: `thinking` and
 * `redacted_thinking` blocks (another model's reasoning cannot be replayed),
 * top-level `cache_control`, `service_tier`, `container`, `mcp_servers`.
 * Refused with a 400: server tools (web search, code execution, …) and
 * content blocks a chat API cannot carry (`search_result`, `container_upload`).
 */
export function messagesToChat(body: Json, options: MessagesToChatOptions): Json {
  const { provider } = options;
  for (const field of ['mcp_servers', 'container'] as const) {
    if (body[field] !== undefined && body[field] !== null) throw invalid(field, `'${field}' is not supported by provider "${provider}" through the Messages API translation.`);
  }
  const messages: Json[] = [];
  const system = systemContent(body.system, options);
  if (system !== null) messages.push({ role: 'system', content: system });
  if (!Array.isArray(body.messages)) throw invalid('messages', "'messages' is required and must be an array.");
  body.messages.forEach((message: unknown, i: number) => turn(messages, message, `messages[${i}]`, options));

  const out: Json = { model: body.model, messages };
  const max = num(body.max_tokens);
  if (max !== undefined) out.max_tokens = max;
  for (const field of ['temperature', 'top_p', 'top_k'] as const) if (num(body[field]) !== undefined) out[field] = body[field];
  if (Array.isArray(body.stop_sequences) && body.stop_sequences.length > 0) out.stop = body.stop_sequences;
  if (isObject(body.metadata) && typeof body.metadata.user_id === 'string') out.user = body.metadata.user_id;
  const tools = mapTools(body.tools, provider);
  if (tools.length > 0) out.tools = tools;
  if (isObject(body.tool_choice)) {
    const tc = body.tool_choice;
    if (tc.type === 'auto') out.tool_choice = 'auto';
    else if (tc.type === 'any') out.tool_choice = 'required';
    else if (tc.type === 'none') out.tool_choice = 'none';
    else if (tc.type === 'tool' && typeof tc.name === 'string') out.tool_choice = { type: 'function', function: { name: tc.name } };
    else throw invalid('tool_choice', `'tool_choice' must be auto, any, tool or none (got '${String(tc.type)}').`);
    if (tc.disable_parallel_tool_use === true && tools.length > 0) out.parallel_tool_calls = false;
  }
  const format = isObject(body.output_config) ? body.output_config.format : undefined;
  if (isObject(format) && format.type === 'json_schema' && isObject(format.schema)) {
    out.response_format = { type: 'json_schema', json_schema: { name: 'output', schema: format.schema } };
  }
  if (options.thinking && isObject(body.thinking)) out.thinking = body.thinking;
  if (body.stream === true) {
    out.stream = true;
    // The door reports usage in message_delta, so it always asks for the usage chunk.
    out.stream_options = { include_usage: true };
  }
  return out;
}

function systemContent(system: unknown, options: MessagesToChatOptions): string | Json[] | null {
  if (system === undefined || system === null) return null;
  if (typeof system === 'string') return system === '' ? null : system;
  if (!Array.isArray(system)) throw invalid('system', "'system' must be a string or an array of text blocks.");
  const parts = system.map((block: unknown, i: number) => {
    if (!isObject(block) || block.type !== 'text' || typeof block.text !== 'string') throw invalid(`system[${i}]`, `'system[${i}]' must be a text block.`);
    return textPart(block, options);
  });
  if (parts.length === 0) return null;
  return parts.every((p) => p.cache_control === undefined) ? parts.map((p) => p.text).join('\n') : parts;
}

function textPart(block: Json, options: MessagesToChatOptions): Json {
  const part: Json = { type: 'text', text: block.text };
  if (options.cacheControl && isObject(block.cache_control)) part.cache_control = block.cache_control;
  return part;
}

/** One Messages turn → chat messages (appended). */
function turn(out: Json[], message: unknown, at: string, options: MessagesToChatOptions): void {
  if (!isObject(message)) throw invalid(at, `'${at}' must be an object.`);
  const role = message.role;
  if (role !== 'user' && role !== 'assistant') throw invalid(`${at}.role`, `'${at}.role' must be user or assistant.`);
  const blocks: Json[] = typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : Array.isArray(message.content) ? (message.content as Json[]) : [];
  if (!Array.isArray(message.content) && typeof message.content !== 'string') throw invalid(`${at}.content`, `'${at}.content' must be a string or an array of content blocks.`);

  if (role === 'assistant') {
    let text = '';
    const calls: Json[] = [];
    blocks.forEach((block, j) => {
      const where = `${at}.content[${j}]`;
      if (!isObject(block)) throw invalid(where, `'${where}' must be a content block.`);
      if (block.type === 'text' && typeof block.text === 'string') text += block.text;
      else if (block.type === 'tool_use') calls.push({ id: block.id, type: 'function', function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) } });
      else if (block.type !== 'thinking' && block.type !== 'redacted_thinking') unsupported(block, where, options.provider);
    });
    const msg: Json = { role: 'assistant', content: text === '' ? null : text };
    if (calls.length > 0) msg.tool_calls = calls;
    if (text !== '' || calls.length > 0) out.push(msg);
    return;
  }

  // Tool results answer the calls of the assistant turn before: as chat `tool` messages they must come first.
  const parts: Json[] = [];
  blocks.forEach((block, j) => {
    const where = `${at}.content[${j}]`;
    if (!isObject(block)) throw invalid(where, `'${where}' must be a content block.`);
    if (block.type === 'tool_result') {
      if (typeof block.tool_use_id !== 'string') throw invalid(`${where}.tool_use_id`, `'${where}.tool_use_id' is required.`);
      out.push({ role: 'tool', tool_call_id: block.tool_use_id, content: toolResultContent(block, where, options) });
    } else {
      parts.push(userPart(block, where, options));
    }
  });
  if (parts.length === 0) return;
  const only = parts.length === 1 ? parts[0]! : undefined;
  out.push({ role: 'user', content: only !== undefined && only.type === 'text' && only.cache_control === undefined ? only.text : parts });
}

function toolResultContent(block: Json, where: string, options: MessagesToChatOptions): string | Json[] {
  const prefix = block.is_error === true ? 'Error: ' : '';
  if (typeof block.content === 'string') return prefix + block.content;
  if (!Array.isArray(block.content)) return prefix;
  const parts = (block.content as unknown[]).map((b: unknown, k: number) => userPart(b as Json, `${where}.content[${k}]`, options));
  if (parts.every((p) => p.type === 'text')) return prefix + parts.map((p) => p.text).join('\n');
  return prefix === '' ? parts : [{ type: 'text', text: prefix.trim() }, ...parts];
}

function userPart(block: Json, where: string, options: MessagesToChatOptions): Json {
  let part: Json;
  switch (block.type) {
    case 'text':
      if (typeof block.text !== 'string') throw invalid(`${where}.text`, `'${where}.text' must be a string.`);
      return textPart(block, options);
    case 'image': {
      const source = isObject(block.source) ? block.source : {};
      if (source.type === 'base64' && typeof source.data === 'string') part = { type: 'image_url', image_url: { url: `data:${String(source.media_type)};base64,${source.data}` } };
      else if (source.type === 'url' && typeof source.url === 'string') part = { type: 'image_url', image_url: { url: source.url } };
      else throw invalid(`${where}.source`, `'${where}.source' must be a base64 or url image source for provider "${options.provider}" (file sources are not supported).`);
      break;
    }
    case 'document': {
      const source = isObject(block.source) ? block.source : {};
      if (source.type === 'base64' && typeof source.data === 'string') part = { type: 'file', file: { file_data: `data:${String(source.media_type ?? 'application/pdf')};base64,${source.data}`, ...(typeof block.title === 'string' ? { filename: block.title } : {}) } };
      else if (source.type === 'url' && typeof source.url === 'string') part = { type: 'file', file: { file_url: source.url } };
      else if (source.type === 'text' && typeof source.data === 'string') part = { type: 'text', text: source.data };
      else throw invalid(`${where}.source`, `'${where}.source' must be a base64, url or text document source for provider "${options.provider}".`);
      break;
    }
    default:
      return unsupported(block, where, options.provider);
  }
  if (options.cacheControl && isObject(block.cache_control)) part.cache_control = block.cache_control;
  return part;
}

function unsupported(block: Json, where: string, provider: string): never {
  throw invalid(`${where}.type`, `Content block type '${String(block.type)}' is not supported by provider "${provider}" through the Messages API translation.`);
}

/** Custom tools (`{name, description, input_schema}`) → function tools; server tools are refused. */
function mapTools(tools: unknown, provider: string): Json[] {
  if (tools === undefined || tools === null) return [];
  if (!Array.isArray(tools)) throw invalid('tools', "'tools' must be an array.");
  return tools.map((tool: unknown, i: number) => {
    if (!isObject(tool) || typeof tool.name !== 'string') throw invalid(`tools[${i}]`, `'tools[${i}]' must be a tool with a name.`);
    if (tool.type !== undefined && tool.type !== 'custom') {
      throw invalid(`tools[${i}].type`, `Tool type '${String(tool.type)}' is a server tool, not supported by provider "${provider}" through the Messages API translation (custom tools only).`);
    }
    const fn: Json = { name: tool.name, parameters: isObject(tool.input_schema) ? tool.input_schema : { type: 'object', properties: {} } };
    if (typeof tool.description === 'string') fn.description = tool.description;
    return { type: 'function', function: fn };
  });
}
