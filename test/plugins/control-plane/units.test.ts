import { describe, expect, test } from 'vitest';
import { hasScope } from '../../../core/index.js';
import { settleRotationPolicy } from '../../../plugins/control-plane/api-keys.js';
import { TtlCache } from '../../../sdk/admin/cache.js';
import { addPeriod, hashSecret, maskKey, newSecret } from '../../../plugins/control-plane/keys.js';
import { ALL_SCOPES, capScopes, isKnownScope, ROLE_SCOPES } from '../../../plugins/control-plane/scopes.js';
import { DEFAULT_SETTINGS } from '../../../plugins/control-plane/service.js';

describe('scopes', () => {
  test.each([
    [['*'], 'configs.create', true],
    [['configs.*'], 'configs.create', true],
    [['configs.*'], 'providers.create', false],
    [['*.rotate'], 'api_keys.rotate', true],
    [['*.rotate'], 'api_keys.delete', false],
    [['configs.read'], 'configs.read', true],
    [['configs.read'], 'configs.readx', false],
    [['configs'], 'configs.read', false],
    [[], 'configs.read', false],
  ])('%j covers %s: %s', (granted, needed, expected) => {
    expect(hasScope(granted, needed)).toBe(expected);
  });

  test('the catalogue and its wildcards are known; anything else is not', () => {
    for (const s of ALL_SCOPES) expect(isKnownScope(s)).toBe(true);
    for (const s of ['*', 'configs.*', '*.rotate', 'agents.invoke', 'completions.write', 'logs.read', 'metrics.read']) expect(isKnownScope(s)).toBe(true);
    for (const s of ['nope.read', 'configs.fly', '*.*x', 'configs', '']) expect(isKnownScope(s)).toBe(false);
  });

  test('capScopes narrows wildcards to what the role allows instead of dropping them', () => {
    const member = ROLE_SCOPES.member!;
    expect(capScopes(['configs.*'], member)).toEqual(['configs.read']);
    expect(capScopes(['*'], member).sort()).toEqual([...member].sort());
    expect(capScopes(['configs.read', 'configs.delete'], member)).toEqual(['configs.read']);
    expect(capScopes(['configs.*'], ['configs.*'])).toEqual(['configs.*']);
    expect(capScopes([], member)).toEqual([]);
  });

  test('each role can do what the role below it can', () => {
    const covers = (upper: string, lower: string) => ROLE_SCOPES[lower]!.every((s) => hasScope(ROLE_SCOPES[upper]!, s));
    expect(covers('manager', 'member')).toBe(true);
    expect(covers('admin', 'manager')).toBe(true);
    expect(covers('member', 'manager')).toBe(false);
  });
});

describe('keys', () => {
  test('secrets are 256-bit, hashed, masked', () => {
    const a = newSecret();
    expect(a).toMatch(/^gwk-[A-Za-z0-9_-]{43}$/);
    expect(newSecret()).not.toBe(a);
    expect(hashSecret(a)).toMatch(/^[0-9a-f]{64}$/);
    expect(maskKey(a)).toBe(`gwk-****${a.slice(-4)}`);
    expect(maskKey('short')).toBe('****');
  });

  test.each([
    ['2026-01-31T10:00:00.000Z', 'monthly', '2026-02-28T10:00:00.000Z'],
    ['2028-01-31T10:00:00.000Z', 'monthly', '2028-02-29T10:00:00.000Z'],
    ['2026-03-15T00:00:00.000Z', 'monthly', '2026-04-15T00:00:00.000Z'],
    ['2026-12-31T23:00:00.000Z', 'monthly', '2027-01-31T23:00:00.000Z'],
    ['2026-03-15T00:00:00.000Z', 'weekly', '2026-03-22T00:00:00.000Z'],
  ] as const)('%s + one %s period = %s', (from, period, to) => {
    expect(new Date(addPeriod(Date.parse(from), period)).toISOString()).toBe(to);
  });

  test('rotation policy: enforced period for user keys only, next_rotation_at filled in', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    const enforced = { ...DEFAULT_SETTINGS, user_api_key_rotation_period: 'weekly' as const };
    expect(settleRotationPolicy(undefined, 'workspace-user', enforced, now, null)).toEqual({ rotation_period: 'weekly', next_rotation_at: '2026-01-08T00:00:00.000Z', key_transition_period_ms: null });
    expect(settleRotationPolicy(undefined, 'workspace-service', enforced, now, null)).toBeNull();
    expect(() => settleRotationPolicy({ rotation_period: 'monthly' }, 'workspace-user', enforced, now, null)).toThrow(/must be "weekly"/);
    expect(settleRotationPolicy({ rotation_period: 'weekly' }, 'workspace-user', enforced, now, null)?.rotation_period).toBe('weekly');
    expect(settleRotationPolicy({ next_rotation_at: '2026-02-01T00:00:00Z' }, 'workspace-service', DEFAULT_SETTINGS, now, null)).toEqual({
      rotation_period: null,
      next_rotation_at: '2026-02-01T00:00:00Z',
      key_transition_period_ms: null,
    });
    expect(settleRotationPolicy(null, 'workspace-service', DEFAULT_SETTINGS, now, { rotation_period: 'weekly', next_rotation_at: null, key_transition_period_ms: null })).toBeNull();
  });
});

describe('TtlCache', () => {
  test('serves a value for its TTL, shares concurrent loads, caches misses, and clear() drops all', async () => {
    let now = 0;
    let loads = 0;
    const cache = new TtlCache<string | null>(1000, 10, () => now);
    const load = (v: string | null) => async () => {
      loads++;
      await new Promise((r) => setTimeout(r, 5));
      return v;
    };
    const [a, b] = await Promise.all([cache.get('k', load('v1')), cache.get('k', load('v2'))]);
    expect([a, b, loads]).toEqual(['v1', 'v1', 1]);
    expect(cache.get('k', load('v3'))).toBe('v1'); // synchronous hit
    now = 999;
    expect(cache.get('k', load('v3'))).toBe('v1');
    now = 1000;
    expect(await cache.get('k', load('v3'))).toBe('v3');
    expect(await cache.get('missing', load(null))).toBeNull();
    expect(cache.get('missing', load('late'))).toBeNull(); // the miss is cached
    cache.clear();
    expect(await cache.get('k', load('v4'))).toBe('v4');
  });

  test('a value loaded across a clear() is served once but not kept', async () => {
    const cache = new TtlCache<string>(1000, 10, () => 0);
    let release!: () => void;
    const pending = cache.get('k', () => new Promise<string>((r) => (release = () => r('stale'))));
    cache.clear();
    release();
    expect(await pending).toBe('stale');
    expect(await cache.get('k', async () => 'fresh')).toBe('fresh');
  });

  test('bounded: the oldest entry goes first', async () => {
    const cache = new TtlCache<number>(1000, 2, () => 0);
    for (const k of ['a', 'b', 'c']) await cache.get(k, async () => 1);
    expect(cache.size).toBe(2);
    expect(await cache.get('a', async () => 2)).toBe(2);
  });
});
