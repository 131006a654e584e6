import * as v from 'valibot';

export const StaticAuthOptionsSchema = v.strictObject({
  /** Accepted gateway API keys. An empty list rejects every request. */
  keys: v.array(v.pipe(v.string(), v.minLength(8, 'a gateway API key must be at least 8 characters'))),
});

export type StaticAuthOptions = v.InferInput<typeof StaticAuthOptionsSchema>;
