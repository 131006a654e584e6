import * as v from 'valibot';
import {
  type CheckInput,
  GatewayError,
  GUARDRAIL_RUNNER,
  type GuardrailCheck,
  type GuardrailLists,
  type GuardrailRunner,
  STAGES,
  type ErrorCodeSpec,
  type Registry,
  type GatewayPlugin,
  type GatewayResponse,
  GUARDRAIL_VALIDATOR,
  type GuardrailValidator,
  issuePath,
  parseOptions,
  plainObject,
  readResponseBody,
  type RequestContext,
  type RouteDefinition,
  requestText,
  responseText,
  type Target,
  routeApi, stateKey, STREAM_CUT, streamControl, hasEventStreamType } from '../../sdk/index.js';
import { IDENTITY } from '../../sdk/admin/index.js';
import { bad, compileHooks, entryIssue, fromNamed, withOverrides, type CompiledHook, type CompiledHooks, type HookRef, type ResolvedHooks } from './compile.js';
import { GUARDRAIL_ENTRY_SCHEMA, GUARDRAIL_FIELDS } from './fields.js';
import { runHook, type HookOutcome } from './run.js';
import { storedGuardrails } from './store/index.js';
import { hookWatcher, type HookStreamHost } from './stream.js';

export const PLUGIN_NAME = 'guardrails';
export { defineCheck, type CheckInput, type CheckResult, type GuardrailCheck } from '../../sdk/index.js';

/** Status of a request or answer stopped by a failing hook with `deny`. */
export const DENIED_STATUS = 446;
/** Status of an answer let through although a hook failed (no `deny`). 2xx, so SDKs read the body as usual. */
export const PASSED_WITH_FAILURES_STATUS = 246;

/** Stored guardrails compiled, by id, version and how they are named; the oldest goes past this many. */
const MAX_COMPILED_STORED = 1000;

const HOOK_FIELDS = Object.keys(GUARDRAIL_FIELDS);

/** The code of a denial (446), unless the failing check names its own (`GuardrailCheck.denyCode`). */
export const GUARDRAIL_ERRORS: Readonly<Record<string, ErrorCodeSpec>> = Object.freeze({
  guardrail_denied: { status: DENIED_STATUS, type: 'guardrail_error' },
});

const OptionsSchema = v.strictObject({
  /** Guardrails named by id, for string items in `input_guardrails` / `output_guardrails`. */
  guardrails: v.optional(v.record(v.string(), plainObject()), {}),
});

export type GuardrailsOptions = v.InferInput<typeof OptionsSchema>;

interface RunState {
  /** The hooks this request runs (stored guardrails resolved once, at the input stage). */
  hooks: ResolvedHooks;
  before: HookOutcome[];
  after: HookOutcome[];
  failed: boolean;
}
const RUN = stateKey<RunState>(PLUGIN_NAME);
/** The async after-hooks still to run, once the answer went out (at the log hook). */
const ASYNC_HOOKS = stateKey<() => Promise<unknown>>(`${PLUGIN_NAME}:async`);

/**
 * Hooks and guardrails (spec: before/after request hooks, input/output
 * guardrails). Input hooks run once per client request, after provider
 * resolution and before the strategy; output hooks run on the answer before
 * it is returned (or, with `async: true`, after it was sent). A failing hook
 * with `deny` stops the request (446); without, the answer goes through as 246
 * with `hook_results`. Checks come from the `api.checks` registry. The same
 * hooks run on calls that are not provider calls (MCP tool calls) through
 * the `GUARDRAIL_RUNNER` service. With the control plane loaded, workspaces
 * store guardrails of their own (admin routes `/guardrails`; see store/),
 * which configs name by id or slug.
 */
export function guardrails(options: GuardrailsOptions = {}): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, options);
  const named = new Map<string, Record<string, unknown>>(Object.entries(opts.guardrails));
  return {
    name: PLUGIN_NAME,
    targetFields: GUARDRAIL_FIELDS,
    errorCodes: GUARDRAIL_ERRORS,
    // Identity for the workspaces' stored guardrails.
    uses: [IDENTITY],
    state: [
      { name: 'stored-guardrails', scope: 'workspace', keyedBy: 'Stored guardrails as the request path reads them: keyed by the workspace the request acts in and the guardrail named.' },
      { name: 'compiled', scope: 'organisation', keyedBy: "Checks compiled by guardrail id and version (ids are random and each a workspace's)." },
    ],
    apply(api) {
      const compiled = new WeakMap<Target, CompiledHooks>();
      const checks = api.checks as Registry<GuardrailCheck>;
      const denials: Denials = { checks, codes: api.errorCodes };
      // Stored guardrails are checked with this before they are stored: the same rules as a config's inline entry.
      let credentialKeys: ReadonlySet<string> | null = null;
      const validator: GuardrailValidator = {
        credentialKeys() {
          // Checks are all registered by the time anything is stored (the gateway is ready).
          return (credentialKeys ??= new Set(checks.names().flatMap((id) => checks.get(id)!.credentials ?? [])));
        },
        check(entry) {
          const parsed = v.safeParse(GUARDRAIL_ENTRY_SCHEMA, entry);
          if (!parsed.success) return [{ path: issuePath(parsed.issues[0]), message: parsed.issues[0].message }];
          const issue = entryIssue(parsed.output as Record<string, unknown>, api.checks);
          return issue === null ? [] : [issue];
        },
      };
      api.provide(GUARDRAIL_VALIDATOR, validator);
      // With the control plane, workspaces store guardrails of their own, which configs name by id or slug.
      const source = api.provided(IDENTITY) ? storedGuardrails(api, validator) : undefined;
      // A check's own denial code must be declared (by its plugin) as a 446, the spec's status for a denial.
      api.onReady(() => {
        for (const id of checks.names()) {
          const code = checks.get(id)!.denyCode;
          if (code === undefined) continue;
          const spec = api.errorCodes.get(code);
          if (spec === undefined) throw new Error(`${PLUGIN_NAME}: check "${id}" denies with error code "${code}", which no loaded plugin declares in its errorCodes`);
          if (spec.status !== DENIED_STATUS) throw new Error(`${PLUGIN_NAME}: check "${id}" denies with error code "${code}", declared as ${spec.status}; a denial answers ${DENIED_STATUS}`);
        }
      });
      const hooksOf = (ctx: RequestContext): CompiledHooks | null => {
        const target = ctx.target;
        if (target === null) return null;
        // Most targets have no hooks, and a target built from headers is new on every request: the check is four
        // field reads, cheaper than a WeakMap entry per request (which also costs the garbage collector).
        if (!HOOK_FIELDS.some((f) => Array.isArray(target[f]) && (target[f] as unknown[]).length > 0)) return null;
        let c = compiled.get(target);
        if (c === undefined) {
          c = compileHooks(target, api.checks, named, source !== undefined);
          compiled.set(target, c);
        }
        return c;
      };
      // Stored guardrails, compiled once per version (and per way a config names them).
      const storedHooks = new Map<string, CompiledHook>();
      const resolveRef = async (ctx: RequestContext, slot: HookRef): Promise<CompiledHook> => {
        const found = await source!.find(ctx, slot.ref);
        if (found === undefined) throw bad(slot.where, `no guardrail is named "${slot.ref.slice(0, 128)}" (neither in the server config nor in this workspace)`);
        if (found.status !== 'active') throw bad(slot.where, `the guardrail "${slot.ref.slice(0, 128)}" is archived`);
        const key = `${found.id}@${found.version}\n${slot.source}\n${slot.overrides === null ? '' : JSON.stringify(slot.overrides)}`;
        let hook = storedHooks.get(key);
        if (hook === undefined) {
          hook = fromNamed(withOverrides(found.entry, found.id, slot), slot.source, slot.phase, `${slot.where} (guardrail ${found.id} version ${found.version})`, api.checks);
          if (storedHooks.size >= MAX_COMPILED_STORED) storedHooks.delete(storedHooks.keys().next().value!);
          storedHooks.set(key, hook);
        }
        return hook;
      };
      // The hooks of this request: the compiled lists themselves unless the config names stored guardrails.
      const resolveHooks = async (ctx: RequestContext, hooks: CompiledHooks): Promise<ResolvedHooks> => {
        if (hooks.refs === 0) return hooks as ResolvedHooks;
        const each = (slots: CompiledHooks['input']) => Promise.all(slots.map((s) => ('ref' in s ? resolveRef(ctx, s) : s)));
        return { input: await each(hooks.input), output: await each(hooks.output) };
      };
      const inputOf = (ctx: RequestContext, phase: 'input' | 'output', text: string, response: Record<string, unknown> | null): CheckInput => ({
        phase,
        text,
        request: ctx.body ?? {},
        response,
        route: routeApi(ctx.route!),
        model: ctx.model,
        metadata: ctx.metadata,
        signal: ctx.signal,
        upstream: api.upstream,
      });

      // Hooks on calls that are not provider requests (MCP tool calls): compiled once per lists object.
      const compiledLists = new WeakMap<GuardrailLists, CompiledHooks>();
      const runner: GuardrailRunner = {
        check(lists) {
          compileHooks(lists as Target, api.checks, named);
        },
        async run(ctx, lists, phase, subject) {
          let hooks = compiledLists.get(lists);
          if (hooks === undefined) {
            hooks = compileHooks(lists as Target, api.checks, named);
            compiledLists.set(lists, hooks);
          }
          // Stored guardrails named by id are looked up for this call's workspace, as for a provider request.
          const resolved = await resolveHooks(ctx, hooks);
          const input: CheckInput = { phase, ...subject, model: ctx.model, metadata: ctx.metadata, signal: ctx.signal, upstream: api.upstream };
          const results: HookOutcome[] = [];
          let failed = false;
          for (const hook of phase === 'input' ? resolved.input : resolved.output) {
            const { outcome } = await runHook(hook, input);
            results.push(outcome);
            if (outcome.verdict) continue;
            if (hook.deny) {
              const error = denial(outcome, denials);
              return { denied: true, failed, error, results };
            }
            failed = true;
          }
          return { denied: false, failed, error: null, results };
        },
      };
      api.provide(GUARDRAIL_RUNNER, runner);

      /**
       * A streamed answer, watched as it goes out (docs/guardrails.md#streams): each sync output hook by
       * its stream mode; async hooks on the text the client got, once the stream ended. A hook in
       * `hold` mode keeps the whole answer until it ended, so a denial is still a 446.
       */
      const guardStream = async (response: GatewayResponse, ctx: RequestContext, state: RunState, sync: CompiledHook[], later: CompiledHook[]): Promise<GatewayResponse> => {
        const control = streamControl(ctx, response)!;
        let heldDenial: HookOutcome | null = null;
        const host: HookStreamHost = {
          inputOf: (text) => inputOf(ctx, 'output', text, null),
          record: (outcome) => void state.after.push(outcome),
          failed: () => {
            state.failed = true;
          },
          denial: (outcome) => {
            const error = denial(outcome, denials);
            return { error, extra: { hook_results: results(state) } };
          },
          held: (outcome) => {
            heldDenial = outcome;
          },
        };
        for (const hook of sync) control.watch(hookWatcher(hook, host));
        if (later.length > 0) ctx.set(ASYNC_HOOKS, () => runAll(later, inputOf(ctx, 'output', control.text, null), state));
        if (!sync.some((h) => h.stream.mode === 'hold')) return response;
        // Held: nothing went out yet, so the answer can still be a 446, or a 246 when a hook without deny failed.
        const bytes = await readResponseBody(response.body);
        if (heldDenial !== null) {
          ctx.state.delete(STREAM_CUT);
          return denied(ctx, state, heldDenial, denials);
        }
        const headers = response.headers;
        delete headers['content-length'];
        let status = response.status;
        if (state.failed) {
          headers['x-gateway-upstream-status'] = String(response.status);
          status = PASSED_WITH_FAILURES_STATUS;
        }
        return { status, headers, body: bytes, observers: response.observers };
      };

      // A route that upgrades to a socket (a realtime session) has no body to check before and no answer after: its
      // plugin runs the config's hooks on the session's own messages, through the runner.
      const notSessions = (route: RouteDefinition): boolean => route.upgrade !== true;

      // After validation (a checked body), before any tap that could answer (a denied request is never answered from a cache).
      api.hooks.beforeRequest.tapPromise({ name: PLUGIN_NAME, stage: STAGES.beforeRequest.GUARD, routes: notSessions }, async (ctx) => {
        const compiledHooks = hooksOf(ctx);
        if (compiledHooks === null) return undefined;
        const hooks = await resolveHooks(ctx, compiledHooks);
        const state: RunState = { hooks, before: [], after: [], failed: false };
        ctx.set(RUN, state);
        ctx.logFields.hook_results = results(state);
        // Proxied requests carry raw bytes (no parsed body): their hooks still run, on an empty text.
        for (const hook of hooks.input) {
          const text = ctx.body === null ? '' : requestText(routeApi(ctx.route!), ctx.body);
          const { outcome, transformed } = await runHook(hook, inputOf(ctx, 'input', text, null));
          state.before.push(outcome);
          if (transformed !== null) {
            ctx.body = transformed;
            ctx.bodyChanged = true;
          }
          if (!outcome.verdict) {
            if (hook.deny) return denied(ctx, state, outcome, denials);
            state.failed = true;
          }
        }
        return undefined;
      });

      api.hooks.afterResponse.tapPromise({ name: PLUGIN_NAME, stage: STAGES.afterResponse.GUARD, routes: notSessions }, async (response, ctx) => {
        const state = ctx.get(RUN);
        if (state === undefined || response.status === DENIED_STATUS) return response;
        const hooks = state.hooks;
        const sync = hooks.output.filter((h) => !h.async);
        const later = hooks.output.filter((h) => h.async);
        if (response.status < 200 || response.status >= 300) return response;

        // Streamed, or replayed whole from a store (the cache).
        if (response.body !== null && hasEventStreamType(response)) {
          if (sync.length === 0 && later.length === 0) return response;
          return guardStream(response, ctx, state, sync, later);
        }

        const bytes = await readResponseBody(response.body);
        let answer: Record<string, unknown>;
        try {
          answer = JSON.parse(bytes.toString('utf8')) as Record<string, unknown>;
        } catch {
          response.body = bytes;
          return response;
        }
        let deny: HookOutcome | null = null;
        for (const hook of sync) {
          const { outcome, transformed } = await runHook(hook, inputOf(ctx, 'output', responseText(answer), answer));
          state.after.push(outcome);
          if (transformed !== null) answer = transformed;
          if (!outcome.verdict) {
            if (hook.deny) {
              deny = outcome;
              break;
            }
            state.failed = true;
          }
        }
        if (later.length > 0) {
          const snapshot = answer;
          ctx.set(ASYNC_HOOKS, () => runAll(later, inputOf(ctx, 'output', responseText(snapshot), snapshot), state));
        }
        if (deny !== null) return denied(ctx, state, deny, denials);
        const headers = response.headers;
        delete headers['content-length'];
        headers['content-type'] = 'application/json';
        let status = response.status;
        if (state.failed) {
          headers['x-gateway-upstream-status'] = String(response.status);
          status = PASSED_WITH_FAILURES_STATUS;
        }
        return { status, headers, body: JSON.stringify({ ...answer, hook_results: results(state) }), observers: response.observers };
      });

      // Async after-hooks: after the answer was sent, never delaying it. Their results go to the log.
      api.hooks.log.tapPromise(PLUGIN_NAME, async (ctx) => {
        const pending = ctx.get(ASYNC_HOOKS);
        if (pending === undefined) return;
        // Set with the async hooks: they are kept only once the input stage ran.
        const state = ctx.get(RUN)!;
        const before = state.after.length;
        await pending();
        api.logger.info({ trace_id: ctx.traceId, async_hook_results: state.after.slice(before) }, 'async hook results');
      });
    },
  };
}

/** Runs output hooks in order; returns the first failing hook with deny, or null. */
async function runAll(hooks: CompiledHook[], input: CheckInput, state: RunState): Promise<HookOutcome | null> {
  for (const hook of hooks) {
    const { outcome } = await runHook(hook, input);
    state.after.push(outcome);
    if (!outcome.verdict) {
      if (hook.deny && !hook.async) return outcome;
      state.failed = true;
    }
  }
  return null;
}

function results(state: RunState) {
  return { before_request_hooks: state.before, after_request_hooks: state.after };
}

/** The error a denying hook answers with: its first failing check's own code, else `guardrail_denied`. */
/** What a denial is built from: the checks (their own deny codes) and this gateway's error codes (their meaning). */
interface Denials {
  checks: Registry<GuardrailCheck>;
  codes: ReadonlyMap<string, ErrorCodeSpec>;
}

function denial(hook: HookOutcome, { checks, codes }: Denials): GatewayError {
  const failing = hook.checks.find((c) => !c.verdict);
  const why = failing?.explanation ? `: ${failing.explanation}` : '.';
  const code = (failing === undefined ? undefined : checks.get(failing.id)?.denyCode) ?? 'guardrail_denied';
  // The meaning the code's plugin declared in this gateway (checked at boot to be a 446).
  return new GatewayError(code, `Denied by hook "${hook.id}" (check ${failing?.id ?? 'unknown'})${why}`, { spec: codes.get(code) });
}

/** A denial's body. The denial is also the request's error: answered here rather than thrown, it would else reach the log (its `error_code`) and the metrics as no error at all. */
function deniedBody(ctx: RequestContext, state: RunState, hook: HookOutcome, denials: Denials) {
  const error = denial(hook, denials);
  ctx.error = error;
  return { error: error.toEnvelope().error, hook_results: results(state) };
}

function denied(ctx: RequestContext, state: RunState, hook: HookOutcome, denials: Denials): GatewayResponse {
  return { status: DENIED_STATUS, headers: { 'content-type': 'application/json' }, body: JSON.stringify(deniedBody(ctx, state, hook, denials)), observers: null };
}



export default guardrails;
