import { describe, expect, test } from 'vitest';
import { Registry } from '../../../core/index.js';
import { BUNDLED_CHECKS } from '../../../plugins/guardrails/checks/index.js';
import { compileHooks, type HookRef } from '../../../plugins/guardrails/compile.js';

const checks = new Registry<unknown>('guardrail check');
for (const [id, check] of Object.entries(BUNDLED_CHECKS)) checks.add(id, check);
const named = new Map<string, Record<string, unknown>>([['pii', { deny: true, 'default.pii': { categories: ['email'] } }]]);

describe('compileHooks: names', () => {
  test('without stored guardrails, a name the server config does not define is a 400, in a list or an id-only hook', () => {
    expect(() => compileHooks({ input_guardrails: ['nope'] }, checks, named)).toThrow(/input_guardrails\[0\]: no guardrail is named "nope"/);
    expect(() => compileHooks({ before_request_hooks: [{ id: 'nope' }] }, checks, named)).toThrow(/before_request_hooks\[0\]: no guardrail is named "nope"/);
    const hooks = compileHooks({ before_request_hooks: [{ id: 'pii' }], input_guardrails: ['pii'] }, checks, named);
    expect(hooks.refs).toBe(0);
    expect(hooks.input.map((h) => ('checks' in h ? h.checks.map((c) => c.id) : []))).toEqual([['default.pii'], ['default.pii']]);
  });

  test('with stored guardrails, unknown names become references resolved per request, with the hook\'s own settings; known ones compile now', () => {
    const hooks = compileHooks(
      { input_guardrails: ['pii', 'pg-stored'], after_request_hooks: [{ id: 'pg-other', async: true, on_fail: { feedback: { value: -1 } } }] },
      checks,
      named,
      true,
    );
    expect(hooks.refs).toBe(2);
    expect('checks' in hooks.input[0]!).toBe(true);
    expect(hooks.input[1]).toEqual({ ref: 'pg-stored', source: 'input_guardrails', phase: 'input', where: 'input_guardrails[1]', overrides: null } satisfies HookRef);
    expect(hooks.output[0]).toMatchObject({ ref: 'pg-other', source: 'after_request_hooks', phase: 'output', overrides: { async: true, on_fail: { feedback: { value: -1 } } } });
  });
});
