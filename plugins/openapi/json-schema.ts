import { toJsonSchema, type JsonSchema } from '@valibot/to-json-schema';
import type { v } from '../../sdk/index.js';

export type { JsonSchema };

/**
 * valibot → JSON Schema (draft 2020-12, the dialect of OpenAPI 3.1), for the
 * API reference. Conversion never throws and never fails the document:
 *
 * - `typeMode: 'input'`: what a client sends. A pipeline stops at its first
 *   transform (`v.transform(Number)` on a query parameter documents the
 *   string the client writes, `^\d{1,9}$`, not the number the route reads).
 * - `errorMode: 'ignore'`: a kind JSON Schema has no word for (`v.custom`,
 *   `v.check`, a transform) loosens the schema instead of throwing: a custom
 *   schema is documented as any value, a check as nothing.
 * - `v.lazy` is documented as any value: its branch depends on the input
 *   (a string or an object, a guardrail id or an inline entry), which the
 *   converter would otherwise settle by calling it with `undefined`, giving
 *   one branch as if it were the only one, and a `$ref` to a `$defs` that
 *   an OpenAPI document does not resolve where the schema is embedded. (The
 *   converter still calls the getter once, with `undefined`; its definition
 *   is dropped.)
 *
 * Schemas are shared by many routes (`Name`, `Metadata`): each is converted once.
 */
export function createConverter(onError: (err: unknown) => void = () => undefined): (schema: v.GenericSchema) => JsonSchema {
  const done = new WeakMap<object, JsonSchema>();
  return (schema) => {
    const known = done.get(schema);
    if (known !== undefined) return known;
    let out: JsonSchema;
    try {
      out = toJsonSchema(schema, {
        target: 'draft-2020-12',
        typeMode: 'input',
        errorMode: 'ignore',
        overrideSchema: (context) => (context.valibotSchema.type === 'lazy' ? {} : undefined),
      });
      // The dialect is the document's (OpenAPI 3.1's default); repeating it in every embedded schema says nothing.
      delete (out as Record<string, unknown>).$schema;
      // The converter defines what a lazy schema's getter gave before the override replaces the reference: nothing points there.
      delete (out as Record<string, unknown>).$defs;
    } catch (err) {
      onError(err);
      out = {};
    }
    done.set(schema, out);
    return out;
  };
}
