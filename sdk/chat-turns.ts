import { GatewayError } from '../core/index.js';
import { isObject } from './json-object.js';

/**
 * What translators of OpenAI chat messages into turn-based APIs (Anthropic Messages, Bedrock Converse)
 * share: both refuse two turns of one role in a row, and both take tool arguments as an object.
 */

type Json = Record<string, unknown>;

/** One turn of a turn-based API: a role and its content blocks. */
export interface ChatTurn<B> {
  /** Who speaks in this turn. */
  role: 'user' | 'assistant';
  /** The turn's content blocks, in the target format. */
  content: B[];
}

/** Turns being built: blocks pushed under the last turn's role join that turn; an empty push adds nothing. */
export interface ChatTurns<B> {
  /** The turns so far, alternating roles. */
  readonly turns: ChatTurn<B>[];
  /** Adds blocks under `role`: to the last turn when it has that role, else as a new turn; nothing for no blocks. */
  push(role: ChatTurn<B>['role'], blocks: B[]): void;
}

/** An empty list of alternating turns. */
export function chatTurns<B>(): ChatTurns<B> {
  const turns: ChatTurn<B>[] = [];
  return {
    turns,
    push(role, blocks) {
      if (blocks.length === 0) return;
      const last = turns.at(-1);
      if (last !== undefined && last.role === role) last.content.push(...blocks);
      else turns.push({ role, content: blocks });
    },
  };
}

/**
 * Calls `each` with every message of an OpenAI chat body's `messages` and its place (`messages[i]`), after
 * checking that `messages` is an array of objects (a 400 `invalid_request` naming the place otherwise).
 */
export function forEachChatMessage(input: unknown, each: (message: Json, where: string) => void): void {
  if (!Array.isArray(input)) throw new GatewayError('invalid_request', "'messages' is required and must be an array.", { param: 'messages' });
  input.forEach((message: unknown, i: number) => {
    const where = `messages[${i}]`;
    if (!isObject(message)) throw new GatewayError('invalid_request', `'${where}' must be an object.`, { param: where });
    each(message, where);
  });
}

/** A tool call's `arguments` as an object: JSON text is parsed; anything that does not give an object becomes `{}`. */
export function toolArguments(args: unknown): Json {
  if (isObject(args)) return args;
  if (typeof args !== 'string') return {};
  try {
    const value: unknown = JSON.parse(args);
    return isObject(value) ? value : {};
  } catch {
    return {};
  }
}
