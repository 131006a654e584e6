import { performance } from 'node:perf_hooks';
import { type CheckInput, type CheckResult, GatewayError } from '../../sdk/index.js';
import type { CompiledHook, Feedback } from './compile.js';

/** One check's outcome, as reported in `hook_results`. */
export interface CheckOutcome {
  id: string;
  verdict: boolean;
  explanation: string | null;
  data: unknown;
  /** The check threw; counted as a failure. */
  error: string | null;
  transformed: boolean;
  execution_time: number;
}

/** One hook's outcome, as reported in `hook_results`. */
export interface HookOutcome {
  id: string;
  /** All checks passed. */
  verdict: boolean;
  deny: boolean;
  async: boolean;
  transformed: boolean;
  feedback: Feedback | null;
  execution_time: number;
  checks: CheckOutcome[];
}

const round = (ms: number) => Math.round(ms * 1000) / 1000;

/**
 * Runs a hook's checks in parallel on the same input. The hook passes when
 * every check passes; a check that throws fails, except with the 400
 * `host_not_allowed` (a webhook on a host the outbound policy refuses): the
 * config asks for a call the gateway will not make, which is the caller's
 * error to see, not a verdict (a fail-open webhook would otherwise pass
 * unseen). When checks transform, the last transforming check in config order
 * wins (one per hook is the sane use).
 */
export async function runHook(hook: CompiledHook, input: CheckInput): Promise<HookRun> {
  const started = performance.now();
  const results = await Promise.all(hook.checks.map((c) => startCheck(c, input)));
  return outcomeOf(hook, results, started);
}

/** What running a hook gives: its outcome (for `hook_results`), a transformed body, a stream's redactions. */
export interface HookRun {
  outcome: HookOutcome;
  transformed: Record<string, unknown> | null;
  redactions: Redaction[];
}

interface Ran {
  id: string;
  result: CheckResult;
  error: string | null;
  ms: number;
}

/** One check started: its result at once when it answers at once, else a promise of it. A throw is a failure (except host_not_allowed). */
function startCheck(c: CompiledHook['checks'][number], input: CheckInput): Ran | Promise<Ran> {
  const t0 = performance.now();
  let result: CheckResult | Promise<CheckResult>;
  try {
    result = c.check.run(c.parameters, input);
  } catch (err) {
    return failedRun(c.id, err, t0);
  }
  if (typeof (result as Promise<CheckResult>)?.then !== 'function') return { id: c.id, result: result as CheckResult, error: null, ms: performance.now() - t0 };
  return (result as Promise<CheckResult>).then(
    (r) => ({ id: c.id, result: r, error: null, ms: performance.now() - t0 }),
    (err: unknown) => failedRun(c.id, err, t0),
  );
}

/** A check that threw: a failure with the error, except host_not_allowed, which is the request's answer. */
function failedRun(id: string, err: unknown, t0: number): Ran {
  if (err instanceof GatewayError && err.code === 'host_not_allowed') throw err;
  const error = (err as Error)?.message ?? String(err);
  return { id, result: { verdict: false, explanation: `The check failed to run: ${error}` }, error, ms: performance.now() - t0 };
}

/**
 * Runs a hook as {@link runHook} does, for a stream's frequent scans: when every check answers at
 * once (the text checks do), the answer is too, with no promise; and when every check passed with
 * nothing to redact (most scans), it is null, without the result objects.
 */
export function runHookNow(hook: CompiledHook, input: CheckInput): HookRun | null | Promise<HookRun> {
  const started = performance.now();
  const results: Array<Ran | Promise<Ran>> = [];
  let pending = false;
  let clean = true;
  for (const c of hook.checks) {
    const r = startCheck(c, input);
    results.push(r);
    if (typeof (r as Promise<Ran>).then === 'function') pending = true;
    else if ((r as Ran).result.verdict !== true || ((r as Ran).result.redactions?.length ?? 0) > 0) clean = false;
  }
  if (pending) return Promise.all(results).then((done) => outcomeOf(hook, done, started));
  return clean ? null : outcomeOf(hook, results as Ran[], started);
}

function outcomeOf(hook: CompiledHook, results: Ran[], started: number): HookRun {
  let transformed: Record<string, unknown> | null = null;
  let redactions: Redaction[] = NONE;
  const checks: CheckOutcome[] = results.map(({ id, result, error, ms }) => {
    if (result.transformed !== undefined) transformed = result.transformed;
    if (result.redactions !== undefined && result.redactions.length > 0) redactions = redactions === NONE ? [...result.redactions] : redactions.concat(result.redactions);
    return {
      id,
      verdict: result.verdict === true,
      explanation: result.explanation ?? null,
      data: result.data ?? null,
      error,
      transformed: result.transformed !== undefined || (result.redactions?.length ?? 0) > 0,
      execution_time: round(ms),
    };
  });
  const verdict = checks.every((c) => c.verdict);
  return {
    outcome: {
      id: hook.id,
      verdict,
      deny: hook.deny,
      async: hook.async,
      transformed: transformed !== null || redactions.length > 0,
      feedback: verdict ? hook.onSuccess : hook.onFail,
      execution_time: round(performance.now() - started),
      checks,
    },
    transformed,
    redactions,
  };
}

/** A span of the checked text to replace (see `CheckResult.redactions`). */
export interface Redaction {
  start: number;
  end: number;
  replacement: string;
}
const NONE: Redaction[] = [];
