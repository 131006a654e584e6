import * as v from 'valibot';

export const OpenAIOptionsSchema = v.strictObject({
  /** Replaces https://api.openai.com/v1 for every request (a proxy, a compatible server). */
  baseURL: v.optional(v.pipe(v.string(), v.url())),
  /** Used when the request's target carries no key. */
  apiKey: v.optional(v.pipe(v.string(), v.minLength(1))),
  organization: v.optional(v.string()),
  project: v.optional(v.string()),
  /**
   * `ask` (default): a chat or completions stream whose client asked no usage is sent with
   * `stream_options.include_usage`, its usage recorded and its usage event kept from the client;
   * `off`: streams pass as sent (for a `baseURL` or `custom_host` server that refuses the field).
   */
  streamUsage: v.optional(v.picklist(['ask', 'off'], 'must be ask or off'), 'ask'),
});

export type OpenAIOptions = v.InferInput<typeof OpenAIOptionsSchema>;
