import { describe, expect, test } from 'vitest';
import * as v from 'valibot';
import { jsonInText } from '../../../../plugins/guardrails/checks/fences.js';
import { jsonKeys } from '../../../../plugins/guardrails/checks/json-keys.js';
import { jsonSchema } from '../../../../plugins/guardrails/checks/json-schema.js';
import { refused, runCheck, verdictOf } from './helpers.js';

const person = { type: 'object', properties: { name: { type: 'string' }, age: { type: 'integer', minimum: 0 } }, required: ['name'], additionalProperties: false };

describe('default.jsonSchema', () => {
  test('true when the text is JSON matching the schema, bare or in a ```json block', async () => {
    expect(await verdictOf(jsonSchema, { schema: person }, '{"name":"Ada","age":36}')).toBe(true);
    expect(await verdictOf(jsonSchema, { schema: person }, 'Here you go:\n```json\n{"name":"Ada"}\n```\nAnything else?')).toBe(true);
    expect(await verdictOf(jsonSchema, { schema: person }, '```\n{"name":"Ada"}\n```')).toBe(true);
  });

  test('false when it does not match, or is not JSON; the errors are explained', async () => {
    const r = await runCheck(jsonSchema, { schema: person }, '{"age":-1,"extra":true}');
    expect(r.verdict).toBe(false);
    expect(r.explanation).toContain('does not match the schema');
    expect(r.explanation).toContain("must have required property 'name'");
    expect(r.data).toMatchObject({ json: true, valid: false });
    const notJson = await runCheck(jsonSchema, { schema: person }, 'Sure! Ada is 36.');
    expect(notJson.verdict).toBe(false);
    expect(notJson.explanation).toContain('not JSON');
    expect(await verdictOf(jsonSchema, { schema: person }, '```py\n{"name":"Ada"}\n```')).toBe(false);
  });

  test('not inverts', async () => {
    expect(await verdictOf(jsonSchema, { schema: person, not: true }, '{"age":1}')).toBe(true);
    expect(await verdictOf(jsonSchema, { schema: person, not: true }, '{"name":"Ada"}')).toBe(false);
  });

  test('formats are checked; 2020-12 schemas use their draft', async () => {
    const withFormat = { type: 'object', properties: { email: { type: 'string', format: 'email' }, at: { type: 'string', format: 'date-time' } } };
    expect(await verdictOf(jsonSchema, { schema: withFormat }, '{"email":"a@b.example","at":"2024-05-01T10:00:00Z"}')).toBe(true);
    expect(await verdictOf(jsonSchema, { schema: withFormat }, '{"email":"nope"}')).toBe(false);
    const draft2020 = { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'array', prefixItems: [{ type: 'number' }], items: false };
    expect(await verdictOf(jsonSchema, { schema: draft2020 }, '[1]')).toBe(true);
    expect(await verdictOf(jsonSchema, { schema: draft2020 }, '[1, 2]')).toBe(false);
  });

  test('the schema is compiled once, when the parameters are parsed; two configs may share an $id', async () => {
    const a = v.parse(jsonSchema.parameters, { schema: { $id: 'https://acme.example/s', type: 'string' } });
    const b = v.parse(jsonSchema.parameters, { schema: { $id: 'https://acme.example/s', type: 'number' } });
    expect(typeof a.schema).toBe('function');
    expect((await jsonSchema.run(a, { text: '"x"' } as never)).verdict).toBe(true);
    expect((await jsonSchema.run(b, { text: '"x"' } as never)).verdict).toBe(false);
  });

  test('bad parameters: a missing, non-object or invalid schema', () => {
    expect(refused(jsonSchema, {})).toContain('schema is required');
    expect(refused(jsonSchema, { schema: 'object' })).toContain('schema must be a JSON Schema object');
    expect(refused(jsonSchema, { schema: [] })).toContain('schema must be a JSON Schema object');
    expect(refused(jsonSchema, { schema: { type: 'nope' } })).toMatch(/^schema is not a valid JSON Schema: .*type/);
    expect(refused(jsonSchema, { schema: { $ref: 'https://elsewhere.example/schema.json' } })).toContain('schema is not a valid JSON Schema');
    expect(refused(jsonSchema, { schema: { minLength: -1 } })).toContain('schema is not a valid JSON Schema');
    expect(refused(jsonSchema, { schema: person, not: 'x' })).toContain('not must be true or false');
  });
});

describe('default.jsonKeys', () => {
  const text = 'Result:\n```json\n{"name":"Ada","age":36,"nested":{"city":"London"}}\n```';
  test('any / all / none on the top-level keys', async () => {
    expect(await verdictOf(jsonKeys, { keys: ['name', 'email'], operator: 'any' }, text)).toBe(true);
    expect(await verdictOf(jsonKeys, { keys: ['name', 'age'], operator: 'all' }, text)).toBe(true);
    expect(await verdictOf(jsonKeys, { keys: ['password', 'city'], operator: 'none' }, text)).toBe(true);
  });
  test('false cases explain which keys', async () => {
    const all = await runCheck(jsonKeys, { keys: ['name', 'email'], operator: 'all' }, text);
    expect(all.verdict).toBe(false);
    expect(all.explanation).toContain('lacks the keys: email');
    const none = await runCheck(jsonKeys, { keys: ['age'], operator: 'none' }, text);
    expect(none.verdict).toBe(false);
    expect(none.explanation).toContain('age');
    expect(await verdictOf(jsonKeys, { keys: ['city'], operator: 'any' }, text)).toBe(false); // nested keys do not count
  });
  test('a text without a JSON object fails whatever the operator', async () => {
    for (const t of ['no json', '[1,2]', '"a string"']) {
      const r = await runCheck(jsonKeys, { keys: ['a'], operator: 'none' }, t);
      expect(r.verdict).toBe(false);
      expect(r.explanation).toBe('The text holds no JSON object.');
    }
  });
  test('operator defaults to any', async () => {
    expect(await verdictOf(jsonKeys, { keys: ['age'] }, '{"age":1}')).toBe(true);
  });
  test('bad parameters', () => {
    expect(refused(jsonKeys, { operator: 'any' })).toContain('keys is required');
    expect(refused(jsonKeys, { keys: [] })).toContain('keys must not be empty');
    expect(refused(jsonKeys, { keys: 'a' })).toContain('keys must be an array of strings');
    expect(refused(jsonKeys, { keys: [1] })).toContain('each key must be a string');
    expect(refused(jsonKeys, { keys: ['a'], operator: 'some' })).toContain('operator must be any, all or none');
  });
});

describe('finding the JSON of a text', () => {
  test('bare JSON, the first parsable ```json or untagged block, or nothing', () => {
    expect(jsonInText('  {"a":1}  ')).toEqual({ found: true, value: { a: 1 }, source: 'text' });
    expect(jsonInText('x\n```json\nnot json\n```\n```json\n[1]\n```')).toEqual({ found: true, value: [1], source: 'fence' });
    expect(jsonInText('```json\n{"a":1}')).toEqual({ found: false }); // unclosed
    expect(jsonInText('')).toEqual({ found: false });
  });
});
