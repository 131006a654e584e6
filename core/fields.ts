import * as v from 'valibot';
import { upstreamUrlProblem } from './upstream/urls.js';

/**
 * A field of a routing target (a config object, or one item of its
 * `targets`), declared by the plugin that reads it. The config plugin builds
 * its strict schema from every declaration; logs, cache keys, the control
 * plane and provider slugs read the flags below instead of lists of their own.
 */
export interface TargetField {
  /** The value as a config may send it. Use {@link fieldSchema} for messages in the house style. */
  schema: v.GenericSchema;
  /**
   * A credential: redacted from log lines, entered into cache keys only as a
   * digest, sealed at rest by the control plane, and never set by a request
   * next to a provider slug.
   */
  credential?: boolean;
  /**
   * Decides where a call goes (host, account, region): a request may not set it
   * next to a provider slug, whose stored credentials would follow it.
   */
  placement?: boolean;
  /**
   * How an item of `targets` takes the field from its parent config when it
   * leaves it unset: `always` (call settings such as retries), `same-provider`
   * (credentials and provider settings: only when the item names the same
   * provider or none). Default: not inherited.
   */
  inherit?: 'always' | 'same-provider';
  /**
   * Whether the field can change the answer (who answers, with what
   * parameters). False for how the call is made (retries, timeouts, caching):
   * such fields stay out of answer identities such as cache keys. Default true.
   */
  affectsAnswer?: boolean;
  /**
   * The field brings a target of its own (a stored prompt names its provider): a config that sets
   * it and names no provider, virtual key or strategy does not take its provider from the request's
   * headers; the declaring plugin sets `ctx.target` at `STAGES.beforeRequest.PREPARE`.
   */
  providesTarget?: boolean;
  /** Other spellings a config may use, renamed to this one (the spec's stand-in names). */
  aliases?: readonly string[];
  /**
   * Fields, this one among them, that together make a config complete (the
   * spec's "at least one of these property combinations"): `['cache']` alone,
   * `['provider', 'api_key']`, and so on. Listed in the message a config that
   * meets none of them gets.
   */
  combination?: readonly string[];
}

/** A declared field with its name and the plugin that declared it. */
export interface DeclaredField extends TargetField {
  /** The field's name in a target, e.g. `api_key`. */
  readonly name: string;
  /** The plugin that declared it (`core` for the core's own). */
  readonly owner: string;
}

const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/**
 * Every target field of one gateway, in declaration order (the core's first,
 * then each plugin's in load order). Filled from the plugins' `targetFields`
 * and sealed before any plugin is applied: everything that derives from it
 * (the config schema, redaction, cache keys, sealing, the slug guard) sees the
 * same, complete set.
 */
export class TargetFields {
  readonly #fields = new Map<string, DeclaredField>();
  readonly #aliases = new Map<string, string>();
  #credentials: ReadonlySet<string> | null = null;
  #sealed = false;

  /** Adds a plugin's declarations. A field declared twice must be the same object (one package sharing it between its plugins). */
  declare(owner: string, fields: Readonly<Record<string, TargetField>>): void {
    if (this.#sealed) throw new Error(`plugin "${owner}": target fields are declared on the plugin object (targetFields), not from apply()`);
    for (const [name, field] of Object.entries(fields)) {
      if (!FIELD_NAME.test(name)) throw new Error(`plugin "${owner}": target field "${name}" must be letters, digits and _, starting with a letter or _`);
      const known = this.#fields.get(name);
      if (known !== undefined) {
        if (isSameDeclaration(known, field)) continue;
        throw new Error(`plugin "${owner}": target field "${name}" is already declared by "${known.owner}"`);
      }
      if (this.#aliases.has(name)) throw new Error(`plugin "${owner}": target field "${name}" is an alias of "${this.#aliases.get(name)}"`);
      if (field.combination !== undefined && !field.combination.includes(name)) {
        throw new Error(`plugin "${owner}": the combination of target field "${name}" must include it (${field.combination.join(' + ')})`);
      }
      for (const alias of field.aliases ?? []) {
        if (!FIELD_NAME.test(alias)) throw new Error(`plugin "${owner}": alias "${alias}" of "${name}" must be letters, digits and _`);
        if (this.#fields.has(alias) || this.#aliases.has(alias)) throw new Error(`plugin "${owner}": alias "${alias}" of "${name}" is already taken`);
        this.#aliases.set(alias, name);
      }
      this.#fields.set(name, Object.freeze({ ...field, name, owner }));
      this.#credentials = null;
    }
  }

  /** No declaration after this (called by `createGateway` before the first `apply`). */
  seal(): void {
    this.#sealed = true;
  }

  /** The field declared under `name` (an alias is not resolved), or undefined. */
  get(name: string): DeclaredField | undefined {
    return this.#fields.get(name);
  }

  /** Whether a field is declared under `name` (an alias does not count). */
  has(name: string): boolean {
    return this.#fields.has(name);
  }

  /** Every declared field, in declaration order. */
  all(): DeclaredField[] {
    return [...this.#fields.values()];
  }

  /** Names of the fields for which `test` holds, in declaration order. */
  names(test: (field: DeclaredField) => boolean = () => true): string[] {
    const out: string[] = [];
    for (const f of this.#fields.values()) if (test(f)) out.push(f.name);
    return out;
  }

  /** Names of the credential fields. */
  credentials(): ReadonlySet<string> {
    return (this.#credentials ??= new Set(this.names((f) => f.credential === true)));
  }

  /** Alias → real name. */
  aliases(): ReadonlyMap<string, string> {
    return this.#aliases;
  }
}

/** Two declarations of one field are the same when a package shares one declaration object between its plugins. */
function isSameDeclaration(known: DeclaredField, field: TargetField): boolean {
  return known.schema === field.schema && known.credential === field.credential && known.placement === field.placement && known.inherit === field.inherit;
}

// Every rule carries its own message: valibot's defaults ("Invalid type:
// Expected …") read badly in an HTTP 400. A wrongly typed value may be a
// credential sent in the wrong field, and error messages end up in logs, so
// type errors name the JSON type, never the value.
type Message = (issue: v.BaseIssue<unknown>) => string;
const got = (rule: string): Message => (issue) => `${rule} (got ${issue.received})`;
const jsonType = (value: unknown) => (value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value);
const gotType = (rule: string): Message => (issue) => `${rule} (got ${jsonType(issue.input)})`;
const atLeast = (min: number) => v.minValue<number, number, Message>(min, got(`must be at least ${min}`));
const atMost = (max: number) => v.maxValue<number, number, Message>(max, got(`must be at most ${max}`));

/** strictObject reports a missing required key and an unknown key with the object's own message; valibot marks the unknown one `expected: 'never'`. */
const objectMessage: Message = (issue) => (issue.expected === 'never' ? 'is not an allowed property' : 'is required');

/**
 * Schema builders for target fields, with the messages configs are answered
 * with (`must be a string (got number)`, `must be at least 30000 (got 1000)`).
 */
export const fieldSchema = Object.freeze({
  string: () => v.string(gotType('must be a string')),
  boolean: () => v.boolean(gotType('must be true or false')),
  number: (min?: number) => (min === undefined ? v.number(gotType('must be a number')) : v.pipe(v.number(gotType('must be a number')), atLeast(min))),
  integer: (min?: number, max?: number) => {
    const int = v.pipe(v.number(gotType('must be a number')), v.integer(got('must be an integer')));
    if (min === undefined) return int;
    return max === undefined ? v.pipe(int, atLeast(min)) : v.pipe(int, atLeast(min), atMost(max));
  },
  /** One of the listed strings. */
  oneOf: <const T extends readonly string[]>(values: T) => v.picklist(values, got(`must be ${values.length === 2 ? `${values[0]} or ${values[1]}` : `one of ${values.join(', ')}`}`)),
  /** Any JSON object (valibot's object schemas accept arrays; this does not). */
  object: () => v.custom<Record<string, unknown>>((input) => typeof input === 'object' && input !== null && !Array.isArray(input), 'must be a JSON object'),
  /** A JSON object with exactly these keys (unknown ones: `is not an allowed property`). */
  strictObject: <const E extends v.ObjectEntries>(entries: E) => v.pipe(fieldSchema.object(), v.strictObject(entries, objectMessage)),
  /** An array of `item`; `what` names the items in the message (`must be an array of header names`). */
  list: <const T extends v.GenericSchema>(item: T, what: string, minItems = 0) =>
    minItems === 0 ? v.array(item, gotType(`must be an array of ${what}`)) : v.pipe(v.array(item, gotType(`must be an array of ${what}`)), v.minLength(minItems, `must have at least ${minItems} item${minItems === 1 ? '' : 's'}`)),
  /**
   * The base of an upstream URL (`custom_host`): an absolute http(s) URL with
   * a host and no user info. The message never repeats the value.
   */
  upstreamUrl: () =>
    v.pipe(
      v.string(gotType('must be a string')),
      v.rawCheck<string>(({ dataset, addIssue }) => {
        const problem = dataset.typed ? upstreamUrlProblem(dataset.value) : null;
        if (problem !== null) addIssue({ message: problem });
      }),
    ),
  /** HTTP status codes. */
  statusCodes: () => v.array(v.pipe(v.number(gotType('must be a number')), v.integer(got('must be an integer'))), gotType('must be an array of integers')),
  /** The message of a strict object's unknown or missing key, for schemas built by hand. */
  objectMessage,
});

/**
 * The fields the core itself reads (the named members of `Target`): which
 * provider, its key, and a replacement base URL.
 */
export const CORE_TARGET_FIELDS: Readonly<Record<string, TargetField>> = Object.freeze({
  provider: { schema: fieldSchema.string() },
  api_key: { schema: fieldSchema.string(), credential: true, inherit: 'same-provider', combination: ['provider', 'api_key'] },
  custom_host: { schema: fieldSchema.upstreamUrl(), placement: true, inherit: 'same-provider', combination: ['provider', 'custom_host'] },
});
