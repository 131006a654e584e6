import type { GatewayError, LimitPolicy, RequestContext, StreamView, StreamWatcher } from '../../sdk/index.js';
import { estimateNanoUsd } from './estimate.js';
import type { Held } from './index.js';
import { holdMember, type CheckItem, type LimitStore } from './store.js';

/**
 * Output tokens a stream draws at a time once past its reservation: one round trip to the counter
 * store per this many tokens. A draw refused in full is tried again for exactly what the text needs,
 * so a budget is spent to its last token (± one chunk) before the stream is cut.
 */
export const STREAM_DRAW_TOKENS = 16;

export interface StreamBudgetDeps {
  store: LimitStore;
  clock: () => number;
  reservationTtlMs: number;
  storeDown(err: unknown): void;
  /** The error a stream cut by `policy` ends with. */
  refuse(policy: LimitPolicy, ctx: RequestContext): GatewayError;
}

/**
 * Caps a stream at its budgets (docs/limits.md#streams). The request reserved its estimate; when the
 * answer text (characters / 4) outgrows the output part of it, the stream draws more from every
 * policy it holds, atomically, as a request would be checked. When a policy has no more to give, the
 * stream is cut with that policy's error before the text that needed it goes out, and the upstream
 * is aborted. Draws are holds of their own, released when the request settles to its real usage.
 */
export function streamBudget(held: Held, answeredBy: string | null, deps: StreamBudgetDeps): StreamWatcher {
  // The policies of the whole request and of the target that answered (not those of targets tried before it).
  const base = held.entries.map((e, i) => (e.leaf === null || e.leaf === answeredBy ? i : -1)).filter((i) => i !== -1);
  let covered = held.completion;
  let draws = 0;

  /** Draws `tokens` more from every policy; -1 when all gave, else the hold index of the one that refused. */
  const draw = async (tokens: number): Promise<number> => {
    const picks: DrawPick[] = [];
    for (const i of base) {
      const e = held.entries[i]!;
      // An unpriced model under a cost budget reserved nothing and draws nothing (docs/limits.md#unknown-prices).
      const amount = e.kind === 'tokens' ? tokens : e.price === null ? 0 : estimateNanoUsd({ prompt: 0, completion: tokens }, e.price);
      if (amount !== 0) picks.push({ index: i, amount });
    }
    const refused = picks.length === 0 ? -1 : await drawHolds(held, picks, `${held.requestId}+${++draws}`, deps);
    if (refused === -1) covered += tokens;
    return refused;
  };

  const scan = async (view: StreamView, need: number): Promise<void> => {
    let refused: number;
    try {
      refused = await draw(Math.max(need, STREAM_DRAW_TOKENS));
      if (refused !== -1 && need < STREAM_DRAW_TOKENS) refused = await draw(need);
    } catch (err) {
      deps.storeDown(err);
      // The counters cannot be reached: a fail-open policy lets the stream go on, a fail-closed one ends it.
      const closed = base.find((i) => !held.entries[i]!.policy.fail_open);
      if (closed === undefined) {
        covered = Infinity;
        return;
      }
      refused = closed;
    }
    if (refused === -1) return;
    const policy = held.entries[refused]!.policy;
    view.cut(deps.refuse(policy, view.ctx), { reason: 'usage_limit', by: policy.id });
  };

  return {
    releasable: () => Infinity,
    // The text the tokens covered so far allow (characters / 4): nothing to draw before it is past.
    due: () => (covered === Infinity ? Infinity : covered * 4 + 1),
    scan(view) {
      const used = Math.ceil(view.text.length / 4);
      return used <= covered ? undefined : scan(view, used - covered);
    },
  };
}

/** One reservation to draw more from: its hold's index in `held.entries`, and how much more. */
export interface DrawPick {
  index: number;
  amount: number;
}

/**
 * Draws more from several reservations at once, atomically, as a request is checked (a stream past its
 * reservation, a realtime session's usage so far): -1 when all gave, each draw then a hold of its own (settled to 0:
 * the first hold carries the real amount), else the index in `held.entries` of the one that refused. `id` names the
 * draw's holds.
 */
export async function drawHolds(held: Held, picks: readonly DrawPick[], id: string, deps: Pick<StreamBudgetDeps, 'store' | 'clock' | 'reservationTtlMs'>): Promise<number> {
  const items: CheckItem[] = picks.map(({ index, amount }) => {
    const e = held.entries[index]!;
    return { bucket: e.hold.bucket, group: e.hold.group, amount, limit: e.limit, reserve: true, expireAt: e.hold.expireAt };
  });
  const now = deps.clock();
  const result = await deps.store.check(items, id, now, now + deps.reservationTtlMs);
  if (result.denied !== -1) return picks[result.denied]!.index;
  items.forEach((item, k) => {
    const e = held.entries[picks[k]!.index]!;
    held.entries.push({ ...e, hold: { bucket: item.bucket, group: item.group, member: holdMember(id, item.amount, item.group), amount: item.amount, expireAt: item.expireAt }, extra: true });
  });
  return -1;
}
