import * as v from 'valibot';
import { fieldSchema as f, plainObject, type TargetField } from '../../sdk/index.js';

const FeedbackSchema = f.strictObject({ value: v.optional(f.number()), weight: v.optional(f.number()), metadata: v.optional(f.object()) });
/** `on_fail` / `on_success` of before-request hooks and output guardrails, the two places the spec gives `deny`. */
const OutcomeWithDeny = f.strictObject({ feedback: v.optional(FeedbackSchema), deny: v.optional(f.boolean()) });
/** `on_fail` / `on_success` where the spec lists feedback only (after-request hooks, input guardrails); strict, so `deny` there is refused rather than silently ignored. */
const Outcome = f.strictObject({ feedback: v.optional(FeedbackSchema) });
const CheckSchema = f.strictObject({ id: f.string(), parameters: f.object() });

/** What an output hook does on a streamed answer (docs/guardrails.md#streams): block, redact or hold; its window and cadence. */
export const STREAM_MODES = ['block', 'redact', 'hold'] as const;
/** Largest `stream_window`: held back at most this much text (redact) and scanned this far back. */
export const MAX_STREAM_WINDOW = 4096;
const StreamFields = {
  stream_mode: v.optional(f.oneOf(STREAM_MODES)),
  stream_window: v.optional(f.integer(16, MAX_STREAM_WINDOW)),
  stream_check_every: v.optional(f.integer(1, MAX_STREAM_WINDOW)),
};

const BeforeHookSchema = f.strictObject({
  id: f.string(),
  type: v.optional(f.string()),
  checks: v.optional(f.list(CheckSchema, 'check objects')),
  on_fail: v.optional(OutcomeWithDeny),
  on_success: v.optional(OutcomeWithDeny),
});

const AfterHookSchema = f.strictObject({
  id: f.string(),
  type: v.optional(f.string()),
  async: v.optional(f.boolean()),
  ...StreamFields,
  checks: v.optional(f.list(CheckSchema, 'check objects')),
  on_fail: v.optional(Outcome),
  on_success: v.optional(Outcome),
});

function inlineEntry(outcome: typeof Outcome | typeof OutcomeWithDeny) {
  return v.pipe(
    plainObject('must be a guardrail id (string) or a guardrail object'),
    v.objectWithRest(
      { id: v.optional(f.string()), deny: v.optional(f.boolean()), async: v.optional(f.boolean()), on_fail: v.optional(outcome), on_success: v.optional(outcome), ...StreamFields },
      plainObject('must be an object of check parameters (check id → parameters)'),
    ),
  );
}

/**
 * A guardrail entry on its own, as the control plane stores it: the settings
 * of an output guardrail (the widest form: `on_fail.deny` allowed, `async`
 * honoured where the guardrail is named as an output one) and its checks.
 */
export const GUARDRAIL_ENTRY_SCHEMA = inlineEntry(OutcomeWithDeny);

/**
 * A guardrail entry is a guardrail id, or an inline guardrail whose extra
 * properties map a check id to that check's parameters. A union would hide the
 * inner path behind "matches no option", so the branch is picked by the input
 * type instead; both branches are built once here. Check parameters are
 * checked against each check's own schema when a config is first run.
 */
function guardrailEntry(outcome: typeof Outcome | typeof OutcomeWithDeny) {
  const inline = inlineEntry(outcome);
  const id = f.string();
  return v.lazy((input) => (typeof input === 'string' ? id : inline));
}

/** The config fields this plugin reads: the spec's hooks and guardrails. Each alone makes a config complete. */
export const GUARDRAIL_FIELDS: Readonly<Record<string, TargetField>> = Object.freeze({
  before_request_hooks: { schema: f.list(BeforeHookSchema, 'hook objects'), combination: ['before_request_hooks'] },
  after_request_hooks: { schema: f.list(AfterHookSchema, 'hook objects'), combination: ['after_request_hooks'] },
  input_guardrails: { schema: f.list(guardrailEntry(Outcome), 'guardrail entries'), combination: ['input_guardrails'] },
  output_guardrails: { schema: f.list(guardrailEntry(OutcomeWithDeny), 'guardrail entries'), combination: ['output_guardrails'] },
});
