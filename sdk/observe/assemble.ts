/**
 * Assembles the text of an OpenAI-format SSE answer. A module of its own that
 * imports nothing from the core, so the log writer thread can load it (it
 * assembles a stream's text where the entry is written, off the response path).
 */
import { SSEParser } from '../sse.js';
import { isObject } from '../json-object.js';

/** What a streamed answer said, assembled from its SSE events. */
export interface AssembledStream {
  /** The text of every choice, in index order (tool-call arguments after a choice's text). */
  text: string;
  /** Characters of generated output (text and tool-call arguments), for token estimates. */
  outputChars: number;
  /** The model the stream names (its first `model` field), null when none. */
  model: string | null;
  /** `usage` of the last event carrying one, as sent (OpenAI shape). */
  usage: Record<string, unknown> | null;
}

type Json = Record<string, unknown>;

/**
 * Assembles a streamed answer of any front door: OpenAI's chunks
 * (`chat.completion.chunk`, streamed `text_completion`: the content deltas per
 * choice, tool-call arguments, the model and the usage chunk), the Responses
 * API's events and Anthropic's Messages events (their text and tool-call
 * deltas, the model and the usage). Events that are not JSON are skipped.
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
    if (typeof chunk.type === 'string') {
      // A Responses or Messages event: one text, in order.
      const acc = choices.get(0) ?? { text: '', tools: '' };
      choices.set(0, acc);
      const found = eventPiece(chunk, acc);
      outputChars += found.chars;
      if (found.model !== null && model === null) model = found.model;
      // Anthropic's message_delta repeats only what changed (output tokens): merged over message_start's.
      if (found.usage !== null) usage = chunk.type === 'message_delta' && usage !== null ? { ...(usage as Json), ...found.usage } : found.usage;
      continue;
    }
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

/** What one Responses or Messages event adds: text or tool-call pieces (into `acc`), the model, the usage. */
function eventPiece(e: Json, acc: { text: string; tools: string }): { chars: number; model: string | null; usage: Json | null } {
  let chars = 0;
  let model: string | null = null;
  let usage: Json | null = null;
  const add = (piece: unknown, into: 'text' | 'tools') => {
    if (typeof piece !== 'string') return;
    acc[into] += piece;
    chars += piece.length;
  };
  switch (e.type) {
    case 'response.output_text.delta':
    case 'response.refusal.delta':
      add(e.delta, 'text');
      break;
    case 'response.function_call_arguments.delta':
      add(e.delta, 'tools');
      break;
    case 'response.output_item.added':
      if (isObject(e.item) && e.item.type === 'function_call' && typeof e.item.name === 'string') add(`${acc.tools === '' ? '' : '\n'}${e.item.name}`, 'tools');
      break;
    case 'response.created':
    case 'response.completed':
    case 'response.incomplete':
    case 'response.failed':
      if (isObject(e.response)) {
        if (typeof e.response.model === 'string') model = e.response.model;
        if (isObject(e.response.usage)) usage = e.response.usage;
      }
      break;
    case 'message_start':
      if (isObject(e.message)) {
        if (typeof e.message.model === 'string') model = e.message.model;
        if (isObject(e.message.usage)) usage = e.message.usage;
      }
      break;
    case 'content_block_start':
      if (isObject(e.content_block) && e.content_block.type === 'tool_use' && typeof e.content_block.name === 'string') add(`${acc.tools === '' ? '' : '\n'}${e.content_block.name}`, 'tools');
      break;
    case 'content_block_delta':
      if (isObject(e.delta)) {
        if (e.delta.type === 'text_delta') add(e.delta.text, 'text');
        else if (e.delta.type === 'input_json_delta') add(e.delta.partial_json, 'tools');
      }
      break;
    case 'message_delta':
      if (isObject(e.usage)) usage = e.usage;
      break;
    default:
      break;
  }
  return { chars, model, usage };
}
