import { stateKey, type GatewayError, type RequestContext, type Usage } from '../../sdk/index.js';
import { usageNanoUsd } from './estimate.js';
import type { Held } from './index.js';
import { drawHolds, type DrawPick, type StreamBudgetDeps } from './stream-budget.js';

/** Per request: what each of its reservations covers so far (its hold plus its draws), by entry index. */
const COVERED = stateKey<{ covered: Map<number, number>; draws: number }>('limits:session-covered');

/**
 * Charges a long request's usage so far (a realtime session's, after each response) against the usage-limit
 * policies it holds (docs/limits.md): what the usage passed beyond what its reservations cover is drawn, atomically,
 * as a stream's text draws (stream-budget.ts). A policy with no more to give ends the session with its error. The
 * draws are holds of their own, released when the request settles to its real usage.
 */
export async function chargeSession(ctx: RequestContext, held: Held, used: Usage, deps: StreamBudgetDeps): Promise<GatewayError | null> {
  let state = ctx.get(COVERED);
  if (state === undefined) ctx.set(COVERED, (state = { covered: new Map(), draws: 0 }));
  const picks: DrawPick[] = [];
  const totals: number[] = [];
  const count = held.entries.length;
  for (let i = 0; i < count; i++) {
    const e = held.entries[i]!;
    // Budgets only: a tokens-per-minute window is the minute the session started in, which a session outlives; it
    // is checked when the session starts, as one request (docs/limits.md#realtime-sessions).
    if (e.extra || (e.leaf !== null && e.leaf !== ctx.targetPath) || e.policy.kind !== 'usage') continue;
    const total = e.kind === 'tokens' ? used.total_tokens : e.price === null ? 0 : usageNanoUsd(e.price, used, 1);
    const need = total - (state.covered.get(i) ?? e.hold.amount);
    if (need <= 0) continue;
    picks.push({ index: i, amount: need });
    totals.push(total);
  }
  if (picks.length === 0) return null;
  let denied: number;
  try {
    denied = await drawHolds(held, picks, `${held.requestId}+s${++state.draws}`, deps);
  } catch (err) {
    deps.storeDown(err);
    // The counters cannot be reached: a fail-open policy lets the session go on, a fail-closed one ends it.
    const closed = picks.find((p) => !held.entries[p.index]!.policy.fail_open);
    return closed === undefined ? null : deps.refuse(held.entries[closed.index]!.policy, ctx);
  }
  if (denied !== -1) return deps.refuse(held.entries[denied]!.policy, ctx);
  picks.forEach((p, k) => state.covered.set(p.index, totals[k]!));
  return null;
}
