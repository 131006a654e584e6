import { openAIUsage, type FinishReason, type OpenAIUsage } from '../openai/chunks.js';
import { isObject } from '../json-object.js';

type Json = Record<string, unknown>;

/** Anthropic `stop_reason` → OpenAI `finish_reason`. */
const FINISH: Readonly<Record<string, FinishReason>> = Object.freeze({
  end_turn: 'stop',
  stop_sequence: 'stop',
  pause_turn: 'stop',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  tool_use: 'tool_calls',
  refusal: 'content_filter',
});

/** Maps a `stop_reason`; an unknown or missing one is `stop`. */
export function finishReason(stopReason: unknown): FinishReason {
  return (typeof stopReason === 'string' ? FINISH[stopReason] : undefined) ?? 'stop';
}

/** Token counts as Anthropic reports them; `message_delta` repeats them cumulatively. */
export interface AnthropicCounts {
  /** Input tokens not read from or written to the prompt cache. */
  input_tokens?: number;
  /** Tokens generated, thinking included. */
  output_tokens?: number;
  /** Input tokens written to the prompt cache. */
  cache_creation_input_tokens?: number;
  /** Input tokens read from the prompt cache. */
  cache_read_input_tokens?: number;
  /** Output tokens spent thinking, when the upstream reports them (`output_tokens_details.thinking_tokens`). */
  thinking_tokens?: number;
  /** Of the cache writes, those kept for an hour (`cache_creation.ephemeral_1h_input_tokens`), when it says. */
  cache_creation_1h_tokens?: number;
}

const COUNT_FIELDS = ['input_tokens', 'output_tokens', 'cache_creation_input_tokens', 'cache_read_input_tokens'] as const;

/** Copies the numeric counts of an Anthropic `usage` object over `into` (later, non-null values win). */
export function mergeCounts(into: AnthropicCounts, usage: unknown): void {
  if (!isObject(usage)) return;
  for (const field of COUNT_FIELDS) {
    const value = usage[field];
    if (typeof value === 'number' && Number.isFinite(value)) into[field] = value;
  }
  const details = usage.output_tokens_details;
  if (isObject(details) && typeof details.thinking_tokens === 'number') into.thinking_tokens = details.thinking_tokens;
  // The writes by how long they are kept: a 1-hour write is billed at 2× input, a 5-minute one at 1.25×.
  const creation = usage.cache_creation;
  if (isObject(creation) && typeof creation.ephemeral_1h_input_tokens === 'number' && Number.isFinite(creation.ephemeral_1h_input_tokens)) {
    into.cache_creation_1h_tokens = creation.ephemeral_1h_input_tokens;
  }
}

/**
 * OpenAI usage from Anthropic counts. Anthropic's `input_tokens` excludes cache
 * reads and writes, OpenAI's `prompt_tokens` includes them, so
 * prompt = input + cache_creation + cache_read and cached = cache_read.
 */
export function usageFromCounts(c: AnthropicCounts): OpenAIUsage {
  const cacheRead = c.cache_read_input_tokens ?? 0;
  const written = c.cache_creation_input_tokens ?? 0;
  const prompt = (c.input_tokens ?? 0) + written + cacheRead;
  // The writes stay apart (cache_write_tokens): they are billed above input, not as it.
  return openAIUsage(prompt, c.output_tokens ?? 0, cacheRead, c.thinking_tokens, written > 0 ? { cacheWrite: written, cacheWrite1h: c.cache_creation_1h_tokens } : undefined);
}

