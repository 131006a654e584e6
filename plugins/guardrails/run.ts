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
export async function runHook(hook: CompiledHook, input: CheckInput): Promise<{ outcome: HookOutcome; transformed: Record<string, unknown> | null; redactions: Redaction[] }> {
  const started = performance.now();
  const results = await Promise.all(
    hook.checks.map(async (c) => {
      const t0 = performance.now();
      let result: CheckResult;
      let error: string | null = null;
      try {
        result = await c.check.run(c.parameters, input);
      } catch (err) {
        if (err instanceof GatewayError && err.code === 'host_not_allowed') throw err;
        error = (err as Error)?.message ?? String(err);
        result = { verdict: false, explanation: `The check failed to run: ${error}` };
      }
      return { id: c.id, result, error, ms: performance.now() - t0 };
    }),
  );
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
