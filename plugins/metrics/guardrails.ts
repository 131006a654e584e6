/** One check's outcome in `hook_results` (the guardrails plugin's shape), as far as the metrics read it. */
interface CheckOutcomeLike {
  id?: unknown;
  verdict?: unknown;
  error?: unknown;
}
interface HookOutcomeLike {
  verdict?: unknown;
  deny?: unknown;
  checks?: unknown;
}

/** Guardrail outcomes of a request from `logFields.hook_results` (`{ before_request_hooks, after_request_hooks }`), tolerant of other shapes. */
export function guardrailOutcomes(results: unknown, visit: (phase: 'before' | 'after', check: string, outcome: 'pass' | 'fail' | 'error') => void, denied: (phase: 'before' | 'after') => void): void {
  if (results === null || typeof results !== 'object') return;
  const phases = [
    ['before', (results as { before_request_hooks?: unknown }).before_request_hooks],
    ['after', (results as { after_request_hooks?: unknown }).after_request_hooks],
  ] as const;
  for (const [phase, hooks] of phases) {
    if (!Array.isArray(hooks)) continue;
    for (const hook of hooks as HookOutcomeLike[]) {
      if (hook === null || typeof hook !== 'object') continue;
      if (hook.deny === true && hook.verdict === false) denied(phase);
      if (!Array.isArray(hook.checks)) continue;
      for (const c of hook.checks as CheckOutcomeLike[]) {
        if (c === null || typeof c !== 'object' || typeof c.id !== 'string') continue;
        visit(phase, c.id, c.error !== null && c.error !== undefined ? 'error' : c.verdict === true ? 'pass' : 'fail');
      }
    }
  }
}
