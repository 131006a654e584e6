import * as v from 'valibot';
import { GatewayError, type GuardrailCheck, issuePath, type Registry, type Target } from '../../sdk/index.js';

/** Where a hook came from in the config; results are reported under the hook kind. */
export type HookSource = 'before_request_hooks' | 'after_request_hooks' | 'input_guardrails' | 'output_guardrails';

export interface Feedback {
  value?: number;
  weight?: number;
  metadata?: Record<string, unknown>;
}

export interface CompiledCheck {
  id: string;
  check: GuardrailCheck;
  parameters: unknown;
}

/** A hook ready to run: its checks resolved and their parameters validated. */
export interface CompiledHook {
  id: string;
  source: HookSource;
  phase: 'input' | 'output';
  /** Stop the request (input) or withhold the answer (output) when the hook fails. */
  deny: boolean;
  /** Output only: run after the answer is sent, results to the log. */
  async: boolean;
  onSuccess: Feedback | null;
  onFail: Feedback | null;
  checks: CompiledCheck[];
}

export interface CompiledHooks {
  input: CompiledHook[];
  output: CompiledHook[];
}

/** Keys of a guardrail entry that are settings, not check ids. */
const ENTRY_KEYS = new Set(['id', 'deny', 'async', 'on_fail', 'on_success', 'type', 'checks']);

type Entry = Record<string, any>;

/**
 * Turns a config's four hook lists into runnable hooks. String guardrail
 * items are looked up in `named`. Every check id must be registered and its
 * parameters must pass the check's schema; otherwise a 400 names the path.
 */
export function compileHooks(target: Target, checks: Registry<unknown>, named: ReadonlyMap<string, Entry>): CompiledHooks {
  const input: CompiledHook[] = [];
  const output: CompiledHook[] = [];
  const list = (key: HookSource) => (Array.isArray(target[key]) ? (target[key] as unknown[]) : []);

  list('before_request_hooks').forEach((h, i) => input.push(fromHook(h as Entry, 'before_request_hooks', 'input', `before_request_hooks[${i}]`, checks)));
  list('input_guardrails').forEach((g, i) => input.push(fromEntry(resolve(g, named, `input_guardrails[${i}]`), 'input_guardrails', 'input', `input_guardrails[${i}]`, checks)));
  list('after_request_hooks').forEach((h, i) => output.push(fromHook(h as Entry, 'after_request_hooks', 'output', `after_request_hooks[${i}]`, checks)));
  list('output_guardrails').forEach((g, i) => output.push(fromEntry(resolve(g, named, `output_guardrails[${i}]`), 'output_guardrails', 'output', `output_guardrails[${i}]`, checks)));
  return { input, output };
}

function resolve(item: unknown, named: ReadonlyMap<string, Entry>, where: string): Entry {
  if (typeof item !== 'string') return item as Entry;
  const found = named.get(item);
  if (found === undefined) throw bad(where, `no guardrail is named "${item}"`);
  return { id: item, ...found };
}

/** The hook form: `{ id, checks: [{ id, parameters }], on_fail: { deny } }`. */
function fromHook(hook: Entry, source: HookSource, phase: 'input' | 'output', where: string, checks: Registry<unknown>): CompiledHook {
  const list: Entry[] = Array.isArray(hook.checks) ? hook.checks : [];
  return {
    id: String(hook.id ?? where),
    source,
    phase,
    deny: hook.on_fail?.deny === true,
    async: phase === 'output' && hook.async === true,
    onSuccess: hook.on_success?.feedback ?? null,
    onFail: hook.on_fail?.feedback ?? null,
    checks: list.map((c, j) => compileCheck(String(c.id), c.parameters ?? {}, `${where}.checks[${j}].parameters`, checks)),
  };
}

/** The guardrail-entry form: `{ id, deny, "default.contains": { … } }`; each object-valued property is a check. */
function fromEntry(entry: Entry, source: HookSource, phase: 'input' | 'output', where: string, checks: Registry<unknown>): CompiledHook {
  if (Array.isArray(entry.checks)) return { ...fromHook(entry, source, phase, where, checks), deny: entry.deny === true || entry.on_fail?.deny === true };
  const compiled: CompiledCheck[] = [];
  for (const [key, value] of Object.entries(entry)) {
    if (ENTRY_KEYS.has(key)) continue;
    compiled.push(compileCheck(key, value, `${where}.${key}`, checks));
  }
  if (compiled.length === 0) throw bad(where, 'names no check (add a property "<namespace>.<check>": { parameters })');
  return {
    id: String(entry.id ?? where),
    source,
    phase,
    deny: entry.deny === true || entry.on_fail?.deny === true,
    async: phase === 'output' && entry.async === true,
    onSuccess: entry.on_success?.feedback ?? null,
    onFail: entry.on_fail?.feedback ?? null,
    checks: compiled,
  };
}

/** `paramsAt` is the config path of the parameters object, for error messages. */
function compileCheck(id: string, parameters: unknown, paramsAt: string, checks: Registry<unknown>): CompiledCheck {
  const check = checks.get(id) as GuardrailCheck | undefined;
  if (check === undefined) throw bad(paramsAt, `unknown check "${id}" (registered: ${checks.names().join(', ') || 'none'})`);
  const result = v.safeParse(check.parameters, parameters ?? {});
  if (!result.success) {
    const issue = result.issues[0];
    const path = issuePath(issue);
    throw bad(path === '' ? paramsAt : `${paramsAt}.${path}`, issue.message);
  }
  return { id, check, parameters: result.output };
}

function bad(where: string, rule: string): GatewayError {
  return new GatewayError('invalid_request', `Invalid config: ${where}: ${rule}.`, { param: 'x-gateway-config' });
}
