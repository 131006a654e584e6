import * as v from 'valibot';

export const AnthropicOptionsSchema = v.strictObject({
  /** Replaces https://api.anthropic.com (no `/v1`: the route path carries it) for every request. */
  baseURL: v.optional(v.pipe(v.string(), v.url())),
  /** Sent as `x-api-key` when the request's target carries no key. */
  apiKey: v.optional(v.pipe(v.string(), v.minLength(1))),
  /** The `anthropic-version` header. */
  version: v.optional(v.pipe(v.string(), v.minLength(1)), '2023-06-01'),
  /** `max_tokens` sent when the client gives neither `max_completion_tokens` nor `max_tokens` (Anthropic requires it). */
  defaultMaxTokens: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1)), 4096),
});

export type AnthropicOptions = v.InferInput<typeof AnthropicOptionsSchema>;
