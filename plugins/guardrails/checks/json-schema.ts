import { createRequire } from 'node:module';
import { isIPv4, isIPv6 } from 'node:net';
import type { Ajv, ErrorObject, Options, ValidateFunction } from 'ajv';
import type { Ajv2019 } from 'ajv/dist/2019.js';
import type { Ajv2020 } from 'ajv/dist/2020.js';
import * as v from 'valibot';
import { defineCheck } from '../../../sdk/index.js';
import { jsonInText } from './fences.js';
import { parameters } from './params.js';

/** The `format`s the check knows; any other format is ignored (JSON Schema makes formats advisory). */
const DATE_TIME = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const SCHEME = /^[a-z][a-z0-9+.-]*:/i;
const FORMATS: Options['formats'] = {
  'date-time': (s: string) => DATE_TIME.test(s) && !Number.isNaN(Date.parse(s)),
  date: (s: string) => DATE.test(s) && !Number.isNaN(Date.parse(`${s}T00:00:00Z`)),
  email: /^[^\s@]+@[^\s@]+\.[^\s@]+$/,
  uri: (s: string) => SCHEME.test(s) && URL.canParse(s),
  uuid: /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i,
  ipv4: (s: string) => isIPv4(s),
  ipv6: (s: string) => isIPv6(s),
};

const OPTIONS: Options = { strict: false, allErrors: true, logger: false, formats: FORMATS };
/**
 * One instance per draft, shared by every config. A compiled schema is removed
 * from the instance's cache once compiled (the validate function keeps what it
 * needs), so configs with many schemas do not grow it and two configs may use
 * the same `$id`.
 */
const instances: { draft7?: Ajv; draft2019?: Ajv2019; draft2020?: Ajv2020 } = {};

const require = createRequire(import.meta.url);

/**
 * The instance for the schema's `$schema` (draft-07 unless it names 2019-09 or 2020-12), built on first use.
 * ajv itself is loaded then too (synchronously: configs compile their checks synchronously): a gateway whose
 * configs use no JSON-schema check never holds it.
 */
function ajvFor(schema: Record<string, unknown>): Ajv | Ajv2019 | Ajv2020 {
  const draft = typeof schema.$schema === 'string' ? schema.$schema : '';
  if (draft.includes('2020-12')) return (instances.draft2020 ??= new (require('ajv/dist/2020.js') as typeof import('ajv/dist/2020.js')).Ajv2020(OPTIONS));
  if (draft.includes('2019-09')) return (instances.draft2019 ??= new (require('ajv/dist/2019.js') as typeof import('ajv/dist/2019.js')).Ajv2019(OPTIONS));
  return (instances.draft7 ??= new (require('ajv') as typeof import('ajv')).Ajv(OPTIONS));
}

/** Compiles a schema; throws with ajv's reason when it is not a valid JSON Schema. */
export function compileSchema(schema: Record<string, unknown>): ValidateFunction {
  const ajv = ajvFor(schema);
  try {
    return ajv.compile(schema);
  } finally {
    try {
      ajv.removeSchema(schema);
    } catch {
      /* a schema whose $id is not a string was never added */
    }
  }
}

function describe(errors: ErrorObject[] | null | undefined): string {
  return (errors ?? [])
    .slice(0, 3)
    .map((e) => `${e.instancePath === '' ? 'the value' : e.instancePath} ${e.message ?? 'is invalid'}`)
    .join('; ');
}

/**
 * `default.jsonSchema { schema, not? }`: passes when the text is JSON (the
 * whole text, or a ```json fenced block in it) that validates against
 * `schema` (JSON Schema draft-07 by default; 2019-09 and 2020-12 by their
 * `$schema`). The schema is compiled once per config; an invalid schema is a
 * bad parameter.
 */
export const jsonSchema = defineCheck({
  parameters: parameters({
    schema: v.pipe(
      v.custom<Record<string, unknown>>((x) => typeof x === 'object' && x !== null && !Array.isArray(x), 'schema must be a JSON Schema object'),
      v.rawTransform(({ dataset, addIssue, NEVER }) => {
        try {
          return compileSchema(dataset.value);
        } catch (err) {
          addIssue({ message: `schema is not a valid JSON Schema: ${(err as Error).message}` });
          return NEVER;
        }
      }),
    ),
    not: v.optional(v.boolean('not must be true or false'), false),
  }),
  run({ schema: validate, not }, { text }) {
    const json = jsonInText(text);
    if (!json.found) {
      return { verdict: not, explanation: not ? 'The text is not JSON, so it does not match the schema, as required.' : 'The text is not JSON (nor holds a ```json block).', data: { json: false } };
    }
    const valid = validate(json.value) === true;
    const errors = valid ? null : describe(validate.errors);
    const verdict = not ? !valid : valid;
    return {
      verdict,
      explanation: valid
        ? `The JSON matches the schema${not ? ', which it must not' : ''}.`
        : `The JSON does not match the schema${not ? ', as required' : ''}: ${errors}.`,
      data: { json: true, source: json.source, valid, errors },
    };
  },
});
