import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import messagesSchema from './schemas/messages.json' with { type: 'json' };
import responsesSchema from './schemas/responses.json' with { type: 'json' };

/**
 * JSON schemas the kit validates answers against:
 * - OpenAI's chat shapes, from the official OpenAPI document, read from `shared/schemas/openai.json`
 *   (set `SHARED_SCHEMAS_DIR`, or keep a `shared/schemas/` folder beside or above the package): never
 *   copied here. Absent, the checks that need it skip loudly, or fail where they are required
 *   ({@link requireSharedSchemas}).
 * - the Responses API's and Anthropic's Messages shapes, HAND-WRITTEN from their documentation
 *   (OpenAI's API reference; Anthropic's API reference), shipped with the kit in `schemas/`. Neither
 *   is an official schema: OpenAI's extracted document has the chat, completion, embeddings and
 *   error shapes only, and Anthropic publishes no machine-readable one. Each file's `$comment` says
 *   where it came from and how it differs (responses.json is stricter than the official definition
 *   on a few always-sent fields).
 */

/** Where `shared/schemas` is: `SHARED_SCHEMAS_DIR`, else the first `shared/schemas` found walking up from here. */
function sharedSchemasDir(): string | null {
  const env = process.env.SHARED_SCHEMAS_DIR;
  if (env !== undefined && existsSync(join(env, 'openai.json'))) return env;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 8; i++) {
    const candidate = join(dir, 'shared/schemas');
    if (existsSync(join(candidate, 'openai.json'))) return candidate;
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  return null;
}

/**
 * True when `shared/schemas/openai.json` is there. Else, with `required` (this repository's own
 * tests under `CI=true`) it throws; otherwise it warns loudly and returns false, and the caller skips.
 */
export function requireSharedSchemas(required = process.env.CI === 'true'): boolean {
  if (sharedSchemasDir() !== null) return true;
  const message = 'shared/schemas/openai.json was not found (set SHARED_SCHEMAS_DIR); the OpenAI schema checks cannot run';
  if (required) throw new Error(`${message} (it is required here)`);
  console.warn(`\n!!! SKIPPED: ${message}.\n`);
  return false;
}

let ajv: Ajv2020 | null = null;

function compiler(): Ajv2020 {
  if (ajv !== null) return ajv;
  ajv = new Ajv2020({ strict: false, allErrors: true, coerceTypes: false });
  const shared = sharedSchemasDir();
  if (shared !== null) ajv.addSchema(JSON.parse(readFileSync(join(shared, 'openai.json'), 'utf8')) as object, 'openai.json');
  ajv.addSchema(responsesSchema as object, 'responses.json');
  ajv.addSchema(messagesSchema as object, 'messages.json');
  return ajv;
}

const validators = new Map<string, ValidateFunction>();

/** The validator of a definition, e.g. `openai.json#/$defs/CreateChatCompletionResponse`. */
export function validator(ref: string): ValidateFunction {
  let v = validators.get(ref);
  if (v === undefined) {
    const found = compiler().getSchema(ref);
    if (found === undefined) throw new Error(`no schema ${ref}`);
    v = found;
    validators.set(ref, v);
  }
  return v;
}

/** The schema errors of a value against a definition, as readable lines ([] when valid). */
export function schemaErrors(ref: string, value: unknown): string[] {
  const v = validator(ref);
  if (v(value)) return [];
  return (v.errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message ?? ''} ${JSON.stringify(e.params)}`);
}
