import * as v from 'valibot';
import { GatewayError } from './errors.js';

/** Dotted path of a valibot issue, with array indices in brackets: `targets[1].cb_config`. */
export function issuePath(issue: v.BaseIssue<unknown>): string {
  let out = '';
  for (const item of issue.path ?? []) {
    const key = item.key as string | number;
    out += typeof key === 'number' ? `[${key}]` : out === '' ? String(key) : `.${String(key)}`;
  }
  return out;
}

/**
 * Parses plugin or server options at boot. A bad value throws an Error naming
 * the owner and the path of every offending field, so start-up fails fast.
 */
export function parseOptions<const S extends v.GenericSchema>(owner: string, schema: S, input: unknown): v.InferOutput<S> {
  const result = v.safeParse(schema, input ?? {});
  if (result.success) return result.output;
  const lines = result.issues.map((issue) => `${issuePath(issue) || '(root)'}: ${issue.message}`);
  throw new Error(`Invalid options for ${owner}: ${lines.join('; ')}`);
}

/** A JSON object (not an array, not null). valibot's object and record schemas accept arrays. */
export const plainObject = (message = 'must be a JSON object') =>
  v.custom<Record<string, unknown>>((input) => typeof input === 'object' && input !== null && !Array.isArray(input), message);

/** The 400 for a request body that fails its schema: the message and `param` name the first offending field. */
export function invalidBody(issues: readonly [v.BaseIssue<unknown>, ...v.BaseIssue<unknown>[]]): GatewayError {
  const issue = issues[0];
  const param = issuePath(issue) || null;
  return new GatewayError('invalid_request', `Invalid request body: ${param === null ? '' : `'${param}' `}${issue.message}`, { param });
}
