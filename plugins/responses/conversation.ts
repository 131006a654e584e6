import { responses, type ContextWindows } from '../../sdk/index.js';
import type { Turn } from './store.js';
import { fitConversation } from './truncate.js';
import { responsesError } from './errors.js';

type Json = Record<string, unknown>;

/**
 * The items of earlier turns, oldest first, as input for the next turn: each
 * turn's input items, then its output items. For a translated target
 * (`provider` null) they are kept whole (the translation drops what chat
 * cannot take). For a native target they become the input of its own
 * Responses API: ids are dropped (the provider does not know the gateway's),
 * and reasoning items are kept only from turns that provider answered itself.
 */
export function historyItems(turns: readonly Turn[], provider: string | null): Json[] {
  const out: Json[] = [];
  for (const turn of turns) {
    const own = provider !== null && turn.native && turn.provider === provider;
    for (const item of [...turn.inputItems, ...turn.output]) {
      if (provider === null) {
        out.push(item);
        continue;
      }
      if (item.type === 'reasoning') {
        if (own) out.push(item);
        continue;
      }
      const { id: _id, ...rest } = item;
      out.push(rest);
    }
  }
  return out;
}

/** What fitting a conversation needs to know about the request and its target. */
export interface FitRequest {
  body: Json;
  provider: string;
  history: Json[];
  input: Json[];
  windows: ContextWindows;
}

/**
 * The conversation fitted into the target model's context window (see
 * `fitConversation`): unchanged when it fits or the window is unknown; with
 * `truncation: "auto"` items dropped from the middle; else a 400
 * `context_length_exceeded` naming the estimate and the window.
 */
export function fit(r: FitRequest): { history: Json[]; input: Json[] } {
  const model = typeof r.body.model === 'string' ? r.body.model : null;
  const window = r.windows.lookup(r.provider, model);
  if (window === null) return { history: r.history, input: r.input };
  const reserve = typeof r.body.max_output_tokens === 'number' ? r.body.max_output_tokens : 0;
  const mode = r.body.truncation === 'auto' ? 'auto' : 'disabled';
  const result = fitConversation({ history: r.history, input: r.input, fixed: [r.body.instructions ?? null, r.body.tools ?? null], reserve, window, mode });
  if (result.fits) return { history: result.history, input: result.input };
  const hint = mode === 'disabled' ? ' Send truncation: "auto" to let the gateway drop items from the middle of the conversation.' : ' Dropping items from the middle was not enough.';
  throw responsesError(
    'context_length_exceeded',
    `The conversation (about ${result.tokens} tokens${reserve > 0 ? `, plus max_output_tokens ${reserve}` : ''}) exceeds the context window of ${model} at ${r.provider} (${window} tokens).${hint}`,
    { param: 'input' },
  );
}

/** The client's `input` as items for a native target (a string becomes one user message), as sent. */
export function rawInput(input: unknown): Json[] {
  if (typeof input === 'string') return [{ role: 'user', content: input }];
  return Array.isArray(input) ? (input as Json[]) : [];
}

/** The input items this turn stores and lists (`responses.inputItems`, ids given). */
export const storedInput = (input: unknown): Json[] => responses.inputItems(input);
