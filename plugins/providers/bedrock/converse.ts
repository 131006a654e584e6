import { chatTurns, forEachChatMessage, GatewayError, isObject, toolArguments } from '../../../sdk/index.js';

/**
 * OpenAI chat body → Bedrock Converse body (bedrock.md §3). Pure: the model id
 * goes in the path, and streaming picks `/converse-stream`, so neither is in
 * the body.
 */

type Json = Record<string, unknown>;
type Block = Record<string, unknown>;

export { isObject };

export interface ConverseOptions {
  provider: string;
  /** strict_reference_compliance (default true): `thinking` is refused. */
  strict: boolean;
  /** Image bytes already fetched for http(s) image URLs (by a configured resolver), by URL. */
  images?: ReadonlyMap<string, { format: string; bytes: string }>;
}

const invalid = (param: string, message: string) => new GatewayError('invalid_request', message, { param });
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

const IMAGE_FORMATS: Readonly<Record<string, string>> = Object.freeze({ png: 'png', jpeg: 'jpeg', jpg: 'jpeg', gif: 'gif', webp: 'webp' });
const DOCUMENT_FORMATS: Readonly<Record<string, string>> = Object.freeze({
  'application/pdf': 'pdf',
  'text/csv': 'csv',
  'text/html': 'html',
  'text/plain': 'txt',
  'text/markdown': 'md',
  'application/msword': 'doc',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
  'application/vnd.ms-excel': 'xls',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'xlsx',
});

/** Body fields passed through as they are (Bedrock-specific extensions a client may send). */
const PASS_THROUGH = ['guardrailConfig', 'performanceConfig', 'promptVariables', 'requestMetadata', 'additionalModelResponseFieldPaths'] as const;

/**
 * Maps the body. Dropped (Converse has no equivalent): `seed`, `logprobs`,
 * `top_logprobs`, `logit_bias`, `presence_penalty`, `frequency_penalty`,
 * `parallel_tool_calls`, `stream_options`, `service_tier`, `store`,
 * `metadata`, `response_format: json_object`. `n > 1` is a 400; so is an http(s)
 * image URL unless a resolver fetched it (Bedrock takes bytes or s3:// only).
 * `cache_control` on a part (prompt caching, as Anthropic's clients mark it)
 * becomes a `cachePoint` block after it.
 */
export function toConverseRequest(body: Json, options: ConverseOptions): Json {
  const { provider } = options;
  if (typeof body.n === 'number' && body.n > 1) throw invalid('n', `Provider "${provider}" does not support n > 1 (got n = ${body.n}); send one request per choice.`);
  const out: Json = {};
  const { system, messages, toolNames } = mapMessages(body.messages, options);
  if (system.length > 0) out.system = system;
  out.messages = messages;

  const inference: Json = {};
  const maxTokens = num(body.max_completion_tokens) ?? num(body.max_tokens);
  if (maxTokens !== undefined) inference.maxTokens = maxTokens;
  if (num(body.temperature) !== undefined) inference.temperature = body.temperature;
  if (num(body.top_p) !== undefined) inference.topP = body.top_p;
  if (typeof body.stop === 'string') inference.stopSequences = [body.stop];
  else if (Array.isArray(body.stop) && body.stop.length > 0) inference.stopSequences = body.stop;
  if (Object.keys(inference).length > 0) out.inferenceConfig = inference;

  const toolConfig = mapTools(body, toolNames, provider);
  if (toolConfig !== undefined) out.toolConfig = toolConfig;

  const additional: Json = isObject(body.additionalModelRequestFields) ? { ...body.additionalModelRequestFields } : {};
  if (num(body.top_k) !== undefined) additional.top_k = body.top_k;
  if (isObject(body.thinking)) {
    if (body.thinking.type !== 'disabled' && options.strict) {
      throw invalid('thinking', `'thinking' on provider "${provider}" requires strict_reference_compliance: false in the target config.`);
    }
    additional.thinking = body.thinking;
  }
  if (Object.keys(additional).length > 0) out.additionalModelRequestFields = additional;

  const format = body.response_format;
  if (isObject(format) && format.type === 'json_schema') {
    const spec = format.json_schema;
    if (!isObject(spec) || !isObject(spec.schema)) throw invalid('response_format.json_schema.schema', `Provider "${provider}" needs 'response_format.json_schema.schema' (a JSON schema object).`);
    const jsonSchema: Json = { schema: JSON.stringify(spec.schema), name: typeof spec.name === 'string' ? spec.name : 'response' };
    if (typeof spec.description === 'string') jsonSchema.description = spec.description;
    out.outputConfig = { textFormat: { type: 'json_schema', structure: { jsonSchema } } };
  }
  for (const field of PASS_THROUGH) if (body[field] !== undefined) out[field] = body[field];
  if (typeof body.user === 'string' && out.requestMetadata === undefined) out.requestMetadata = { user: body.user };
  return out;
}

function mapMessages(input: unknown, options: ConverseOptions): { system: Block[]; messages: Json[]; toolNames: Set<string> } {
  const { provider } = options;
  const system: Block[] = [];
  const { turns, push } = chatTurns<Block>();
  const toolNames = new Set<string>();
  forEachChatMessage(input, (message, where) => {
    switch (message.role) {
      case 'system':
      case 'developer':
        for (const text of texts(message.content, `${where}.content`, provider)) system.push({ text });
        if (hasCacheControl(message.content)) system.push(CACHE_POINT);
        break;
      case 'user':
        push('user', userBlocks(message.content, `${where}.content`, options));
        break;
      case 'assistant': {
        const blocks: Block[] = texts(message.content, `${where}.content`, provider, true).map((text) => ({ text }));
        if (Array.isArray(message.tool_calls)) {
          message.tool_calls.forEach((call: unknown, j: number) => {
            const fn = isObject(call) ? call.function : undefined;
            if (!isObject(call) || !isObject(fn) || typeof fn.name !== 'string') throw invalid(`${where}.tool_calls[${j}]`, `'${where}.tool_calls[${j}]' must be a function tool call.`);
            toolNames.add(fn.name);
            blocks.push({ toolUse: { toolUseId: String(call.id), name: fn.name, input: toolArguments(fn.arguments) } });
          });
        }
        push('assistant', blocks);
        break;
      }
      case 'tool': {
        const content = typeof message.content === 'string' ? message.content : texts(message.content, `${where}.content`, provider).join('');
        push('user', [{ toolResult: { toolUseId: String(message.tool_call_id), content: [{ text: content }] } }]);
        break;
      }
      default:
        throw invalid(`${where}.role`, `'${where}.role' must be one of system, developer, user, assistant, tool for provider "${provider}".`);
    }
  });
  // Converse wants tool results first in a user turn.
  const messages = turns.map((t) => ({
    role: t.role,
    content: t.role === 'user' ? [...t.content.filter((b) => 'toolResult' in b), ...t.content.filter((b) => !('toolResult' in b))] : t.content,
  }));
  return { system, messages, toolNames };
}

/** Text of a string or text parts; empty strings are left out (Bedrock refuses blank text blocks). */
function texts(content: unknown, where: string, provider: string, lenient = false): string[] {
  if (typeof content === 'string') return content === '' ? [] : [content];
  if (content == null) return [];
  if (!Array.isArray(content)) throw invalid(where, `'${where}' must be a string or an array of text parts.`);
  const out: string[] = [];
  content.forEach((part: unknown, j: number) => {
    if (isObject(part) && part.type === 'text' && typeof part.text === 'string') {
      if (part.text !== '') out.push(part.text);
    } else if (!lenient) throw invalid(`${where}[${j}]`, `'${where}[${j}]' must be a text part for provider "${provider}".`);
  });
  return out;
}

/** Converse's prompt-caching marker: everything before it is cached (bedrock.md §3). */
const CACHE_POINT: Block = Object.freeze({ cachePoint: { type: 'default' } }) as Block;

/** Whether a content (string or parts) carries a `cache_control` marker (Anthropic's prompt caching, sent on chat parts). */
function hasCacheControl(content: unknown): boolean {
  return Array.isArray(content) && content.some((part) => isObject(part) && isObject(part.cache_control));
}

/** User content as Converse blocks; a part with `cache_control` is followed by a `cachePoint`. */
function userBlocks(content: unknown, where: string, options: ConverseOptions): Block[] {
  if (typeof content === 'string') return [{ text: content }];
  if (!Array.isArray(content)) throw invalid(where, `'${where}' must be a string or an array of content parts.`);
  return partBlocks(content, where, options).flatMap((block, j) => (isObject(content[j]) && isObject((content[j] as Json).cache_control) ? [block, CACHE_POINT] : [block]));
}

function partBlocks(content: unknown[], where: string, options: ConverseOptions): Block[] {
  let documents = 0;
  return content.map((part: unknown, j: number): Block => {
    const at = `${where}[${j}]`;
    if (!isObject(part)) throw invalid(at, `'${at}' must be a content part object.`);
    if (part.type === 'text' && typeof part.text === 'string') return { text: part.text };
    if (part.type === 'image_url') {
      const image = part.image_url;
      const url = typeof image === 'string' ? image : isObject(image) ? image.url : undefined;
      if (typeof url !== 'string') throw invalid(`${at}.image_url.url`, `'${at}.image_url.url' must be a string.`);
      return imageBlock(url, `${at}.image_url.url`, options);
    }
    if (part.type === 'file') {
      const file = isObject(part.file) ? part.file : {};
      const data = typeof file.file_data === 'string' ? (file.file_data.startsWith('data:') ? file.file_data : `data:application/pdf;base64,${file.file_data}`) : undefined;
      if (data === undefined) throw invalid(`${at}.file`, `'${at}.file' needs file_data (a base64 data URL) on provider "${options.provider}".`);
      const parsed = parseDataURL(data);
      const format = parsed === null ? undefined : DOCUMENT_FORMATS[parsed.mediaType];
      if (parsed === null || format === undefined) throw invalid(`${at}.file.file_data`, `'${at}.file.file_data' must be a base64 data URL of a document type Bedrock reads (pdf, csv, doc, docx, xls, xlsx, html, txt, md).`);
      documents++;
      // Names must be unique per request and plain: letters, digits, spaces, hyphens, brackets.
      const base = typeof file.filename === 'string' ? file.filename.replace(/\.[^.]*$/, '').replace(/[^A-Za-z0-9 ()[\]-]/g, ' ').trim() : '';
      return { document: { format, name: `${base || 'document'}-${documents}`, source: { bytes: parsed.data } } };
    }
    throw invalid(`${at}.type`, `Content part type '${String(part.type)}' is not supported by provider "${options.provider}".`);
  });
}

function parseDataURL(url: string): { mediaType: string; data: string } | null {
  const comma = url.indexOf(',');
  if (!url.startsWith('data:') || comma === -1) return null;
  const params = url.slice(5, comma).split(';');
  if (!params.slice(1).some((p) => p.toLowerCase() === 'base64')) return null;
  return { mediaType: (params[0] ?? '').toLowerCase(), data: url.slice(comma + 1) };
}

/** A data URL → bytes; `s3://` → s3Location; an http(s) URL only when a resolver fetched it, else a 400 naming the field. */
function imageBlock(url: string, where: string, options: ConverseOptions): Block {
  if (url.startsWith('data:')) {
    const parsed = parseDataURL(url);
    const format = parsed !== null && parsed.mediaType.startsWith('image/') ? IMAGE_FORMATS[parsed.mediaType.slice(6)] : undefined;
    if (parsed === null || format === undefined) throw invalid(where, `'${where}' must be a base64 data URL of a png, jpeg, gif or webp image for provider "${options.provider}".`);
    return { image: { format, source: { bytes: parsed.data } } };
  }
  if (url.startsWith('s3://')) {
    const ext = /\.([a-z]+)$/i.exec(url)?.[1]?.toLowerCase();
    const format = ext === undefined ? undefined : IMAGE_FORMATS[ext];
    if (format === undefined) throw invalid(where, `'${where}' is an s3:// URI without a png, jpeg, gif or webp extension.`);
    return { image: { format, source: { s3Location: { uri: url } } } };
  }
  const fetched = options.images?.get(url);
  if (fetched !== undefined) return { image: { format: fetched.format, source: { bytes: fetched.bytes } } };
  throw invalid(where, `Provider "${options.provider}" needs image bytes: send '${where}' as a base64 data URL (or an s3:// URI); http(s) image URLs are not fetched.`);
}

/** Every http(s) image URL in the messages (for a resolver to fetch before the body is built). */
export function imageURLs(body: Json): string[] {
  const urls: string[] = [];
  if (!Array.isArray(body.messages)) return urls;
  for (const m of body.messages) {
    if (!isObject(m) || m.role !== 'user' || !Array.isArray(m.content)) continue;
    for (const part of m.content) {
      if (!isObject(part) || part.type !== 'image_url') continue;
      const url = typeof part.image_url === 'string' ? part.image_url : isObject(part.image_url) ? part.image_url.url : undefined;
      if (typeof url === 'string' && /^https?:\/\//i.test(url)) urls.push(url);
    }
  }
  return urls;
}

function mapTools(body: Json, toolNames: Set<string>, provider: string): Json | undefined {
  const tools = Array.isArray(body.tools) && body.tools.length > 0 ? body.tools : undefined;
  if (tools === undefined) {
    // Converse refuses toolUse/toolResult blocks without a toolConfig: declare the tools the history used.
    if (toolNames.size === 0) return undefined;
    return { tools: [...toolNames].map((name) => ({ toolSpec: { name, inputSchema: { json: { type: 'object', properties: {} } } } })) };
  }
  const specs = tools.map((tool: unknown, i: number) => {
    const fn = isObject(tool) ? tool.function : undefined;
    if (!isObject(tool) || tool.type !== 'function' || !isObject(fn)) throw invalid(`tools[${i}]`, `'tools[${i}]' must be a function tool on provider "${provider}".`);
    const spec: Json = { name: fn.name, inputSchema: { json: isObject(fn.parameters) ? fn.parameters : { type: 'object', properties: {} } } };
    if (typeof fn.description === 'string' && fn.description !== '') spec.description = fn.description;
    return { toolSpec: spec };
  });
  const config: Json = { tools: specs };
  const choice = body.tool_choice;
  if (choice === 'auto') config.toolChoice = { auto: {} };
  else if (choice === 'required') config.toolChoice = { any: {} };
  else if (isObject(choice)) {
    const name = isObject(choice.function) ? choice.function.name : undefined;
    if (typeof name !== 'string') throw invalid('tool_choice', `'tool_choice' must be none, auto, required or a named function for provider "${provider}".`);
    config.toolChoice = { tool: { name } };
  } else if (choice !== undefined && choice !== null && choice !== 'none') {
    throw invalid('tool_choice', `'tool_choice' must be none, auto, required or a named function for provider "${provider}".`);
  }
  return config;
}
