/**
 * Assembles the text of an OpenAI-format SSE answer. A module of its own that
 * imports nothing from the core, so the log writer thread can load it (it
 * assembles a stream's text where the entry is written, off the response path).
 */
import { SSEParser } from '../sse.js';

/** What a streamed answer said, assembled from its SSE events. */
export interface AssembledStream {
  /** The text of every choice, in index order (tool-call arguments after a choice's text). */
  text: string;
  /** Characters of generated output (text and tool-call arguments), for token estimates. */
  outputChars: number;
  model: string | null;
  /** `usage` of the last event carrying one, as sent (OpenAI shape). */
  usage: Record<string, unknown> | null;
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * Assembles an OpenAI-format SSE answer (`chat.completion.chunk`, streamed
 * `text_completion`): the content deltas per choice, tool-call arguments,
 * the model and the usage chunk. Events that are not JSON are skipped.
 */
export function assembleSSE(text: string): AssembledStream {
  const parser = new SSEParser();
  const events = parser.push(text);
  for (const e of parser.end()) events.push(e);
  const choices = new Map<number, { text: string; tools: string }>();
  let model: string | null = null;
  let usage: Json | null = null;
  let outputChars = 0;
  for (const event of events) {
    const data = event.data;
    if (data === '' || data === '[DONE]' || data.charCodeAt(0) !== 123 /* { */) continue;
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch {
      continue;
    }
    if (!isObject(chunk)) continue;
    if (model === null && typeof chunk.model === 'string') model = chunk.model;
    if (isObject(chunk.usage)) usage = chunk.usage;
    if (!Array.isArray(chunk.choices)) continue;
    for (const c of chunk.choices as unknown[]) {
      if (!isObject(c)) continue;
      const index = typeof c.index === 'number' ? c.index : 0;
      let acc = choices.get(index);
      if (acc === undefined) {
        acc = { text: '', tools: '' };
        choices.set(index, acc);
      }
      if (typeof c.text === 'string') {
        acc.text += c.text;
        outputChars += c.text.length;
      }
      const delta = c.delta;
      if (!isObject(delta)) continue;
      for (const field of ['content', 'reasoning_content', 'refusal'] as const) {
        const piece = delta[field];
        if (typeof piece === 'string') {
          if (field === 'content') acc.text += piece;
          outputChars += piece.length;
        }
      }
      if (Array.isArray(delta.tool_calls)) {
        for (const t of delta.tool_calls as unknown[]) {
          const fn = isObject(t) && isObject(t.function) ? t.function : null;
          if (fn === null) continue;
          if (typeof fn.name === 'string') {
            acc.tools += `${acc.tools === '' ? '' : '\n'}${fn.name}`;
            outputChars += fn.name.length;
          }
          if (typeof fn.arguments === 'string') {
            acc.tools += fn.arguments;
            outputChars += fn.arguments.length;
          }
        }
      }
    }
  }
  const ordered = [...choices.entries()].sort((a, b) => a[0] - b[0]).map(([, c]) => (c.tools === '' ? c.text : `${c.text}${c.text === '' ? '' : '\n'}${c.tools}`));
  return { text: ordered.join('\n\n'), outputChars, model, usage };
}
