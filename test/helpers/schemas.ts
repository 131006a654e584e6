import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';

/**
 * JSON schemas answers are validated against in tests:
 * - OpenAI's chat shapes, from the official OpenAPI document, read from `shared/schemas/openai.json`
 *   beside the clone (never copied here): absent locally, the tests that need it skip loudly;
 *   under CI=true they fail;
 * - the Responses API's and Anthropic's Messages shapes, HAND-WRITTEN from their documentation
 *   (OpenAI's API reference; Anthropic's API reference and shared/providers/anthropic.md), kept as
 *   test data in `test/schemas/`. Neither is an official schema: shared/schemas/ holds no
 *   Responses or Messages schema (its openai.json, extracted from the official OpenAPI document,
 *   has the chat, completion, embeddings and error shapes only), and Anthropic publishes no
 *   machine-readable one. Each file's `$comment` says where it came from and how it differs
 *   (responses.json is stricter than the official definition on a few always-sent fields).
 */

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** Where `shared/schemas` is: beside the clone (CI), or one level further up (a worktree under `wt/`). */
function sharedSchemasDir(): string | null {
  for (const dir of [process.env.SHARED_SCHEMAS_DIR, join(ROOT, '../shared/schemas'), join(ROOT, '../../shared/schemas')]) {
    if (dir !== undefined && existsSync(join(dir, 'openai.json'))) return dir;
  }
  return null;
}

/** True when `shared/schemas/openai.json` is there; else skips loudly (locally) or throws (CI=true). */
export function requireSharedSchemas(): boolean {
  if (sharedSchemasDir() !== null) return true;
  const message = `shared/schemas/openai.json is not beside the clone (looked in ${join(ROOT, '..', 'shared/schemas')}); the schema checks cannot run`;
  if (process.env.CI === 'true') throw new Error(`${message} (CI=true requires it)`);
  console.warn(`\n!!! SKIPPED: ${message}.\n`);
  return false;
}

let ajv: Ajv2020 | null = null;

function compiler(): Ajv2020 {
  if (ajv !== null) return ajv;
  ajv = new Ajv2020({ strict: false, allErrors: true, coerceTypes: false });
  const shared = sharedSchemasDir();
  if (shared !== null) ajv.addSchema(JSON.parse(readFileSync(join(shared, 'openai.json'), 'utf8')) as object, 'openai.json');
  for (const name of ['responses.json', 'messages.json']) {
    const file = join(ROOT, 'test/schemas', name);
    if (existsSync(file)) ajv.addSchema(JSON.parse(readFileSync(file, 'utf8')) as object, name);
  }
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
