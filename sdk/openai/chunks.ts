import { randomBytes } from 'node:crypto';

/** OpenAI's `finish_reason` values. */
export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'function_call';

/** Usage in OpenAI's wire shape. */
export interface OpenAIUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details?: { cached_tokens: number };
  completion_tokens_details?: { reasoning_tokens: number };
}

/** An id in OpenAI's style, for providers that give none. */
export function completionId(prefix = 'chatcmpl-'): string {
  return prefix + randomBytes(12).toString('base64url');
}

/** Builds OpenAI usage from token counts, with the details only when known. */
export function openAIUsage(prompt: number, completion: number, cached?: number, reasoning?: number): OpenAIUsage {
  const usage: OpenAIUsage = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  if (cached !== undefined) usage.prompt_tokens_details = { cached_tokens: cached };
  if (reasoning !== undefined) usage.completion_tokens_details = { reasoning_tokens: reasoning };
  return usage;
}

/**
 * Writes `chat.completion.chunk` SSE events for one stream, keeping `id`,
 * `created` and `model` constant across chunks. Each method returns the SSE
 * text to send (possibly empty).
 */
export class ChatChunkWriter {
  readonly id: string;
  readonly created: number;
  model: string;
  readonly #includeUsage: boolean;
  #roleSent = false;

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

  text(text: string): string {
    return text === '' ? '' : this.role() + this.#chunk({ content: text });
  }

  /** Extra provider content (thinking) as `reasoning_content`, sent only when the client allows non-reference fields. */
  reasoning(text: string): string {
    return text === '' ? '' : this.role() + this.#chunk({ reasoning_content: text });
  }

  toolStart(index: number, id: string, name: string): string {
    return this.role() + this.#chunk({ tool_calls: [{ index, id, type: 'function', function: { name, arguments: '' } }] });
  }

  toolArgs(index: number, fragment: string): string {
    return fragment === '' ? '' : this.#chunk({ tool_calls: [{ index, function: { arguments: fragment } }] });
  }

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

  done(): string {
    return 'data: [DONE]\n\n';
  }
}
