import { canonicalBody } from '../key.js';

/** Stands in for the embedded text in the exact-match parameters; no real content (a string or an array) can equal it. */
const EMBEDDED = Object.freeze({ $embedded: true });

export interface SemanticInput {
  /** The text that is embedded. */
  text: string;
  /** Canonical body with that text taken out: everything else must match exactly. */
  params: string;
}

type Json = Record<string, unknown>;

/**
 * Splits a request into the text compared by meaning and the parameters
 * compared exactly:
 * - chat: the text of the last `user` message (a string, or its `text` parts
 *   joined by a newline); every other field, every other message, that
 *   message's role, name and non-text parts are exact parameters;
 * - completions: a `prompt` that is one string (or an array of one string);
 * - anything else (embeddings, token prompts, a last user message with no
 *   text): null, so only the exact match applies.
 * `stream` and `stream_options` are left out, as in the exact key.
 */
export function semanticInput(route: string, body: Json | null, maxChars: number): SemanticInput | null {
  if (body === null) return null;
  if (route === 'chat.completions') return chatInput(body, maxChars);
  if (route === 'completions') return completionInput(body, maxChars);
  return null;
}

function chatInput(body: Json, maxChars: number): SemanticInput | null {
  const messages = body.messages;
  if (!Array.isArray(messages)) return null;
  let at = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i] as Json | null;
    if (m !== null && typeof m === 'object' && m.role === 'user') {
      at = i;
      break;
    }
  }
  if (at === -1) return null;
  const message = messages[at] as Json;
  const content = message.content;
  let text: string;
  let rest: unknown;
  if (typeof content === 'string') {
    text = content;
    rest = EMBEDDED;
  } else if (Array.isArray(content)) {
    const texts: string[] = [];
    rest = content.map((part: unknown) => {
      const p = part as Json | null;
      if (p !== null && typeof p === 'object' && p.type === 'text' && typeof p.text === 'string') {
        texts.push(p.text);
        return { type: 'text', text: EMBEDDED };
      }
      return part;
    });
    text = texts.join('\n');
  } else {
    return null;
  }
  if (text.trim() === '') return null;
  const copy = messages.slice();
  copy[at] = { ...message, content: rest };
  return { text: clip(text, maxChars), params: canonicalBody({ ...body, messages: copy }) };
}

function completionInput(body: Json, maxChars: number): SemanticInput | null {
  const prompt = body.prompt;
  const text = typeof prompt === 'string' ? prompt : Array.isArray(prompt) && prompt.length === 1 && typeof prompt[0] === 'string' ? prompt[0] : null;
  if (text === null || text.trim() === '') return null;
  return { text: clip(text, maxChars), params: canonicalBody({ ...body, prompt: EMBEDDED }) };
}

/** Only the first `max` characters are embedded (the end of a long text then cannot tell two requests apart). */
function clip(text: string, max: number): string {
  return text.length <= max ? text : text.slice(0, max);
}

/** A unit-length copy of `values` as float32, or null when it is empty, not numeric, or all zero. */
export function unitVector(values: unknown): Float32Array | null {
  if (!Array.isArray(values) || values.length === 0) return null;
  const out = new Float32Array(values.length);
  let norm = 0;
  for (let i = 0; i < values.length; i++) {
    const x = values[i];
    if (typeof x !== 'number' || !Number.isFinite(x)) return null;
    out[i] = x;
    norm += x * x;
  }
  if (norm === 0) return null;
  const inv = 1 / Math.sqrt(norm);
  for (let i = 0; i < out.length; i++) out[i]! *= inv;
  return out;
}

/** Cosine similarity of two unit vectors (their dot product); -1 when their dimensions differ. */
export function cosine(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) return -1;
  let dot = 0;
  for (let i = 0; i < a.length; i++) dot += a[i]! * b[i]!;
  return dot;
}
