import type { CheckInput, GatewayError, StreamView, StreamWatcher } from '../../sdk/index.js';
import type { CompiledCheck, CompiledHook } from './compile.js';
import { runHook, runHookNow, type HookOutcome, type HookRun } from './run.js';

/** Characters before a redaction scan's new text that a pattern's look-behind may need (a word boundary, an email's start). */
const LOOKBEHIND = 32;

/** What a stream watcher needs from the plugin: a check input for some text, and what a failing hook does. */
export interface HookStreamHost {
  inputOf(text: string): CheckInput;
  /** Records a hook's outcome (its one entry in `hook_results`). */
  record(outcome: HookOutcome): void;
  /** A failure of a hook without deny: the answer goes on, marked as failed. */
  failed(): void;
  /** The error and error-event extras of a denial by this outcome. */
  denial(outcome: HookOutcome): { error: GatewayError; extra: Record<string, unknown> };
  /** A hold hook denied: the plugin answers 446 instead of the held stream. */
  held(outcome: HookOutcome): void;
}

/** A hook with only some of its checks, each with the parameters it runs with on part of the text. */
const partOf = (hook: CompiledHook, checks: CompiledCheck[]): CompiledHook => ({
  ...hook,
  checks: checks.map((c) => (c.stream?.parameters === undefined ? c : { ...c, parameters: c.stream.parameters })),
});

/**
 * Watches a stream for one output hook (docs/guardrails.md#streams). Window checks run on the new
 * text with `window` characters before it every `every` characters; `all` checks on the whole text
 * at their cadence; at the end, every check runs once on the whole text, as on a JSON answer.
 * - `block`: a failing hook with deny cuts the stream (terminal error, upstream aborted), and text
 *   its window checks have not seen yet is held until they have; without deny, the failure is
 *   recorded and the stream goes on.
 * - `redact`: text is held back up to `window` characters; the checks' redactions replace spans
 *   before they go out. A failing check of the hook with deny still cuts.
 * - `hold`: nothing goes out until the stream ended and the hook passed.
 */
export function hookWatcher(hook: CompiledHook, host: HookStreamHost): StreamWatcher {
  const { mode, window, every } = hook.stream;
  const windowPart = partOf(hook, hook.checks.filter((c) => c.stream?.scope === 'window'));
  const allChecks = hook.checks.filter((c) => c.stream?.scope === 'all');
  const allParts = allChecks.map((c) => partOf(hook, [c]));
  const allEvery = allChecks.map((c) => c.stream!.every ?? every);
  const lastAll = allChecks.map(() => 0);
  let scannedTo = 0;
  /** Block with deny and window checks: unchecked text waits for its scan. */
  const guardsText = hook.deny && windowPart.checks.length > 0;
  /** Redact: text before this is decided (its redactions made) and may go out. */
  let doneTo = 0;
  /** A result was recorded: the hook has had its say. */
  let settled = false;
  /** The stream watched (one per watcher; kept so the verdict callback is made once, not per scan). */
  let current: StreamView | null = null;
  const judged = (run: HookRun | null) => {
    if (run !== null && !run.outcome.verdict) fail(run.outcome, current!);
  };

  /** A failing outcome: cut (deny), or mark the answer and stop watching. */
  const fail = (outcome: HookOutcome, view: StreamView) => {
    if (settled) return;
    settled = true;
    host.record(outcome);
    if (!hook.deny) return host.failed();
    if (mode === 'hold') host.held(outcome);
    const { error, extra } = host.denial(outcome);
    view.cut(error, { reason: 'guardrail', by: hook.id }, extra);
  };

  /** Redact: the findings of a scan that are complete, before the decided boundary moves past them. */
  const redactScan = (view: StreamView) => {
    const text = view.text;
    const from = Math.max(0, doneTo - LOOKBEHIND);
    return after(runHookNow(windowPart, host.inputOf(text.slice(from))), (run) => redacted(view, text, from, run));
  };
  const redacted = (view: StreamView, text: string, from: number, run: HookRun | null) => {
    const redactions = run?.redactions ?? [];
    if (run !== null && !run.outcome.verdict) {
      fail(run.outcome, view);
      // Cut: nothing more goes out. Without deny, the redaction goes on.
      if (hook.deny) return;
    }
    let boundary = view.ended ? text.length : Math.max(doneTo, text.length - (window >> 1));
    const spans = redactions.map((r) => ({ start: r.start + from, end: r.end + from, replacement: r.replacement }));
    // A finding that reaches the end of the text so far may go on in the next chunk: it waits, and so does the text from it.
    if (!view.ended) for (const s of spans) if (s.end >= text.length && s.start >= doneTo) boundary = Math.min(boundary, s.start);
    for (const s of spans) {
      if (s.start < doneTo || s.start >= boundary || (!view.ended && s.end >= text.length)) continue;
      view.redact(s.start, s.end, s.replacement);
      if (s.end > boundary) boundary = s.end;
    }
    doneTo = Math.max(doneTo, boundary);
  };

  return {
    // The next scan: when the window checks have `every` new characters (redact: a full window held), or an `all`
    // check's cadence comes; a hook that has had its say (and does not redact) waits for the end.
    due() {
      if (settled && mode !== 'redact') return Infinity;
      let next = Infinity;
      if (windowPart.checks.length > 0) next = mode === 'redact' ? doneTo + window : scannedTo + every;
      if (!settled) for (let i = 0; i < allParts.length; i++) next = Math.min(next, lastAll[i]! + allEvery[i]!);
      return next;
    },
    // Block holds back the text its window checks have not seen yet, so a violation is cut before it is whole
    // on the client's screen (at most a part of it, seen in an earlier scan, went out).
    releasable: () => (mode === 'hold' ? 0 : mode === 'redact' ? doneTo : guardsText && !settled ? scannedTo : Infinity),
    scan(view) {
      // Judged already: only a redacting hook still has work (its redactions).
      if (settled && mode !== 'redact') return undefined;
      current = view;
      const length = view.text.length;
      let runs: Promise<void>[] | null = null;
      let p: Promise<void> | undefined;
      if (windowPart.checks.length > 0) {
        if (mode === 'redact') {
          if (view.ended ? length > doneTo : length - doneTo >= window) p = redactScan(view);
        } else if (length > scannedTo && (view.ended || length - scannedTo >= every)) {
          const text = view.text.slice(Math.max(0, scannedTo - window));
          scannedTo = length;
          p = after(runHookNow(windowPart, host.inputOf(text)), judged);
        }
        if (p !== undefined) runs = [p];
      }
      if (!settled) {
        for (let i = 0; i < allParts.length; i++) {
          if (length <= lastAll[i]! || (!view.ended && length - lastAll[i]! < allEvery[i]!)) continue;
          lastAll[i] = length;
          p = after(runHookNow(allParts[i]!, host.inputOf(view.text)), judged);
          if (p !== undefined) (runs ??= []).push(p);
        }
      }
      if (view.ended) return runs === null ? final(view) : Promise.all(runs).then(() => final(view));
      return runs === null ? undefined : Promise.all(runs).then(() => undefined);
    },
  };

  /** The whole text, every check: what a JSON answer would have been judged by. */
  async function final(view: StreamView): Promise<void> {
    if (settled && (mode !== 'redact' || hook.deny)) return;
    const { outcome, redactions } = await runHook(hook, host.inputOf(view.text));
    if (!outcome.verdict) {
      fail(outcome, view);
      if (hook.deny) return;
    } else if (!settled) {
      settled = true;
      host.record(outcome);
    }
    if (mode !== 'block') for (const r of redactions) view.redact(r.start, r.end, r.replacement);
  }
}

/** Runs `act` on a hook run's result: at once when there is one, else when its promise settles. */
function after(run: HookRun | null | Promise<HookRun>, act: (run: HookRun | null) => void): Promise<void> | undefined {
  if (run !== null && typeof (run as Promise<HookRun>).then === 'function') return (run as Promise<HookRun>).then(act);
  act(run as HookRun | null);
  return undefined;
}
