/**
 * The counter store contract. A bucket is one policy's window (a rate
 * limit's UTC minute, hour, day or week; a budget's period); inside it each
 * group (the request's group_by values) has a settled count `used` and a
 * `reserved` total held by requests in flight. Amounts are integers:
 * requests, tokens, or nano-USD (1e-9 USD) for cost budgets, so sums are exact.
 */

/** One counter a request is checked against. */
export interface CheckItem {
  /** The policy's window, e.g. `<policy id>:r:rpm:<window start ms>`. */
  bucket: string;
  /** The request's group in it. */
  group: string;
  /** What the request takes: counted for good (`reserve` false) or held until it settles. */
  amount: number;
  limit: number;
  reserve: boolean;
  /** Epoch ms (on the caller's clock) when the bucket may be dropped: its window's end plus the reservation TTL; 0 for never. */
  expireAt: number;
}

export interface CheckResult {
  /** Index of the first item the request would take over its limit, or -1 when every item passed and was counted. */
  denied: number;
  /** Per item, after the request was counted (passed) or without it (denied). */
  used: number[];
  reserved: number[];
}

/** A reservation to settle: what was held, in which bucket and group. */
export interface Hold {
  bucket: string;
  group: string;
  /** Unique within the bucket: `<request id>|<amount>|<group>`. */
  member: string;
  amount: number;
  expireAt: number;
}

export interface GroupCount {
  group: string;
  used: number;
  reserved: number;
}

export interface LimitStore {
  /**
   * Atomically: releases the bucket's expired reservations, then checks every
   * item (`used + reserved + max(amount, 1) <= limit`: an exhausted budget
   * refuses even a request estimated at nothing) and, only when all pass,
   * counts or holds each. `holdUntil` is when the holds expire by themselves.
   */
  check(items: readonly CheckItem[], requestId: string, now: number, holdUntil: number): Promise<CheckResult>;
  /** Index of the first item `check` would refuse now, or -1; counts and holds nothing (expired holds are released). */
  peek(items: readonly CheckItem[], now: number): Promise<number>;
  /** Replaces each hold by the real amount (0 releases it); a hold that expired meanwhile only adds the real amount. */
  settle(holds: readonly Hold[], actual: readonly number[], now: number): Promise<void>;
  /** Every group of a bucket, expired holds released first. */
  read(bucket: string, now: number): Promise<GroupCount[]>;
  close(): Promise<void>;
}

/** The member a hold is stored as. The group comes last: it may contain `|`. */
export function holdMember(requestId: string, amount: number, group: string): string {
  return `${requestId}|${amount}|${group}`;
}

/** The amount and group of a hold member. */
export function parseMember(member: string): { amount: number; group: string } {
  const a = member.indexOf('|');
  const b = member.indexOf('|', a + 1);
  return { amount: Number(member.slice(a + 1, b)), group: member.slice(b + 1) };
}
