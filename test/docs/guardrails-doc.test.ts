import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { Registry } from '../../core/index.js';
import { BUNDLED_CHECKS } from '../../plugins/guardrails/checks/index.js';
import { compileHooks } from '../../plugins/guardrails/compile.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DOC = readFileSync(`${ROOT}docs/guardrails.md`, 'utf8');
const HOOK_FIELDS = ['before_request_hooks', 'after_request_hooks', 'input_guardrails', 'output_guardrails'];

/** The doc's JSON examples, parsed. */
const blocks = Array.from(DOC.matchAll(/^```json\n([\s\S]*?)^```$/gm), (m) => m[1]!);

describe('docs/guardrails.md', () => {
  test('every JSON example parses', () => {
    expect(blocks.length).toBeGreaterThan(10);
    for (const b of blocks) expect(() => JSON.parse(b), b).not.toThrow();
  });

  test('every config example and every guardrail entry compiles with the bundled checks', () => {
    const checks = new Registry<unknown>('guardrail check');
    for (const [id, check] of Object.entries(BUNDLED_CHECKS)) checks.add(id, check);
    const values = blocks.map((b) => JSON.parse(b) as Record<string, any>);
    const named = new Map<string, Record<string, any>>();
    for (const value of values) for (const [name, entry] of Object.entries(value.guardrails ?? {})) named.set(name, entry as Record<string, any>);
    let compiled = 0;
    for (const value of values) {
      if (HOOK_FIELDS.some((f) => f in value)) {
        expect(() => compileHooks(value, checks, named), JSON.stringify(value)).not.toThrow();
        compiled++;
      } else if (typeof value.id === 'string' && Object.keys(value).some((k) => k.startsWith('default.'))) {
        // A lone guardrail entry: valid as an input and as an output guardrail.
        expect(() => compileHooks({ input_guardrails: [value], output_guardrails: [value] }, checks, named), JSON.stringify(value)).not.toThrow();
        compiled++;
      }
    }
    for (const entry of named.values()) compileHooks({ input_guardrails: [entry] }, checks, named);
    expect(compiled).toBeGreaterThan(15);
  });

  test('every bundled check has a section', () => {
    for (const id of Object.keys(BUNDLED_CHECKS)) expect(DOC, id).toContain(`\`${id}\``);
  });
});
