import * as v from 'valibot';

export const OpenAIOptionsSchema = v.strictObject({
  /** Replaces https://api.openai.com/v1 for every request (a proxy, a compatible server). */
  baseURL: v.optional(v.pipe(v.string(), v.url())),
  /** Used when the request's target carries no key. */
  apiKey: v.optional(v.pipe(v.string(), v.minLength(1))),
  organization: v.optional(v.string()),
  project: v.optional(v.string()),
});

export type OpenAIOptions = v.InferInput<typeof OpenAIOptionsSchema>;
