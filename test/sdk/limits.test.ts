import { describe, expect, test } from 'vitest';
import * as v from 'valibot';
import { ENDPOINT_TYPES, endpointTypesMatched, firstReset, formatUsd, LimitConditionsSchema, LimitGroupBySchema, rateWindow, usagePeriod, type UsageLimitPolicy } from '../../sdk/index.js';

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

type Rule = Pick<UsageLimitPolicy, 'periodic_reset' | 'periodic_reset_days' | 'next_usage_reset_at' | 'period_start_at' | 'created_at'>;
/** A budget created at `created` with a rule (and an optional override of its first reset). */
function budget(created: string, rule: Partial<Rule>, override?: string): Rule {
  const r = { periodic_reset: rule.periodic_reset ?? null, periodic_reset_days: rule.periodic_reset_days ?? null };
  const c = at(created);
  return { ...r, created_at: c, period_start_at: c, next_usage_reset_at: override !== undefined ? at(override) : firstReset(r, c) };
}

describe('rate windows (UTC)', () => {
  test('minute, hour and day windows are aligned to UTC', () => {
    const t = at('2026-03-11T10:17:42.500Z');
    expect(rateWindow('rpm', t)).toEqual({ start: at('2026-03-11T10:17:00Z'), end: at('2026-03-11T10:18:00Z') });
    expect(rateWindow('rph', t)).toEqual({ start: at('2026-03-11T10:00:00Z'), end: at('2026-03-11T11:00:00Z') });
    expect(rateWindow('rpd', t)).toEqual({ start: at('2026-03-11T00:00:00Z'), end: at('2026-03-12T00:00:00Z') });
  });

  test('a week runs from Monday 00:00 UTC', () => {
    // 2026-03-11 is a Wednesday; 2026-03-09 a Monday.
    expect(rateWindow('rpw', at('2026-03-11T10:00:00Z'))).toEqual({ start: at('2026-03-09T00:00:00Z'), end: at('2026-03-16T00:00:00Z') });
    expect(rateWindow('rpw', at('2026-03-09T00:00:00Z')).start).toBe(at('2026-03-09T00:00:00Z'));
    expect(rateWindow('rpw', at('2026-03-08T23:59:59.999Z')).start).toBe(at('2026-03-02T00:00:00Z'));
  });
});

describe('budget periods (UTC)', () => {
  test('weekly: the first reset is the next Monday 00:00 UTC, then every 7 days', () => {
    const b = budget('2026-03-11T10:00:00Z', { periodic_reset: 'weekly' });
    expect(iso(b.next_usage_reset_at)).toBe('2026-03-16T00:00:00.000Z');
    expect(usagePeriod(b, at('2026-03-15T23:59:59Z'))).toEqual({ start: b.created_at, end: at('2026-03-16T00:00:00Z'), lastResetAt: null });
    const later = usagePeriod(b, at('2026-03-30T12:00:00Z'));
    expect([iso(later.start), iso(later.end), iso(later.lastResetAt)]).toEqual(['2026-03-30T00:00:00.000Z', '2026-04-06T00:00:00.000Z', '2026-03-30T00:00:00.000Z']);
  });

  test('monthly: the 1st of each month at 00:00 UTC, whatever the month length', () => {
    const b = budget('2026-01-20T08:00:00Z', { periodic_reset: 'monthly' });
    expect(iso(b.next_usage_reset_at)).toBe('2026-02-01T00:00:00.000Z');
    const p = usagePeriod(b, at('2026-03-01T00:00:00Z'));
    expect([iso(p.start), iso(p.end)]).toEqual(['2026-03-01T00:00:00.000Z', '2026-04-01T00:00:00.000Z']);
    const dec = usagePeriod(b, at('2026-12-31T23:59:59Z'));
    expect([iso(dec.start), iso(dec.end)]).toEqual(['2026-12-01T00:00:00.000Z', '2027-01-01T00:00:00.000Z']);
  });

  test('monthly from an override on the 31st: the last day of short months, the 31st again after', () => {
    const b = budget('2026-01-10T00:00:00Z', { periodic_reset: 'monthly' }, '2026-01-31T00:00:00Z');
    const feb = usagePeriod(b, at('2026-02-15T00:00:00Z'));
    expect([iso(feb.start), iso(feb.end)]).toEqual(['2026-01-31T00:00:00.000Z', '2026-02-28T00:00:00.000Z']);
    const mar = usagePeriod(b, at('2026-03-05T00:00:00Z'));
    expect([iso(mar.start), iso(mar.end)]).toEqual(['2026-02-28T00:00:00.000Z', '2026-03-31T00:00:00.000Z']);
    // 2028 is a leap year.
    expect(iso(usagePeriod(b, at('2028-02-10T00:00:00Z')).end)).toBe('2028-02-29T00:00:00.000Z');
  });

  test('every N days from 00:00 UTC of the day it was created', () => {
    const b = budget('2026-03-11T18:30:00Z', { periodic_reset_days: 10 });
    expect(iso(b.next_usage_reset_at)).toBe('2026-03-21T00:00:00.000Z');
    const p = usagePeriod(b, at('2026-04-05T00:00:00Z'));
    expect([iso(p.start), iso(p.end), iso(p.lastResetAt)]).toEqual(['2026-03-31T00:00:00.000Z', '2026-04-10T00:00:00.000Z', '2026-03-31T00:00:00.000Z']);
    // Exactly at a boundary, the new period has begun.
    expect(iso(usagePeriod(b, at('2026-03-21T00:00:00Z')).start)).toBe('2026-03-21T00:00:00.000Z');
  });

  test('an override without a rule resets once, then never again; no rule and no override never resets', () => {
    const once = budget('2026-03-11T00:00:00Z', {}, '2026-04-01T00:00:00Z');
    expect(usagePeriod(once, at('2026-03-20T00:00:00Z'))).toEqual({ start: once.created_at, end: at('2026-04-01T00:00:00Z'), lastResetAt: null });
    expect(usagePeriod(once, at('2027-01-01T00:00:00Z'))).toEqual({ start: at('2026-04-01T00:00:00Z'), end: null, lastResetAt: at('2026-04-01T00:00:00Z') });
    const never = budget('2026-03-11T00:00:00Z', {});
    expect(never.next_usage_reset_at).toBeNull();
    expect(usagePeriod(never, at('2030-01-01T00:00:00Z'))).toEqual({ start: never.created_at, end: null, lastResetAt: null });
  });

  test('USD amounts read as cents when whole, else to the nano-dollar, never with an exponent', () => {
    expect(formatUsd(50)).toBe('50.00');
    expect(formatUsd(49.5)).toBe('49.50');
    expect(formatUsd(0.000615)).toBe('0.000615');
    expect(formatUsd(0.0004397)).toBe('0.0004397');
    expect(formatUsd(5e-9)).toBe('0.000000005');
  });
});

describe('endpoint types', () => {
  test('a condition may name every value group_by reports for a bundled route, the front doors included', () => {
    for (const value of Object.values(ENDPOINT_TYPES)) expect(v.safeParse(LimitConditionsSchema, [{ key: 'endpoint_type', value }]).success).toBe(true);
    expect(ENDPOINT_TYPES).toMatchObject({ 'chat.completions': 'chat', responses: 'responses', messages: 'messages', 'messages.count_tokens': 'count_tokens' });
  });

  test('chat holds for the three chat doors; every other value for itself only', () => {
    expect(endpointTypesMatched('chat')).toEqual(['chat', 'responses', 'messages']);
    expect(endpointTypesMatched('responses')).toEqual(['responses']);
    expect(endpointTypesMatched('messages')).toEqual(['messages']);
    expect(endpointTypesMatched('count_tokens')).toEqual(['count_tokens']);
    expect(endpointTypesMatched('embeddings')).toEqual(['embeddings']);
  });
});

describe('condition and group_by schemas', () => {
  const conditions = (value: unknown) => v.safeParse(LimitConditionsSchema, value);
  const groups = (value: unknown) => v.safeParse(LimitGroupBySchema, value);

  test('known keys and metadata.<key> pass; an unknown key or an unknown endpoint_type does not', () => {
    expect(conditions([{ key: 'model', value: 'gpt-4o' }, { key: 'metadata.team', value: 'blue' }, { key: 'endpoint_type', value: 'chat' }]).success).toBe(true);
    const unknown = conditions([{ key: 'colour', value: 'red' }]);
    expect(unknown.success).toBe(false);
    expect(unknown.issues?.[0].message).toMatch(/must be one of workspace_id, api_key, endpoint_type, provider, model, user or metadata/);
    expect(conditions([{ key: 'endpoint_type', value: 'chats' }]).issues?.[0].message).toMatch(/chat, completions, embeddings, rerank, proxy, responses, messages, count_tokens/);
    expect(conditions([{ key: 'metadata.', value: 'x' }]).success).toBe(false);
    expect(conditions([{ key: 'model', value: '' }]).success).toBe(false);
  });

  test('group_by: known keys once each', () => {
    expect(groups([{ key: 'user' }, { key: 'metadata.team' }]).success).toBe(true);
    expect(groups([{ key: 'provider' }]).success).toBe(false);
    expect(groups([{ key: 'user' }, { key: 'user' }]).issues?.[0].message).toBe('names a key twice');
  });
});
