/** A JSON object as the translations read it: string keys, values of any JSON type. */
export type JsonObject = Record<string, unknown>;

/** True for a plain object: not null, not an array. What a JSON object parses to. */
export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
