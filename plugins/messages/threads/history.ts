import { GatewayError, isObject } from '../../../sdk/index.js';
import type { ThreadFixed, ThreadTurn } from './store.js';

type Json = Record<string, unknown>;

/** What a request's `thread` asks for: a new thread, or the continuation of the turn that answered `previousId`. */
export type ThreadParam = { type: 'create' } | { type: 'continue'; previousId: string };

/** The request's `thread`, checked; null when absent (or null). A malformed one is a 400 naming the field. */
export function threadParam(value: unknown): ThreadParam | null {
  if (value === undefined || value === null) return null;
  if (!isObject(value)) throw badThread('thread: must be an object, {"type": "create"} or {"type": "continue", "previous_message_id": …}');
  if (value.type === 'create') return { type: 'create' };
  if (value.type === 'continue') {
    const id = value.previous_message_id;
    if (typeof id !== 'string' || id === '') throw badThread('thread.previous_message_id: is required with type "continue" and must be a message id');
    return { type: 'continue', previousId: id };
  }
  throw badThread('thread.type: must be "create" or "continue"');
}

function badThread(message: string): GatewayError {
  return new GatewayError('invalid_request', message, { param: 'thread' });
}

/** The fields a continue leaves out and the thread keeps: each from the newest turn that set it (the first, normally). */
export function fixedOf(turns: readonly ThreadTurn[]): ThreadFixed {
  const out: ThreadFixed = {};
  for (let i = turns.length - 1; i >= 0 && (out.system === undefined || out.tools === undefined); i--) {
    const fixed = turns[i]!.fixed;
    if (fixed === null) continue;
    if (out.system === undefined && fixed.system !== undefined) out.system = fixed.system;
    if (out.tools === undefined && fixed.tools !== undefined) out.tools = fixed.tools;
  }
  return out;
}

/** What a turn keeps of its request when it starts (or restates) what the thread holds fixed; null when it says nothing of them. */
export function fixedFrom(body: Json): ThreadFixed | null {
  const fixed: ThreadFixed = {};
  if (body.system !== undefined) fixed.system = body.system;
  if (body.tools !== undefined) fixed.tools = body.tools;
  return fixed.system === undefined && fixed.tools === undefined ? null : fixed;
}

/** The messages of the turns, oldest first: each turn's messages as sent, then the assistant's answer. */
export function historyOf(turns: readonly ThreadTurn[]): Json[] {
  const out: Json[] = [];
  for (const turn of turns) {
    for (const m of turn.inputMessages) out.push(m);
    out.push({ role: 'assistant', content: turn.output });
  }
  return out;
}

/**
 * The whole conversation as one request without a thread: the history, then this turn's messages; the
 * thread's `system` and `tools` unless the request states its own. `thread` is left out.
 */
export function fullRequest(body: Json, turns: readonly ThreadTurn[]): Json {
  const { thread: _thread, ...rest } = body;
  const fixed = fixedOf(turns);
  const out: Json = { ...rest, messages: [...historyOf(turns), ...(Array.isArray(body.messages) ? (body.messages as Json[]) : [])] };
  if (out.system === undefined && fixed.system !== undefined) out.system = fixed.system;
  if (out.tools === undefined && fixed.tools !== undefined) out.tools = fixed.tools;
  return out;
}
