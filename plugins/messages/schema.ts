import * as v from 'valibot';
import { plainObject } from '../../sdk/index.js';

const range = (min: number, max: number) => v.optional(v.pipe(v.number(), v.minValue(min), v.maxValue(max)));

const MessageSchema = v.looseObject({
  role: v.picklist(['user', 'assistant'], 'must be user or assistant'),
  content: v.union([v.string(), v.array(plainObject('must be a content block object'))], 'must be a string or an array of content blocks'),
});

const common = {
  model: v.pipe(v.string('is required and must be a string'), v.minLength(1, 'must not be empty')),
  messages: v.pipe(v.array(MessageSchema, 'is required and must be an array'), v.minLength(1, 'must have at least 1 message')),
  system: v.optional(v.union([v.string(), v.array(plainObject())], 'must be a string or an array of text blocks')),
  tools: v.optional(v.array(v.looseObject({ name: v.pipe(v.string('must be a string'), v.minLength(1)) }))),
  tool_choice: v.optional(v.looseObject({ type: v.picklist(['auto', 'any', 'tool', 'none'], 'must be auto, any, tool or none') })),
};

const messagesBody = {
  ...common,
  max_tokens: v.pipe(v.number('is required and must be an integer'), v.integer('must be an integer'), v.minValue(1, 'must be at least 1')),
  temperature: range(0, 1),
  top_p: range(0, 1),
  top_k: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0))),
  stop_sequences: v.optional(v.array(v.string('each stop sequence must be a string'))),
  stream: v.optional(v.boolean()),
  metadata: v.optional(v.looseObject({ user_id: v.optional(v.nullable(v.pipe(v.string(), v.maxLength(256, 'must be at most 256 characters')))) })),
  thinking: v.optional(plainObject()),
};
/**
 * `POST /v1/messages` body: what Anthropic requires and limits (`max_tokens`
 * required, `temperature` 0–1, …), checked before any provider is called, so
 * a native and a translated target refuse the same requests. Loose: other
 * fields pass on.
 */
export const MessagesBodySchema = v.pipe(
  v.looseObject({ ...messagesBody, messages: v.array(MessageSchema, 'is required and must be an array') }),
  // At least one message, but in a thread's continue: after a `pause_turn` the thread holds the unfinished turn and
  // the client resumes it with no new message.
  v.forward(
    v.partialCheck([['messages'], ['thread']], (b) => b.messages.length > 0 || continues(b as { thread?: unknown }), 'must have at least 1 message'),
    ['messages'],
  ),
);

function continues(body: { thread?: unknown }): boolean {
  const thread = body.thread;
  return typeof thread === 'object' && thread !== null && (thread as { type?: unknown }).type === 'continue';
}

/** `POST /v1/messages/count_tokens` body: no `max_tokens`. */
export const CountTokensBodySchema = v.looseObject(common);

/** An error answer in Anthropic's envelope (`anthropic.anthropicErrorBody`), for the API reference. */
export const AnthropicErrorSchema = v.object({ type: v.literal('error'), error: v.object({ type: v.string(), message: v.string() }) });

export const MessagesOptionsSchema = v.strictObject({
  /**
   * Providers whose chat adapters read `cache_control` on content parts (prompt caching), for the translated path:
   * default the Anthropic family. Elsewhere the markers are dropped, since other APIs refuse unknown part fields.
   */
  cacheControlProviders: v.optional(v.array(v.string()), ['anthropic', 'bedrock', 'vertex-ai']),
  /** The SQL store (`api.stores`) the gateway keeps threads in (`thread` on the Messages door, docs/formats.md). */
  store: v.optional(v.string(), 'sql'),
  /**
   * A thread can be continued while one of its turns is younger than this many seconds; expired threads are
   * deleted. Default an hour (Anthropic deletes its own within an hour of the last use).
   */
  threadTtlSeconds: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1, 'must be at least 1')), 3600),
  /** Longest answer stored as a thread's turn, in bytes; a thread whose answer was longer cannot be continued through the gateway. */
  threadMaxTurnBytes: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1024, 'must be at least 1024')), 4 * 1024 * 1024),
});

export type MessagesOptions = v.InferInput<typeof MessagesOptionsSchema>;
