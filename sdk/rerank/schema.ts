import * as v from 'valibot';
import { plainObject } from '../../core/index.js';

/**
 * The body of `POST /rerank` (spec, POST /rerank). Required: `model`, `query`,
 * `documents` (at least one; each a string or an object with a string `text`
 * and optional metadata). Optional: `top_n` ≥ 1, `return_documents`,
 * `max_tokens_per_doc` ≥ 1, `priority`, `rank_fields`, `truncation`,
 * `parameters`. Unknown fields pass through (providers ignore them).
 */
const text = v.string('must be a string');
const DocumentObject = v.looseObject({ text }, 'must be a string or an object with a text field');
/** The branch is picked by the input's type, so an object's issue names `documents[i].text` instead of "matches no option". */
const Document = v.lazy((input) => (typeof input === 'string' ? text : DocumentObject));

/**
 * The body of `POST /rerank`, as the rerank route validates it: `model`, `query` and `documents`
 * (strings, or objects with a string `text`) required, the spec's optional fields checked, unknown fields passed through.
 */
export const RerankBodySchema = v.looseObject({
  model: v.pipe(v.string('is required and must be a string'), v.minLength(1, 'must not be empty')),
  query: v.string('is required and must be a string'),
  documents: v.pipe(v.array(Document, 'is required and must be an array'), v.minLength(1, 'must hold at least 1 document')),
  top_n: v.optional(v.pipe(v.number('must be an integer'), v.integer('must be an integer'), v.minValue(1, 'must be at least 1'))),
  return_documents: v.optional(v.boolean('must be a boolean')),
  max_tokens_per_doc: v.optional(v.pipe(v.number('must be an integer'), v.integer('must be an integer'), v.minValue(1, 'must be at least 1'))),
  priority: v.optional(v.number('must be a number')),
  rank_fields: v.optional(v.array(v.string('must be a string'), 'must be an array of strings')),
  truncation: v.optional(v.boolean('must be a boolean')),
  parameters: v.optional(plainObject('must be a JSON object')),
});

/** A rerank request body, as {@link RerankBodySchema} checks it. */
export type RerankBody = v.InferOutput<typeof RerankBodySchema>;
