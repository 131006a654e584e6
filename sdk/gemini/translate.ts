import { completionId, openAIUsage, type FinishReason, type OpenAIUsage } from '../openai/chunks.js';
import { audioPart, filePart, imagePart, invalid, isObject, toGeminiSchema, type Json } from './parts.js';

/**
 * The Gemini translation shared by the `google` (AI Studio) and `vertex-ai`
 * providers: an OpenAI chat-completions body → a `generateContent` body, and a
 * `GenerateContentResponse` → a `chat.completion` (shared/providers/vertex.md §3–§4).
 */

export interface GeminiRequestOptions {
  /** Provider name, for error messages. */
  provider: string;
  /** Whether the client asked for a stream (n > 1 is refused then: one choice per stream). */
  stream: boolean;
  /** `strict_reference_compliance` (default true): provider extensions such as `thinking` are refused. */
  strict: boolean;
}

type Content = { role: 'user' | 'model'; parts: Json[] };

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** The text of a system, developer, tool or assistant message: a string or an array of text parts. */
function textOf(content: unknown, provider: string, param: string): string[] {
  if (content === null || content === undefined) return [];
  if (typeof content === 'string') return content === '' ? [] : [content];
  if (!Array.isArray(content)) throw invalid(provider, param, 'Message content must be a string or an array of parts');
  const out: string[] = [];
  content.forEach((part, j) => {
    if (!isObject(part)) throw invalid(provider, `${param}[${j}]`, 'A content part must be an object');
    if ((part.type === 'text' || part.type === 'refusal') && typeof (part.text ?? part.refusal) === 'string') {
      const text = (part.text ?? part.refusal) as string;
      if (text !== '') out.push(text);
    } else throw invalid(provider, `${param}[${j}].type`, `Content part type "${String(part.type)}" is not allowed in this message`);
  });
  return out;
}

/** A user message's parts: text, images, audio and files. */
function userParts(content: unknown, provider: string, param: string): Json[] {
  if (typeof content === 'string') return content === '' ? [] : [{ text: content }];
  if (!Array.isArray(content)) throw invalid(provider, param, 'Message content must be a string or an array of parts');
  return content.map((part, j) => {
    const at = `${param}[${j}]`;
    if (!isObject(part)) throw invalid(provider, at, 'A content part must be an object');
    switch (part.type) {
      case 'text':
        if (typeof part.text !== 'string') throw invalid(provider, `${at}.text`, 'A text part needs text');
        return { text: part.text };
      case 'image_url':
        return imagePart(part, provider, at);
      case 'input_audio':
        return audioPart(part, provider, at);
      case 'file':
        return filePart(part, provider, at);
      default:
        throw invalid(provider, `${at}.type`, `Content part type "${String(part.type)}" is not supported`);
    }
  });
}

/** `{output: <content, parsed when it is JSON>}`: Gemini's functionResponse.response must be an object. */
function toolOutput(texts: string[]): Json {
  const text = texts.join('');
  try {
    return { output: JSON.parse(text) as unknown };
  } catch {
    return { output: text };
  }
}

function functionCall(name: unknown, args: unknown, provider: string, param: string): Json {
  if (typeof name !== 'string' || name === '') throw invalid(provider, `${param}.name`, 'A tool call needs a function name');
  let parsed: unknown = {};
  if (typeof args === 'string' && args.trim() !== '') {
    try {
      parsed = JSON.parse(args);
    } catch {
      throw invalid(provider, `${param}.arguments`, 'Tool call arguments must be a JSON object');
    }
  } else if (isObject(args)) parsed = args;
  if (!isObject(parsed)) throw invalid(provider, `${param}.arguments`, 'Tool call arguments must be a JSON object');
  return { functionCall: { name, args: parsed } };
}

/** Messages → `systemInstruction` and alternating `contents` (same-role turns merged). */
function mapMessages(messages: unknown, provider: string): { system: Json[]; contents: Content[] } {
  if (!Array.isArray(messages)) throw invalid(provider, 'messages', 'messages must be an array');
  const system: Json[] = [];
  const contents: Content[] = [];
  /** tool_call_id → function name, from the assistant turns seen so far (the latest issuer wins). */
  const callNames = new Map<string, string>();
  const push = (role: Content['role'], parts: Json[]) => {
    if (parts.length === 0) return;
    const last = contents.at(-1);
    if (last !== undefined && last.role === role) last.parts.push(...parts);
    else contents.push({ role, parts });
  };
  messages.forEach((m, i) => {
    const at = `messages[${i}]`;
    if (!isObject(m)) throw invalid(provider, at, 'A message must be an object');
    switch (m.role) {
      case 'system':
      case 'developer':
        for (const text of textOf(m.content, provider, `${at}.content`)) system.push({ text });
        return;
      case 'user':
        return push('user', userParts(m.content, provider, `${at}.content`));
      case 'assistant': {
        const parts: Json[] = textOf(m.content, provider, `${at}.content`).map((text) => ({ text }));
        if (Array.isArray(m.tool_calls)) {
          m.tool_calls.forEach((call, j) => {
            const p = `${at}.tool_calls[${j}]`;
            const fn = isObject(call) && isObject(call.function) ? call.function : {};
            parts.push(functionCall(fn.name, fn.arguments, provider, `${p}.function`));
            if (isObject(call) && typeof call.id === 'string') callNames.set(call.id, fn.name as string);
          });
        }
        if (isObject(m.function_call)) parts.push(functionCall(m.function_call.name, m.function_call.arguments, provider, `${at}.function_call`));
        return push('model', parts);
      }
      case 'tool': {
        const id = m.tool_call_id;
        const name = typeof id === 'string' ? callNames.get(id) : undefined;
        if (name === undefined) throw invalid(provider, `${at}.tool_call_id`, 'A tool message must answer a tool_call_id of an earlier assistant tool call (Gemini needs the function name)');
        return push('user', [{ functionResponse: { name, response: toolOutput(textOf(m.content, provider, `${at}.content`)) } }]);
      }
      case 'function': {
        if (typeof m.name !== 'string') throw invalid(provider, `${at}.name`, 'A function message needs the function name');
        return push('user', [{ functionResponse: { name: m.name, response: toolOutput(textOf(m.content, provider, `${at}.content`)) } }]);
      }
      default:
        throw invalid(provider, `${at}.role`, `Message role "${String(m.role)}" is not supported`);
    }
  });
  return { system, contents };
}

function mapTools(body: Json, provider: string): Json[] | undefined {
  const declarations: Json[] = [];
  const declare = (fn: Json, param: string) => {
    if (typeof fn.name !== 'string') throw invalid(provider, `${param}.name`, 'A function needs a name');
    const d: Json = { name: fn.name };
    if (typeof fn.description === 'string') d.description = fn.description;
    if (isObject(fn.parameters)) d.parameters = toGeminiSchema(fn.parameters);
    declarations.push(d);
  };
  if (Array.isArray(body.tools)) {
    body.tools.forEach((tool, i) => {
      if (!isObject(tool) || tool.type !== 'function' || !isObject(tool.function)) throw invalid(provider, `tools[${i}].type`, 'Only function tools are supported');
      declare(tool.function, `tools[${i}].function`);
    });
  }
  if (Array.isArray(body.functions)) body.functions.forEach((fn, i) => isObject(fn) && declare(fn, `functions[${i}]`));
  return declarations.length === 0 ? undefined : [{ functionDeclarations: declarations }];
}

function mapToolChoice(choice: unknown, provider: string): Json | undefined {
  if (choice === null || choice === undefined) return undefined;
  if (choice === 'none') return { mode: 'NONE' };
  if (choice === 'auto') return { mode: 'AUTO' };
  if (choice === 'required') return { mode: 'ANY' };
  if (isObject(choice) && isObject(choice.function) && typeof choice.function.name === 'string') return { mode: 'ANY', allowedFunctionNames: [choice.function.name] };
  throw invalid(provider, 'tool_choice', 'tool_choice must be none, auto, required or {"type":"function","function":{"name":…}}');
}

function mapGenerationConfig(body: Json, opts: GeminiRequestOptions): Json {
  const { provider } = opts;
  const config: Json = {};
  const set = (key: string, value: unknown) => {
    if (value !== undefined) config[key] = value;
  };
  set('temperature', num(body.temperature));
  set('topP', num(body.top_p));
  set('topK', num(body.top_k));
  set('maxOutputTokens', num(body.max_completion_tokens) ?? num(body.max_tokens));
  if (typeof body.stop === 'string') config.stopSequences = [body.stop];
  else if (Array.isArray(body.stop) && body.stop.length > 0) config.stopSequences = body.stop;
  const n = num(body.n);
  if (n !== undefined && n > 1 && opts.stream) throw invalid(provider, 'n', 'n > 1 cannot be streamed');
  set('candidateCount', n);
  set('seed', num(body.seed));
  set('presencePenalty', num(body.presence_penalty));
  set('frequencyPenalty', num(body.frequency_penalty));
  const format = body.response_format;
  if (isObject(format)) {
    if (format.type === 'json_object') config.responseMimeType = 'application/json';
    else if (format.type === 'json_schema') {
      config.responseMimeType = 'application/json';
      const schema = isObject(format.json_schema) ? format.json_schema.schema : undefined;
      if (isObject(schema)) config.responseSchema = toGeminiSchema(schema);
    } else if (format.type !== 'text') throw invalid(provider, 'response_format.type', 'response_format.type must be text, json_object or json_schema');
  }
  const thinking = body.thinking;
  if (thinking !== null && thinking !== undefined) {
    if (opts.strict) throw invalid(provider, 'thinking', "'thinking' is a provider extension; set strict_reference_compliance: false in the config to use it");
    if (isObject(thinking) && thinking.type === 'disabled') config.thinkingConfig = { thinkingBudget: 0 };
    else {
      const budget = isObject(thinking) ? num(thinking.budget_tokens) : undefined;
      config.thinkingConfig = budget === undefined ? { includeThoughts: true } : { thinkingBudget: budget, includeThoughts: true };
    }
  }
  return config;
}

/** An OpenAI chat-completions body as a Gemini `generateContent` body. */
export function toGeminiRequest(body: Json, opts: GeminiRequestOptions): Json {
  const { system, contents } = mapMessages(body.messages, opts.provider);
  const out: Json = { contents };
  if (system.length > 0) out.systemInstruction = { parts: system };
  const config = mapGenerationConfig(body, opts);
  if (Object.keys(config).length > 0) out.generationConfig = config;
  const tools = mapTools(body, opts.provider);
  if (tools !== undefined) out.tools = tools;
  const mode = mapToolChoice(body.tool_choice ?? (body.function_call === 'none' ? 'none' : body.function_call === 'auto' ? 'auto' : isObject(body.function_call) ? { function: body.function_call } : undefined), opts.provider);
  if (mode !== undefined) out.toolConfig = { functionCallingConfig: mode };
  return out;
}

// ---- responses ----

/** Gemini finish reasons that mean the output was blocked. RECITATION is counted here (Portkey says stop). */
const FILTERED = new Set(['SAFETY', 'BLOCKLIST', 'PROHIBITED_CONTENT', 'SPII', 'IMAGE_SAFETY', 'IMAGE_PROHIBITED_CONTENT', 'RECITATION', 'IMAGE_RECITATION', 'LANGUAGE']);

/**
 * A Gemini `finishReason` in OpenAI's terms: MAX_TOKENS → length, the
 * blocking reasons → content_filter, anything else → tool_calls when the
 * candidate called a function, else stop. Absent → null (not final).
 */
export function geminiFinish(reason: unknown, hasCalls: boolean): FinishReason | null {
  if (typeof reason !== 'string' || reason === '') return null;
  if (reason === 'MAX_TOKENS') return 'length';
  if (FILTERED.has(reason)) return 'content_filter';
  return hasCalls ? 'tool_calls' : 'stop';
}

/**
 * `usageMetadata` as OpenAI usage: prompt = promptTokenCount (which already
 * holds cached tokens) + toolUsePromptTokenCount; completion =
 * candidatesTokenCount + thoughtsTokenCount; cached and reasoning always present.
 */
export function geminiUsage(meta: unknown): OpenAIUsage | null {
  if (!isObject(meta)) return null;
  const thoughts = num(meta.thoughtsTokenCount) ?? 0;
  const prompt = (num(meta.promptTokenCount) ?? 0) + (num(meta.toolUsePromptTokenCount) ?? 0);
  // Audio and image prompt tokens by modality (`promptTokensDetails`), and audio output (`candidatesTokensDetails`): billed at their own
  // rates. The prompt's counts include what was read from a cache (`cacheTokensDetails`), which is billed as a cache read instead.
  const audioIn = Math.max(0, modalityCount(meta.promptTokensDetails, 'AUDIO') - modalityCount(meta.cacheTokensDetails, 'AUDIO'));
  const imageIn = Math.max(0, modalityCount(meta.promptTokensDetails, 'IMAGE') - modalityCount(meta.cacheTokensDetails, 'IMAGE'));
  const audioOut = modalityCount(meta.candidatesTokensDetails, 'AUDIO');
  const more = audioIn > 0 || imageIn > 0 || audioOut > 0 ? { ...(audioIn > 0 ? { audioIn } : {}), ...(imageIn > 0 ? { imageIn } : {}), ...(audioOut > 0 ? { audioOut } : {}) } : undefined;
  return openAIUsage(prompt, (num(meta.candidatesTokenCount) ?? 0) + thoughts, num(meta.cachedContentTokenCount) ?? 0, thoughts, more);
}

/** The tokens of one modality in a Gemini `…TokensDetails` list (`[{ modality, tokenCount }]`). */
function modalityCount(details: unknown, modality: string): number {
  let n = 0;
  if (Array.isArray(details)) for (const d of details) if (isObject(d) && d.modality === modality) n += num(d.tokenCount) ?? 0;
  return n;
}

/** A tool-call id for the k-th call of a response: unique per response id, stable within it. */
export function toolCallId(responseId: string, k: number): string {
  return `call_${responseId.slice(responseId.indexOf('-') + 1)}_${k}`;
}

/** What {@link fromGeminiResponse} needs to build a chat completion from a Gemini answer. */
export interface GeminiResponseOptions {
  /** The requested model, used when the answer names no `modelVersion`. */
  model: string;
  /** The target's `strict_reference_compliance`: when false, `thought` parts are kept as the message's `content_blocks`; when true they are dropped. */
  strict: boolean;
  /** The completion id; default a fresh one (tests fix it). */
  id?: string;
}

/** The unix time of Vertex's `createTime`, else now. */
export function createdFrom(createTime: unknown): number {
  const t = typeof createTime === 'string' ? Date.parse(createTime) : NaN;
  return Math.floor((Number.isNaN(t) ? Date.now() : t) / 1000);
}

/**
 * A `GenerateContentResponse` as a `chat.completion`: one choice per
 * candidate, text parts joined, `thought` parts as `content_blocks` (only when
 * not strict), function calls as tool calls with synthesised ids.
 */
export function fromGeminiResponse(json: unknown, opts: GeminiResponseOptions): { completion: Json; usage: OpenAIUsage | null } {
  const r = isObject(json) ? json : {};
  const id = opts.id ?? completionId();
  const candidates = Array.isArray(r.candidates) ? r.candidates.filter(isObject) : [];
  let calls = 0;
  const choices = candidates.map((c, position) => {
    const parts = isObject(c.content) && Array.isArray(c.content.parts) ? c.content.parts.filter(isObject) : [];
    const texts: string[] = [];
    const blocks: Json[] = [];
    const toolCalls: Json[] = [];
    for (const p of parts) {
      if (typeof p.text === 'string') {
        if (p.thought === true) blocks.push({ type: 'thinking', thinking: p.text });
        else {
          texts.push(p.text);
          blocks.push({ type: 'text', text: p.text });
        }
      } else if (isObject(p.functionCall)) {
        const fc = p.functionCall;
        const callId = typeof fc.id === 'string' && fc.id !== '' ? fc.id : toolCallId(id, calls);
        calls++;
        toolCalls.push({ id: callId, type: 'function', function: { name: String(fc.name ?? ''), arguments: JSON.stringify(fc.args ?? {}) } });
      }
    }
    const message: Json = { role: 'assistant', content: texts.length > 0 ? texts.join('') : null, refusal: null };
    if (toolCalls.length > 0) message.tool_calls = toolCalls;
    if (!opts.strict && blocks.some((b) => b.type === 'thinking')) message.content_blocks = blocks;
    const index = num(c.index) ?? position;
    return { index, message, logprobs: null, finish_reason: geminiFinish(c.finishReason, toolCalls.length > 0) ?? 'stop' };
  });
  choices.sort((a, b) => a.index - b.index);
  if (choices.length === 0) {
    const blocked = isObject(r.promptFeedback) && typeof r.promptFeedback.blockReason === 'string';
    choices.push({ index: 0, message: { role: 'assistant', content: null, refusal: null }, logprobs: null, finish_reason: blocked ? 'content_filter' : 'stop' });
  }
  const usage = geminiUsage(r.usageMetadata);
  const completion: Json = {
    id,
    object: 'chat.completion',
    created: createdFrom(r.createTime),
    model: typeof r.modelVersion === 'string' && r.modelVersion !== '' ? r.modelVersion : opts.model,
    choices,
  };
  if (usage !== null) completion.usage = usage;
  return { completion, usage };
}
