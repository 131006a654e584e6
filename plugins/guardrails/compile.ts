import * as v from 'valibot';
import { GatewayError, type GuardrailCheck, issuePath, type Registry, type StreamJudgement, type Target } from '../../sdk/index.js';

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
  /** How it judges a stream as it arrives; null: once, on the whole text, at the end. */
  stream: StreamJudgement | null;
}

/** What an output hook does on a stream (docs/guardrails.md#streams). */
export interface HookStream {
  mode: 'block' | 'redact' | 'hold';
  /** Characters of earlier text a window check sees again (a match across chunks); what redact holds back. */
  window: number;
  /** New characters between two runs of the window checks. */
  every: number;
}

/** Defaults of `stream_window` and `stream_check_every`. */
export const DEFAULT_STREAM_WINDOW = 128;
export const DEFAULT_STREAM_CHECK_EVERY = 64;

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
  stream: HookStream;
}

/**
 * A guardrail a config names but the server config does not define: the
 * stored guardrail of that id (or slug) in the request's workspace, looked up
 * per request through its cache (see `resolveRef` and store/).
 */
export interface HookRef {
  ref: string;
  source: HookSource;
  phase: 'input' | 'output';
  /** The config path of the item, for error messages. */
  where: string;
  /** Settings the naming hook gives itself (`on_fail`, `on_success`, `async`), laid over the stored entry's. */
  overrides: Entry | null;
}

export type HookSlot = CompiledHook | HookRef;

/** A config's hooks as compiled once per target: concrete hooks and, where it names stored guardrails, references. */
export interface CompiledHooks {
  input: HookSlot[];
  output: HookSlot[];
  /** How many slots are references: 0 means the lists are concrete and used as they are, with no lookup. */
  refs: number;
}

/** The hooks one request runs, every reference resolved. */
export interface ResolvedHooks {
  input: CompiledHook[];
  output: CompiledHook[];
}

/** Keys of a guardrail entry that are settings, not check ids. */
const ENTRY_KEYS = new Set(['id', 'deny', 'async', 'on_fail', 'on_success', 'type', 'checks', 'stream_mode', 'stream_window', 'stream_check_every']);
/** What a hook naming a stored guardrail may set for itself. */
const OVERRIDE_KEYS = ['on_fail', 'on_success', 'async', 'stream_mode', 'stream_window', 'stream_check_every'] as const;

type Entry = Record<string, any>;

/**
 * Turns a config's four hook lists into runnable hooks. String guardrail
 * items are looked up in `named` (the server config's guardrails); so is a
 * hook given only an `id` (no `checks`). When `stored` is true (workspaces
 * store guardrails: the control plane is loaded), a name `named` does not know becomes a
 * {@link HookRef}, resolved per request; otherwise it is a 400. Every check
 * id must be registered and its parameters must pass the check's schema;
 * otherwise a 400 names the path.
 */
export function compileHooks(target: Target, checks: Registry<unknown>, named: ReadonlyMap<string, Entry>, stored = false): CompiledHooks {
  const out: CompiledHooks = { input: [], output: [], refs: 0 };
  const list = (key: HookSource) => (Array.isArray(target[key]) ? (target[key] as unknown[]) : []);
  const add = (slot: HookSlot) => {
    if ('ref' in slot) out.refs++;
    (slot.phase === 'input' ? out.input : out.output).push(slot);
  };

  const hook = (h: Entry, source: HookSource, phase: 'input' | 'output', where: string): HookSlot => {
    // A hook that gives only an id names a guardrail defined elsewhere.
    if (h.checks === undefined && typeof h.id === 'string') {
      const overrides = pick(h);
      const found = named.get(h.id);
      if (found !== undefined) return fromNamed({ id: h.id, ...found, ...overrides }, source, phase, where, checks);
      if (stored) return { ref: h.id, source, phase, where, overrides };
      // A hook with no checks that names nothing known would pass everything: refused, like an unknown name.
      throw bad(where, `no guardrail is named "${h.id}"`);
    }
    return fromHook(h, source, phase, where, checks);
  };
  const guardrail = (g: unknown, source: HookSource, phase: 'input' | 'output', where: string): HookSlot => {
    if (typeof g !== 'string') return fromEntry(g as Entry, source, phase, where, checks);
    const found = named.get(g);
    if (found !== undefined) return fromEntry({ id: g, ...found }, source, phase, where, checks);
    if (stored) return { ref: g, source, phase, where, overrides: null };
    throw bad(where, `no guardrail is named "${g}"`);
  };

  list('before_request_hooks').forEach((h, i) => add(hook(h as Entry, 'before_request_hooks', 'input', `before_request_hooks[${i}]`)));
  list('input_guardrails').forEach((g, i) => add(guardrail(g, 'input_guardrails', 'input', `input_guardrails[${i}]`)));
  list('after_request_hooks').forEach((h, i) => add(hook(h as Entry, 'after_request_hooks', 'output', `after_request_hooks[${i}]`)));
  list('output_guardrails').forEach((g, i) => add(guardrail(g, 'output_guardrails', 'output', `output_guardrails[${i}]`)));
  return out;
}

function pick(hook: Entry): Entry | null {
  let out: Entry | null = null;
  for (const k of OVERRIDE_KEYS) if (hook[k] !== undefined) (out ??= {})[k] = hook[k];
  return out;
}

/**
 * A stored guardrail (or a named one a hook refers to) as the hook of `source`:
 * the guardrail-entry form, except that an after-request hook never denies
 * (the spec gives that list feedback only).
 */
export function fromNamed(entry: Entry, source: HookSource, phase: 'input' | 'output', where: string, checks: Registry<unknown>): CompiledHook {
  const hook = fromEntry(entry, source, phase, where, checks);
  return source === 'after_request_hooks' ? { ...hook, deny: false } : hook;
}

/** The stored entry of a reference, with the naming hook's own settings laid over it. */
export function withOverrides(entry: Readonly<Entry>, id: string, slot: HookRef): Entry {
  return { ...entry, id, ...(slot.overrides ?? {}) };
}

/**
 * The checks of a guardrail entry stored on its own (a workspace's stored
 * guardrails), checked at write time: the first issue, with its path
 * in the entry (`default.pii.categories[0]`), or null when every check id is
 * registered and its parameters pass. The settings (`deny`, `on_fail`, …) are
 * the entry schema's business (the config fields of this plugin).
 */
export function entryIssue(entry: Entry, checks: Registry<unknown>): Issue | null {
  let count = 0;
  for (const [key, value] of Object.entries(entry)) {
    if (ENTRY_KEYS.has(key)) continue;
    count++;
    const result = checkParameters(key, value, checks);
    if ('message' in result) return { path: result.path === '' ? key : `${key}.${result.path}`, message: result.message };
  }
  return count === 0 ? { path: '', message: NO_CHECK } : null;
}

interface Issue {
  path: string;
  message: string;
}

const NO_CHECK = 'names no check (add a property "<namespace>.<check>": { parameters })';

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
    ...withStream(hook, list.map((c, j) => compileCheck(String(c.id), c.parameters ?? {}, `${where}.checks[${j}].parameters`, checks))),
  };
}

/**
 * The hook's checks and its stream settings: `stream_mode` as given, else `redact` when a check
 * redacts a stream (`default.pii` with `redact`), else `block`.
 */
function withStream(entry: Entry, compiled: CompiledCheck[]): { checks: CompiledCheck[]; stream: HookStream } {
  const mode = entry.stream_mode ?? (compiled.some((c) => c.stream?.redacts === true) ? 'redact' : 'block');
  const window = entry.stream_window ?? DEFAULT_STREAM_WINDOW;
  return { checks: compiled, stream: { mode, window, every: Math.min(entry.stream_check_every ?? DEFAULT_STREAM_CHECK_EVERY, window) } };
}

/** The guardrail-entry form: `{ id, deny, "default.contains": { … } }`; each object-valued property is a check. */
function fromEntry(entry: Entry, source: HookSource, phase: 'input' | 'output', where: string, checks: Registry<unknown>): CompiledHook {
  if (Array.isArray(entry.checks)) return { ...fromHook(entry, source, phase, where, checks), deny: entry.deny === true || entry.on_fail?.deny === true };
  const compiled: CompiledCheck[] = [];
  for (const [key, value] of Object.entries(entry)) {
    if (ENTRY_KEYS.has(key)) continue;
    compiled.push(compileCheck(key, value, `${where}.${key}`, checks));
  }
  if (compiled.length === 0) throw bad(where, NO_CHECK);
  return {
    id: String(entry.id ?? where),
    source,
    phase,
    deny: entry.deny === true || entry.on_fail?.deny === true,
    async: phase === 'output' && entry.async === true,
    onSuccess: entry.on_success?.feedback ?? null,
    onFail: entry.on_fail?.feedback ?? null,
    ...withStream(entry, compiled),
  };
}

/** `paramsAt` is the config path of the parameters object, for error messages. */
function compileCheck(id: string, parameters: unknown, paramsAt: string, checks: Registry<unknown>): CompiledCheck {
  const result = checkParameters(id, parameters, checks);
  if ('message' in result) throw bad(result.path === '' ? paramsAt : `${paramsAt}.${result.path}`, result.message);
  return result;
}

/** The check `id` with its parameters parsed by its schema, or the issue (its path inside the parameters). */
function checkParameters(id: string, parameters: unknown, checks: Registry<unknown>): CompiledCheck | Issue {
  const check = checks.get(id) as GuardrailCheck | undefined;
  if (check === undefined) return { path: '', message: `unknown check "${id}" (registered: ${checks.names().join(', ') || 'none'})` };
  const result = v.safeParse(check.parameters, parameters ?? {});
  if (!result.success) {
    const issue = result.issues[0];
    return { path: issuePath(issue), message: issue.message };
  }
  return { id, check, parameters: result.output, stream: check.stream?.(result.output) ?? null };
}

export function bad(where: string, rule: string): GatewayError {
  return new GatewayError('invalid_request', `Invalid config: ${where}: ${rule}.`, { param: 'x-gateway-config' });
}
