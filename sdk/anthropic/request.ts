import { GatewayError } from '../../core/index.js';
import { chatTurns, forEachChatMessage, toolArguments } from '../chat-turns.js';
import { isObject } from '../json-object.js';

/** How an OpenAI chat body becomes an Anthropic Messages body. */
export interface AnthropicRequestOptions {
  /** Provider name used in error messages (`anthropic`, `vertex-ai`, …). */
  provider: string;
  /** `max_tokens` when the client sets neither `max_completion_tokens` nor `max_tokens` (Anthropic requires one). */
  defaultMaxTokens: number;
  /** Whether to ask for a stream (`stream: true` in the Messages body). */
  stream: boolean;
  /** The target's `strict_reference_compliance` (default true): when true, `thinking` is refused and thinking blocks are never replayed. */
  strict: boolean;
}

type Block = Record<string, unknown>;
type Json = Record<string, unknown>;

function invalid(param: string, message: string): GatewayError {
  return new GatewayError('invalid_request', message, { param });
}

/**
 * OpenAI chat body → Anthropic Messages body (`model` and `stream` included).
 *
 * Built from an allow-list, so any field not mapped here is dropped. Dropped on
 * purpose because Anthropic has no equivalent: `seed`, `logprobs`,
 * `top_logprobs`, `logit_bias`, `presence_penalty`, `frequency_penalty`,
 * `response_format: json_object`, `reasoning_effort`, `service_tier`,
 * `stream_options` (the gateway writes the usage chunk itself), `store`,
 * `metadata` (OpenAI's), `modalities`, `prediction`, `tools[].function.strict`
 * and `image_url.detail`. `n` > 1 and `temperature` > 1 are refused with a 400.
 */
export function toAnthropicRequest(body: Record<string, unknown>, options: AnthropicRequestOptions): Record<string, unknown> {
  const { provider } = options;
  const n = body.n;
  if (typeof n === 'number' && n > 1) {
    throw invalid('n', `Provider "${provider}" does not support n > 1 (got n = ${n}); send one request per choice.`);
  }
  const out: Record<string, unknown> = { model: body.model };
  out.max_tokens = num(body.max_completion_tokens) ?? num(body.max_tokens) ?? options.defaultMaxTokens;

  const { system, messages } = mapMessages(body.messages, options);
  if (system.length > 0) out.system = system;
  out.messages = messages;

  const temperature = num(body.temperature);
  if (temperature !== undefined) {
    if (temperature > 1) throw invalid('temperature', `'temperature' must be between 0 and 1 for provider "${provider}" (got ${temperature}).`);
    out.temperature = temperature;
  }
  const topP = num(body.top_p);
  if (topP !== undefined) out.top_p = topP;
  const topK = num(body.top_k);
  if (topK !== undefined) out.top_k = topK;

  const stop = body.stop;
  if (typeof stop === 'string') out.stop_sequences = [stop];
  else if (Array.isArray(stop) && stop.length > 0) out.stop_sequences = stop;

  out.stream = options.stream;
  if (typeof body.user === 'string') out.metadata = { user_id: body.user };

  const tools = mapTools(body, provider);
  if (tools !== undefined) {
    out.tools = tools;
    const choice = mapToolChoice(body, provider);
    if (choice !== undefined) out.tool_choice = choice;
  }

  const format = body.response_format;
  if (isObject(format) && format.type === 'json_schema') {
    const spec = format.json_schema;
    if (!isObject(spec) || !isObject(spec.schema)) {
      throw invalid('response_format.json_schema.schema', `Provider "${provider}" needs 'response_format.json_schema.schema' (a JSON schema object).`);
    }
    out.output_config = { format: { type: 'json_schema', schema: spec.schema } };
  }

  const thinking = body.thinking;
  if (isObject(thinking)) {
    if (thinking.type === 'disabled') out.thinking = { type: 'disabled' };
    else if (options.strict) {
      throw invalid('thinking', `'thinking' on provider "${provider}" requires strict_reference_compliance: false in the target config.`);
    } else if (thinking.type === 'enabled') out.thinking = { type: 'enabled', budget_tokens: thinking.budget_tokens };
    else out.thinking = thinking;
  }
  return out;
}

function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

/** Splits system/developer text out and maps every other message to Anthropic turns, merging same-role neighbours. */
function mapMessages(input: unknown, options: AnthropicRequestOptions): { system: Block[]; messages: Json[] } {
  const system: Block[] = [];
  const { turns, push } = chatTurns<Block>();
  /** Ids given to deprecated `function_call`s (they carry none), by function name, for the `function` messages that answer them. */
  const functionIds = new Map<string, string[]>();
  let functionCalls = 0;

  forEachChatMessage(input, (message, where) => {
    switch (message.role) {
      case 'system':
      case 'developer':
        system.push(...textBlocks(message.content, `${where}.content`, options.provider));
        break;
      case 'user':
        push('user', userBlocks(message.content, `${where}.content`, options.provider));
        break;
      case 'assistant': {
        const blocks: Block[] = [];
        if (!options.strict && Array.isArray(message.content_blocks)) {
          // Thinking must be replayed unmodified (with its signature) for thinking + tool use to work.
          for (const b of message.content_blocks as unknown[]) {
            if (isObject(b) && b.type === 'thinking') blocks.push({ type: 'thinking', thinking: b.thinking, signature: b.signature });
            else if (isObject(b) && b.type === 'redacted_thinking') blocks.push({ type: 'redacted_thinking', data: b.data });
          }
        }
        blocks.push(...assistantText(message.content));
        if (Array.isArray(message.tool_calls)) {
          message.tool_calls.forEach((call: unknown, j: number) => {
            const fn = isObject(call) ? call.function : undefined;
            if (!isObject(call) || !isObject(fn)) throw invalid(`${where}.tool_calls[${j}]`, `'${where}.tool_calls[${j}]' must be a function tool call.`);
            blocks.push({ type: 'tool_use', id: call.id, name: fn.name, input: toolArguments(fn.arguments) });
          });
        } else if (isObject(message.function_call)) {
          const name = String(message.function_call.name);
          const id = `call_fn_${functionCalls++}`;
          const ids = functionIds.get(name) ?? [];
          ids.push(id);
          functionIds.set(name, ids);
          blocks.push({ type: 'tool_use', id, name, input: toolArguments(message.function_call.arguments) });
        }
        push('assistant', blocks);
        break;
      }
      case 'tool':
        push('user', [toolResult(message.tool_call_id, message.content, `${where}.content`, options.provider)]);
        break;
      case 'function': {
        const name = String(message.name);
        const id = functionIds.get(name)?.shift() ?? `call_fn_${functionCalls++}`;
        push('user', [toolResult(id, message.content, `${where}.content`, options.provider)]);
        break;
      }
      default:
        throw invalid(`${where}.role`, `'${where}.role' must be one of system, developer, user, assistant, tool, function.`);
    }
  });

  const messages = turns.map((turn): Json => {
    // Anthropic wants tool_result blocks first in a user turn.
    const content = turn.role === 'user' ? toolResultsFirst(turn.content) : turn.content;
    const only = content.length === 1 ? content[0]! : undefined;
    if (only !== undefined && only.type === 'text' && Object.keys(only).length === 2) return { role: turn.role, content: only.text };
    return { role: turn.role, content };
  });
  return { system, messages };
}

function toolResultsFirst(blocks: Block[]): Block[] {
  if (!blocks.some((b, i) => b.type === 'tool_result' && i > 0 && blocks[i - 1]!.type !== 'tool_result')) return blocks;
  return [...blocks.filter((b) => b.type === 'tool_result'), ...blocks.filter((b) => b.type !== 'tool_result')];
}

function textBlock(text: string, part?: Json): Block {
  const block: Block = { type: 'text', text };
  if (part !== undefined && isObject(part.cache_control)) block.cache_control = part.cache_control;
  return block;
}

/** System/developer content: a string or text parts. Empty text is left out (Anthropic refuses empty text blocks). */
function textBlocks(content: unknown, where: string, provider: string): Block[] {
  if (typeof content === 'string') return content === '' ? [] : [textBlock(content)];
  if (!Array.isArray(content)) return [];
  return content.flatMap((part: unknown, j: number) => {
    if (!isObject(part) || part.type !== 'text' || typeof part.text !== 'string') {
      throw invalid(`${where}[${j}]`, `'${where}[${j}]' must be a text part for provider "${provider}".`);
    }
    return part.text === '' ? [] : [textBlock(part.text, part)];
  });
}

function assistantText(content: unknown): Block[] {
  if (typeof content === 'string') return content === '' ? [] : [textBlock(content)];
  if (!Array.isArray(content)) return [];
  return content.flatMap((part: unknown) => (isObject(part) && part.type === 'text' && typeof part.text === 'string' && part.text !== '' ? [textBlock(part.text, part)] : []));
}

function userBlocks(content: unknown, where: string, provider: string): Block[] {
  if (typeof content === 'string') return [textBlock(content)];
  if (!Array.isArray(content)) throw invalid(where, `'${where}' must be a string or an array of content parts.`);
  return content.map((part: unknown, j: number) => contentPart(part, `${where}[${j}]`, provider));
}

function contentPart(part: unknown, where: string, provider: string): Block {
  if (!isObject(part)) throw invalid(where, `'${where}' must be a content part object.`);
  let block: Block;
  switch (part.type) {
    case 'text':
      if (typeof part.text !== 'string') throw invalid(`${where}.text`, `'${where}.text' must be a string.`);
      return textBlock(part.text, part);
    case 'image_url': {
      const image = part.image_url;
      const url = typeof image === 'string' ? image : isObject(image) ? image.url : undefined;
      if (typeof url !== 'string') throw invalid(`${where}.image_url.url`, `'${where}.image_url.url' must be a string.`);
      block = mediaBlock(url, `${where}.image_url.url`, provider, 'image');
      break;
    }
    case 'file': {
      const file = isObject(part.file) ? part.file : {};
      if (typeof file.file_data === 'string') {
        const data = file.file_data.startsWith('data:') ? file.file_data : `data:application/pdf;base64,${file.file_data}`;
        block = mediaBlock(data, `${where}.file.file_data`, provider, 'document');
      } else if (typeof file.file_url === 'string') {
        block = { type: 'document', source: { type: 'url', url: file.file_url } };
      } else {
        throw invalid(`${where}.file`, `'${where}.file' needs file_data or file_url on provider "${provider}" (file_id is not supported).`);
      }
      break;
    }
    default:
      throw invalid(`${where}.type`, `Content part type '${String(part.type)}' is not supported by provider "${provider}".`);
  }
  if (isObject(part.cache_control)) block.cache_control = part.cache_control;
  return block;
}

/** A data URL → base64 image or PDF document; an http(s) URL → a url source. */
function mediaBlock(url: string, where: string, provider: string, urlKind: 'image' | 'document'): Block {
  if (url.startsWith('data:')) {
    const comma = url.indexOf(',');
    const params = comma === -1 ? [] : url.slice(5, comma).split(';');
    const mediaType = (params[0] ?? '').toLowerCase();
    if (comma === -1 || !params.slice(1).some((p) => p.toLowerCase() === 'base64')) {
      throw invalid(where, `'${where}' must be a base64 data URL or an http(s) URL.`);
    }
    const source = { type: 'base64', media_type: mediaType, data: url.slice(comma + 1) };
    if (mediaType === 'application/pdf') return { type: 'document', source };
    if (mediaType.startsWith('image/')) return { type: 'image', source };
    throw invalid(where, `Media type '${mediaType}' is not supported by provider "${provider}" (images and application/pdf only).`);
  }
  if (/^https?:\/\//i.test(url)) return { type: urlKind, source: { type: 'url', url } };
  throw invalid(where, `'${where}' must be a base64 data URL or an http(s) URL.`);
}

function toolResult(id: unknown, content: unknown, where: string, provider: string): Block {
  const block: Block = { type: 'tool_result', tool_use_id: id };
  if (typeof content === 'string') block.content = content;
  else if (Array.isArray(content)) block.content = content.map((part: unknown, j: number) => contentPart(part, `${where}[${j}]`, provider));
  else block.content = '';
  return block;
}

function mapTools(body: Json, provider: string): Block[] | undefined {
  if (Array.isArray(body.tools) && body.tools.length > 0) {
    return body.tools.map((tool: unknown, i: number) => {
      const fn = isObject(tool) ? tool.function : undefined;
      if (!isObject(tool) || tool.type !== 'function' || !isObject(fn)) {
        throw invalid(`tools[${i}]`, `'tools[${i}]' must be a function tool on provider "${provider}".`);
      }
      return toolDefinition(fn);
    });
  }
  if (Array.isArray(body.functions) && body.functions.length > 0) {
    return body.functions.map((fn: unknown, i: number) => {
      if (!isObject(fn)) throw invalid(`functions[${i}]`, `'functions[${i}]' must be an object.`);
      return toolDefinition(fn);
    });
  }
  return undefined;
}

function toolDefinition(fn: Json): Block {
  const tool: Block = { name: fn.name };
  if (typeof fn.description === 'string') tool.description = fn.description;
  tool.input_schema = isObject(fn.parameters) ? fn.parameters : { type: 'object', properties: {} };
  return tool;
}

function mapToolChoice(body: Json, provider: string): Block | undefined {
  let choice: Block | undefined;
  const tc = body.tool_choice ?? body.function_call;
  const param = body.tool_choice != null ? 'tool_choice' : 'function_call';
  if (tc === 'none') choice = { type: 'none' };
  else if (tc === 'auto') choice = { type: 'auto' };
  else if (tc === 'required') choice = { type: 'any' };
  else if (isObject(tc)) {
    const name = isObject(tc.function) ? tc.function.name : tc.name;
    if (typeof name !== 'string') throw invalid(param, `'${param}' must be none, auto, required or a named function for provider "${provider}".`);
    choice = { type: 'tool', name };
  } else if (tc != null) {
    throw invalid(param, `'${param}' must be none, auto, required or a named function for provider "${provider}".`);
  }
  if (body.parallel_tool_calls === false) {
    if (choice === undefined) choice = { type: 'auto', disable_parallel_tool_use: true };
    else if (choice.type !== 'none') choice.disable_parallel_tool_use = true;
  }
  return choice;
}

/**
 * The client's `anthropic-beta` for a platform that serves Claude without Anthropic's own API (Bedrock, Vertex AI):
 * without the betas of features the gateway serves itself there (message threads, `message-threads-…`: the Messages
 * door keeps the thread and sends the whole conversation); undefined when none is left.
 */
export function platformBetas(beta: string | undefined): string | undefined {
  if (beta === undefined || beta === '') return undefined;
  const kept = beta.split(',').map((b) => b.trim()).filter((b) => b !== '' && !b.startsWith('message-threads-'));
  return kept.length === 0 ? undefined : kept.join(',');
}
