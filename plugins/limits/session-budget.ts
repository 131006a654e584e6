import { stateKey, type GatewayError, type LimitPolicy, type RequestContext, type Usage } from '../../sdk/index.js';
import { usageNanoUsd } from './estimate.js';
import type { Held } from './index.js';
import { holdMember, type CheckItem, type LimitStore } from './store.js';

export interface SessionBudgetDeps {
  store: LimitStore;
  clock: () => number;
  reservationTtlMs: number;
  storeDown(err: unknown): void;
  refuse(policy: LimitPolicy, ctx: RequestContext): GatewayError;
}

/** Per request: what each of its reservations covers so far (its hold plus its draws), by entry index. */
const COVERED = stateKey<{ covered: Map<number, number>; draws: number }>('limits:session-covered');

/**
 * Charges a long request's usage so far (a realtime session's, after each response) against the usage-limit
 * policies it holds (docs/limits.md): what the usage passed beyond what its reservations cover is drawn, atomically,
 * as a stream's text draws (stream-budget.ts). A policy with no more to give ends the session with its error. The
 * draws are holds of their own, released when the request settles to its real usage.
 */
export async function chargeSession(ctx: RequestContext, held: Held, used: Usage, deps: SessionBudgetDeps): Promise<GatewayError | null> {
  let state = ctx.get(COVERED);
  if (state === undefined) ctx.set(COVERED, (state = { covered: new Map(), draws: 0 }));
  const items: CheckItem[] = [];
  const of: number[] = [];
  const amounts: number[] = [];
  const count = held.entries.length;
  for (let i = 0; i < count; i++) {
    const e = held.entries[i]!;
    // Budgets only: a tokens-per-minute window is the minute the session started in, which a session outlives; it
    // is checked when the session starts, as one request (docs/limits.md#realtime-sessions).
    if (e.extra || (e.leaf !== null && e.leaf !== ctx.targetPath) || e.policy.kind !== 'usage') continue;
    const total = e.kind === 'tokens' ? used.total_tokens : e.price === null ? 0 : usageNanoUsd(e.price, used, 1);
    const covered = state.covered.get(i) ?? e.hold.amount;
    const need = total - covered;
    if (need <= 0) continue;
    items.push({ bucket: e.hold.bucket, group: e.hold.group, amount: need, limit: e.limit, reserve: true, expireAt: e.hold.expireAt });
    of.push(i);
    amounts.push(total);
  }
  if (items.length === 0) return null;
  const id = `${held.requestId}+s${++state.draws}`;
  const now = deps.clock();
  let denied: number;
  try {
    denied = (await deps.store.check(items, id, now, now + deps.reservationTtlMs)).denied;
  } catch (err) {
    deps.storeDown(err);
    // The counters cannot be reached: a fail-open policy lets the session go on, a fail-closed one ends it.
    const closed = of.find((i) => !held.entries[i]!.policy.fail_open);
    return closed === undefined ? null : deps.refuse(held.entries[closed]!.policy, ctx);
  }
  if (denied !== -1) return deps.refuse(held.entries[of[denied]!]!.policy, ctx);
  items.forEach((item, k) => {
    const e = held.entries[of[k]!]!;
    held.entries.push({ ...e, hold: { bucket: item.bucket, group: item.group, member: holdMember(id, item.amount, item.group), amount: item.amount, expireAt: item.expireAt }, extra: true });
    state.covered.set(of[k]!, amounts[k]!);
  });
  return null;
}
