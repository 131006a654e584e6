import { randomBytes } from 'node:crypto';

/** OpenAI's `finish_reason` values. */
export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'function_call';

/** Usage in OpenAI's wire shape. */
export interface OpenAIUsage {
  /** Tokens in the prompt, cached ones included. */
  prompt_tokens: number;
  /** Tokens generated, reasoning ones included. */
  completion_tokens: number;
  /** Prompt plus completion tokens. */
  total_tokens: number;
  /**
   * How many prompt tokens came from the provider's prompt cache (and, when known, were written to
   * it, were audio, were images); absent when unknown.
   */
  prompt_tokens_details?: { cached_tokens: number; cache_write_tokens?: number; audio_tokens?: number; image_tokens?: number };
  /** How many completion tokens went to reasoning (and, when known, were audio); absent when unknown. */
  completion_tokens_details?: { reasoning_tokens: number; audio_tokens?: number };
  /**
   * Of the cache writes, those kept for an hour (Anthropic's `ephemeral_1h`): priced apart, but no
   * field of OpenAI's wire, so kept under a symbol that never reaches a client's JSON.
   */
  [CACHE_WRITE_1H]?: number;
}

/** The key of {@link OpenAIUsage}'s 1-hour cache writes (a symbol: `JSON.stringify` leaves it out). */
export const CACHE_WRITE_1H: unique symbol = Symbol.for('ai-gateway.usage:cache_write_1h');

/** Counts a provider reports beyond prompt, completion, cache reads and reasoning. */
export interface MoreCounts {
  /** Prompt tokens written to the prompt cache, part of the prompt. */
  cacheWrite?: number;
  /** Of those, the ones written for an hour. */
  cacheWrite1h?: number;
  /** Prompt tokens that were audio. */
  audioIn?: number;
  /** Prompt tokens that were images. */
  imageIn?: number;
  /** Completion tokens that were audio. */
  audioOut?: number;
}

/** An id in OpenAI's style, for providers that give none. */
export function completionId(prefix = 'chatcmpl-'): string {
  return prefix + randomBytes(12).toString('base64url');
}

/** Builds OpenAI usage from token counts, with the details only when known. */
export function openAIUsage(prompt: number, completion: number, cached?: number, reasoning?: number, more?: MoreCounts): OpenAIUsage {
  const usage: OpenAIUsage = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  if (cached !== undefined || more?.cacheWrite !== undefined || more?.audioIn !== undefined || more?.imageIn !== undefined) {
    const details: NonNullable<OpenAIUsage['prompt_tokens_details']> = { cached_tokens: cached ?? 0 };
    if (more?.cacheWrite !== undefined) details.cache_write_tokens = more.cacheWrite;
    if (more?.audioIn !== undefined) details.audio_tokens = more.audioIn;
    if (more?.imageIn !== undefined) details.image_tokens = more.imageIn;
    usage.prompt_tokens_details = details;
  }
  if (reasoning !== undefined || more?.audioOut !== undefined) {
    usage.completion_tokens_details = { reasoning_tokens: reasoning ?? 0 };
    if (more?.audioOut !== undefined) usage.completion_tokens_details.audio_tokens = more.audioOut;
  }
  if (more?.cacheWrite1h !== undefined && more.cacheWrite1h > 0) usage[CACHE_WRITE_1H] = more.cacheWrite1h;
  return usage;
}

/**
 * Writes `chat.completion.chunk` SSE events for one stream, keeping `id`,
 * `created` and `model` constant across chunks. Each method returns the SSE
 * text to send (possibly empty).
 */
export class ChatChunkWriter {
  /** The completion id every chunk carries. */
  readonly id: string;
  /** The unix time (seconds) every chunk carries. */
  readonly created: number;
  /** The model the chunks name; set it when the upstream names its own before the first chunk. */
  model: string;
  readonly #includeUsage: boolean;
  #roleSent = false;

  /** `options.id` and `options.created` default to a fresh id and now; `includeUsage` is the client's `stream_options.include_usage`. */
  constructor(options: { id?: string; model: string; includeUsage: boolean; created?: number }) {
    this.id = options.id ?? completionId();
    this.model = options.model;
    this.created = options.created ?? Math.floor(Date.now() / 1000);
    this.#includeUsage = options.includeUsage;
  }

  #chunk(delta: Record<string, unknown>, finish: FinishReason | null = null): string {
    const chunk: Record<string, unknown> = {
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.created,
      model: this.model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    };
    if (this.#includeUsage) chunk.usage = null;
    return `data: ${JSON.stringify(chunk)}\n\n`;
  }

  /** The first chunk: `role: assistant`. Later calls return ''. */
  role(): string {
    if (this.#roleSent) return '';
    this.#roleSent = true;
    return this.#chunk({ role: 'assistant', content: '' });
  }

  /** A text fragment as a `content` delta (after the role chunk, once); '' for an empty fragment. */
  text(text: string): string {
    return text === '' ? '' : this.role() + this.#chunk({ content: text });
  }

  /** Extra provider content (thinking) as `reasoning_content`, sent only when the client allows non-reference fields. */
  reasoning(text: string): string {
    return text === '' ? '' : this.role() + this.#chunk({ reasoning_content: text });
  }

  /** A tool call starts: its `index`, `id` and function `name`, with empty arguments to follow. */
  toolStart(index: number, id: string, name: string): string {
    return this.role() + this.#chunk({ tool_calls: [{ index, id, type: 'function', function: { name, arguments: '' } }] });
  }

  /** A fragment of tool call `index`'s arguments JSON; '' for an empty fragment. */
  toolArgs(index: number, fragment: string): string {
    return fragment === '' ? '' : this.#chunk({ tool_calls: [{ index, function: { arguments: fragment } }] });
  }

  /** The last content chunk: an empty delta with the `finish_reason`. */
  finish(reason: FinishReason): string {
    return this.role() + this.#chunk({}, reason);
  }

  /** The usage-only chunk, sent only when the client asked with `stream_options.include_usage`. */
  usage(usage: OpenAIUsage): string {
    if (!this.#includeUsage) return '';
    return `data: ${JSON.stringify({ id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.model, choices: [], usage })}\n\n`;
  }

  /** An in-band error event, as OpenAI sends after a 200. */
  error(message: string, type: string, code: string | null = null): string {
    return `data: ${JSON.stringify({ error: { message, type, param: null, code } })}\n\n`;
  }

  /** The stream's terminator, `data: [DONE]`. */
  done(): string {
    return 'data: [DONE]\n\n';
  }
}
