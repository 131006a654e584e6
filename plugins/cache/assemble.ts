import { anthropic, SSEParser } from '../../sdk/index.js';
import { isObject } from '../../sdk/index.js';

interface ToolCallAcc {
  id: string | undefined;
  type: string;
  name: string;
  args: string;
}

interface ChoiceAcc {
  index: number;
  content: string | null;
  refusal: string | null;
  text: string;
  toolCalls: Map<number, ToolCallAcc>;
  finish: string | null;
}

type Json = Record<string, unknown>;

/**
 * Assembles an OpenAI SSE answer (`chat.completion.chunk` or streamed
 * `text_completion`) into the JSON text of the one complete answer it stands
 * for, or returns null when it must not be stored: an in-band error event,
 * bytes that are not JSON events, a choice without `finish_reason` (the
 * stream stopped early), or fields a replay would lose (logprobs, the legacy
 * `function_call`).
 */
export function assembleStream(route: string, text: string): string | null {
  if (route === 'responses') return completedResponse(text);
  if (route === 'messages') {
    const message = anthropic.assembleMessage(text);
    return message === null ? null : JSON.stringify(message);
  }
  const parser = new SSEParser();
  const events = parser.push(text);
  for (const e of parser.end()) events.push(e);
  const chat = route === 'chat.completions';
  const choices = new Map<number, ChoiceAcc>();
  let head: Json | null = null;
  let usage: unknown = null;
  for (const event of events) {
    const data = event.data;
    if (data === '[DONE]') break;
    if (data === '') continue;
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch {
      return null;
    }
    if (!isObject(chunk) || chunk.error !== undefined) return null;
    head ??= chunk;
    if (isObject(chunk.usage)) usage = chunk.usage;
    if (!Array.isArray(chunk.choices)) continue;
    for (const c of chunk.choices as unknown[]) {
      if (!isObject(c) || typeof c.index !== 'number') return null;
      if (c.logprobs !== undefined && c.logprobs !== null) return null;
      let acc = choices.get(c.index);
      if (acc === undefined) {
        acc = { index: c.index, content: null, refusal: null, text: '', toolCalls: new Map(), finish: null };
        choices.set(c.index, acc);
      }
      if (typeof c.finish_reason === 'string') acc.finish = c.finish_reason;
      if (!chat) {
        if (typeof c.text === 'string') acc.text += c.text;
        continue;
      }
      const delta = c.delta;
      if (!isObject(delta)) continue;
      if (delta.function_call !== undefined && delta.function_call !== null) return null;
      if (typeof delta.content === 'string') acc.content = (acc.content ?? '') + delta.content;
      if (typeof delta.refusal === 'string') acc.refusal = (acc.refusal ?? '') + delta.refusal;
      if (Array.isArray(delta.tool_calls)) {
        for (const t of delta.tool_calls as unknown[]) {
          if (!isObject(t) || typeof t.index !== 'number') return null;
          let call = acc.toolCalls.get(t.index);
          if (call === undefined) {
            call = { id: undefined, type: 'function', name: '', args: '' };
            acc.toolCalls.set(t.index, call);
          }
          if (typeof t.id === 'string') call.id = t.id;
          if (typeof t.type === 'string') call.type = t.type;
          const fn = t.function;
          if (isObject(fn)) {
            if (typeof fn.name === 'string') call.name += fn.name;
            if (typeof fn.arguments === 'string') call.args += fn.arguments;
          }
        }
      }
    }
  }
  if (head === null || choices.size === 0) return null;
  for (const acc of choices.values()) if (acc.finish === null) return null;
  const ordered = [...choices.values()].sort((a, b) => a.index - b.index);

  const answer: Json = {
    id: head.id,
    object: chat ? 'chat.completion' : 'text_completion',
    created: head.created,
    model: head.model,
  };
  if (head.system_fingerprint !== undefined) answer.system_fingerprint = head.system_fingerprint;
  if (head.service_tier !== undefined) answer.service_tier = head.service_tier;
  answer.choices = ordered.map((acc) => {
    if (!chat) return { text: acc.text, index: acc.index, logprobs: null, finish_reason: acc.finish };
    const message: Json = { role: 'assistant', content: acc.content, refusal: acc.refusal };
    if (acc.toolCalls.size > 0) {
      message.tool_calls = [...acc.toolCalls.entries()]
        .sort(([a], [b]) => a - b)
        .map(([, call]) => ({ id: call.id, type: call.type, function: { name: call.name, arguments: call.args } }));
    }
    return { index: acc.index, message, logprobs: null, finish_reason: acc.finish };
  });
  if (usage !== null) answer.usage = usage;
  return JSON.stringify(answer);
}

/**
 * A Responses API event stream → the JSON text of the response object its
 * `response.completed` event carries (the whole answer, usage included), or
 * null when it did not complete (incomplete, failed, cut short).
 */
function completedResponse(text: string): string | null {
  const parser = new SSEParser();
  const events = parser.push(text);
  for (const e of parser.end()) events.push(e);
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i]!;
    if (e.event !== 'response.completed') continue;
    try {
      const data = JSON.parse(e.data) as Json;
      return isObject(data.response) && data.response.status === 'completed' ? JSON.stringify(data.response) : null;
    } catch {
      return null;
    }
  }
  return null;
}
