import { isObject, CHARS_PER_TOKEN } from '../../sdk/index.js';

type Json = Record<string, unknown>;

/** Tokens counted for an image or a file part: their real cost depends on size and model, so a flat, generous figure. */
const MEDIA_TOKENS = 1000;
/** Tokens of framing per item (role, separators) that models add. */
const ITEM_TOKENS = 4;

/** Characters of the text an item carries (message parts, call arguments, call outputs), and its media parts. */
function measure(value: unknown, acc: { chars: number; media: number }): void {
  if (typeof value === 'string') acc.chars += value.length;
  else if (Array.isArray(value)) for (const v of value) measure(v, acc);
  else if (isObject(value)) {
    const type = value.type;
    if (type === 'input_image' || type === 'input_file' || type === 'image_url' || type === 'file') acc.media++;
    for (const field of ['text', 'refusal', 'content', 'arguments', 'output', 'name', 'summary']) if (value[field] !== undefined) measure(value[field], acc);
  }
}

/**
 * Estimated tokens of items (characters / 4, plus a flat figure per image or
 * file and per item). An estimate, not a tokenizer: it decides truncation,
 * whose exact point no client relies on.
 */
export function estimateTokens(items: readonly Json[], extra: unknown = null): number {
  const acc = { chars: 0, media: 0 };
  measure(items, acc);
  if (extra !== null) acc.chars += typeof extra === 'string' ? extra.length : JSON.stringify(extra).length;
  return Math.ceil(acc.chars / CHARS_PER_TOKEN) + acc.media * MEDIA_TOKENS + items.length * ITEM_TOKENS;
}

/** What a conversation is fitted into a context window with. */
export interface FitInput {
  /** Earlier turns' items, oldest first. */
  history: readonly Json[];
  /** This turn's items. */
  input: readonly Json[];
  /** `instructions` and `tools`, counted but never dropped. */
  fixed: unknown;
  /** Tokens kept free for the answer (`max_output_tokens`, 0 when not set). */
  reserve: number;
  /** The model's context window in tokens. */
  window: number;
  /** `auto` drops items from the middle; `disabled` only says whether it fits. */
  mode: 'auto' | 'disabled';
}

/** The fitted conversation, or why it cannot fit. */
export type FitResult =
  | { fits: true; history: Json[]; input: Json[]; dropped: number; tokens: number }
  | { fits: false; tokens: number };

/** The call id pairing a function call with its output, if the item is either. */
const callIdOf = (item: Json): string | null => ((item.type === 'function_call' || item.type === 'function_call_output') && typeof item.call_id === 'string' ? item.call_id : null);

/**
 * Fits a conversation into a context window. With `auto`, items are dropped
 * from the middle, oldest first: the first item (usually what set the task)
 * and the last one (what is asked now) are kept, and a function call is
 * dropped together with its output, so no call is left unanswered. When even
 * that is not enough, or with `disabled`, the result says it does not fit.
 */
export function fitConversation(f: FitInput): FitResult {
  const all = [...f.history, ...f.input];
  const budget = f.window - f.reserve;
  const fixed = estimateTokens([], f.fixed);
  let tokens = estimateTokens(all) + fixed;
  if (tokens <= budget) return { fits: true, history: [...f.history], input: [...f.input], dropped: 0, tokens };
  if (f.mode === 'disabled' || all.length <= 2) return { fits: false, tokens };

  const sizes = all.map((item) => estimateTokens([item]));
  const keep = all.map(() => true);
  const last = all.length - 1;
  const protectedCalls = new Set([callIdOf(all[0]!), callIdOf(all[last]!)].filter((id): id is string => id !== null));
  for (let i = 1; i < last && tokens > budget; i++) {
    if (!keep[i]) continue;
    const id = callIdOf(all[i]!);
    if (id !== null && protectedCalls.has(id)) continue;
    const group = id === null ? [i] : all.flatMap((item, j) => (j > 0 && j < last && keep[j] && callIdOf(item) === id ? [j] : []));
    for (const j of group) {
      keep[j] = false;
      tokens -= sizes[j]!;
    }
  }
  if (tokens > budget) return { fits: false, tokens };
  const split = f.history.length;
  return {
    fits: true,
    history: all.filter((_, j) => j < split && keep[j]),
    input: all.filter((_, j) => j >= split && keep[j]),
    dropped: keep.filter((k) => !k).length,
    tokens,
  };
}
