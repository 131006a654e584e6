import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createLogger } from '../../../core/index.js';
import { memoryLimitStore } from '../../../plugins/limits/memory-store.js';
import { redisLimitStore } from '../../../plugins/limits/redis-store.js';
import { redisConnection } from '../../../sdk/index.js';
import { holdMember, type CheckItem, type LimitStore } from '../../../plugins/limits/store.js';
import { REDIS_URL, requireService, uniquePrefix } from '../../helpers/services.js';

const silent = createLogger({ level: 'silent' });
const T0 = Date.parse('2026-03-11T10:00:00Z');
const TTL = 60_000;

const item = (over: Partial<CheckItem> = {}): CheckItem => ({ bucket: 'p1:r:rpm:0', group: '*', amount: 1, limit: 3, reserve: false, expireAt: T0 + 120_000, ...over });

/** The contract every counter store keeps; run against memory and Redis. */
function contract(name: string, make: () => Promise<{ store: LimitStore; clock: { now: number } } | null>) {
  describe(`the ${name} counter store`, () => {
    let store: LimitStore;
    let clock: { now: number };
    let available = true;
    beforeAll(async () => {
      const made = await make();
      if (made === null) {
        available = false;
        return;
      }
      ({ store, clock } = made);
    });
    afterAll(async () => {
      if (available) await store.close();
    });
    const run = (title: string, fn: () => Promise<void>) => test(title, async (ctx) => {
      if (!available) ctx.skip();
      clock.now = T0;
      await fn();
    });

    run('counts requests up to the limit, then refuses without counting', async () => {
      const it = item({ bucket: 'count:r:rpm:0' });
      for (let i = 1; i <= 3; i++) expect(await store.check([it], `r${i}`, clock.now, clock.now + TTL)).toEqual({ denied: -1, used: [i], reserved: [0] });
      expect(await store.check([it], 'r4', clock.now, clock.now + TTL)).toEqual({ denied: 0, used: [3], reserved: [0] });
      expect(await store.read('count:r:rpm:0', clock.now)).toEqual([{ group: '*', used: 3, reserved: 0 }]);
    });

    run('all or nothing: when one item is over its limit, no item is counted', async () => {
      const a = item({ bucket: 'aon:a', limit: 10 });
      const b = item({ bucket: 'aon:b', limit: 1 });
      expect((await store.check([a, b], 'r1', clock.now, clock.now + TTL)).denied).toBe(-1);
      const second = await store.check([a, b], 'r2', clock.now, clock.now + TTL);
      expect(second.denied).toBe(1);
      expect(await store.read('aon:a', clock.now)).toEqual([{ group: '*', used: 1, reserved: 0 }]);
    });

    run('groups of one bucket are counted apart', async () => {
      for (const g of ['["u1"]', '["u2"]', '["u1"]']) await store.check([item({ bucket: 'groups', group: g })], `r-${Math.random()}`, clock.now, clock.now + TTL);
      const groups = await store.read('groups', clock.now);
      expect(groups.sort((x, y) => x.group.localeCompare(y.group))).toEqual([
        { group: '["u1"]', used: 2, reserved: 0 },
        { group: '["u2"]', used: 1, reserved: 0 },
      ]);
    });

    run('a reservation holds until settled to the real amount; settling twice releases once', async () => {
      const it = item({ bucket: 'hold', amount: 600, limit: 1000, reserve: true });
      expect(await store.check([it], 'a', clock.now, clock.now + TTL)).toEqual({ denied: -1, used: [0], reserved: [600] });
      // 600 held: another 600 would go over.
      expect((await store.check([it], 'b', clock.now, clock.now + TTL)).denied).toBe(0);
      const hold = { bucket: 'hold', group: '*', member: holdMember('a', 600, '*'), amount: 600, expireAt: it.expireAt };
      await store.settle([hold], [250], clock.now);
      await store.settle([hold], [0], clock.now);
      expect(await store.read('hold', clock.now)).toEqual([{ group: '*', used: 250, reserved: 0 }]);
      expect((await store.check([it], 'c', clock.now, clock.now + TTL)).denied).toBe(-1);
    });

    run('peek answers what a check would, and counts and holds nothing', async () => {
      const a = item({ bucket: 'peek:a', limit: 10, reserve: true, amount: 4 });
      const b = item({ bucket: 'peek:b', limit: 5, reserve: true, amount: 4 });
      expect(await store.peek([a, b], clock.now)).toBe(-1);
      expect((await store.check([a, b], 'p1', clock.now, clock.now + TTL)).denied).toBe(-1);
      // b holds 4 of 5: another 4 would not fit; nothing the peeks did was counted.
      expect(await store.peek([a, b], clock.now)).toBe(1);
      expect(await store.peek([a], clock.now)).toBe(-1);
      expect(await store.read('peek:a', clock.now)).toEqual([{ group: '*', used: 0, reserved: 4 }]);
      // An expired hold is released first, as a check would.
      expect(await store.peek([b], clock.now + TTL + 1)).toBe(-1);
      // A bucket never checked: only an amount over the limit is refused.
      expect(await store.peek([item({ bucket: 'peek:new', limit: 3, amount: 4 })], clock.now)).toBe(0);
    });

    run('an exhausted budget refuses even a request estimated at nothing', async () => {
      const it = item({ bucket: 'zero', amount: 5, limit: 5, reserve: false });
      expect((await store.check([it], 'a', clock.now, clock.now + TTL)).denied).toBe(-1);
      expect((await store.check([{ ...it, amount: 0 }], 'b', clock.now, clock.now + TTL)).denied).toBe(0);
    });

    run('a reservation never settled expires on its own, and settling it later adds the real amount only', async () => {
      const it = item({ bucket: 'leak', amount: 900, limit: 1000, reserve: true });
      await store.check([it], 'lost', clock.now, clock.now + TTL);
      expect((await store.check([it], 'x', clock.now, clock.now + TTL)).denied).toBe(0);
      clock.now += TTL + 1;
      expect(await store.read('leak', clock.now)).toEqual([]);
      expect((await store.check([{ ...it, amount: 100, reserve: false }], 'y', clock.now, clock.now + TTL)).denied).toBe(-1);
      await store.settle([{ bucket: 'leak', group: '*', member: holdMember('lost', 900, '*'), amount: 900, expireAt: it.expireAt }], [40], clock.now);
      expect(await store.read('leak', clock.now)).toEqual([{ group: '*', used: 140, reserved: 0 }]);
    });

    run('500 concurrent checks of a 100 limit: exactly 100 pass', async () => {
      const it = item({ bucket: 'race', limit: 100 });
      const results = await Promise.all(Array.from({ length: 500 }, (_, i) => store.check([it], `c${i}`, clock.now, clock.now + TTL)));
      expect(results.filter((r) => r.denied === -1)).toHaveLength(100);
      expect(await store.read('race', clock.now)).toEqual([{ group: '*', used: 100, reserved: 0 }]);
    });
  });
}

contract('memory', async () => {
  const clock = { now: T0 };
  return { store: await memoryLimitStore({ now: () => clock.now, sweepIntervalMs: 60_000, file: null, saveIntervalMs: 60_000, logger: silent }), clock };
});

let redis: Redis | null = null;
const prefix = uniquePrefix('limits-store');
contract('Redis', async () => {
  if (!(await requireService('Redis', REDIS_URL))) return null;
  redis = new Redis(REDIS_URL, { lazyConnect: true, enableOfflineQueue: false });
  await redis.connect();
  return { store: redisLimitStore(redisConnection(redis, prefix, false)), clock: { now: T0 } };
});

describe('Redis layout', () => {
  test('bucket keys expire with their window; holds live in a sorted set scored by expiry', async (ctx) => {
    if (redis === null) ctx.skip();
    const store = redisLimitStore(redisConnection(redis!, prefix, false));
    const expireAt = Date.now() + 90_000;
    await store.check([item({ bucket: 'layout', amount: 7, limit: 100, reserve: true, expireAt })], 'req1', Date.now(), Date.now() + TTL);
    const pttl = await redis!.pttl(`${prefix}limits:layout`);
    expect(pttl).toBeGreaterThan(80_000);
    expect(pttl).toBeLessThanOrEqual(90_000);
    expect(await redis!.hgetall(`${prefix}limits:layout`)).toEqual({ 'r:*': '7' });
    expect(await redis!.zrange(`${prefix}limits:layout:z`, 0, -1)).toEqual(['req1|7|*']);
    expect(await redis!.pttl(`${prefix}limits:layout:z`)).toBeGreaterThan(80_000);
    // The same period under a rule that no longer resets: its counts stay.
    await store.check([item({ bucket: 'layout', amount: 1, limit: 100, reserve: true, expireAt: 0 })], 'req2', Date.now(), Date.now() + TTL);
    expect(await redis!.pttl(`${prefix}limits:layout`)).toBe(-1);
  });

  afterAll(async () => {
    if (redis === null) return;
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });
});

describe('memory store persistence', () => {
  test('settled counts are saved on close and read back at start; holds are not', async () => {
    const { mkdtemp } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const file = join(await mkdtemp(join(tmpdir(), 'gw-limits-')), 'limits.json');
    const clock = { now: T0 };
    const options = { now: () => clock.now, sweepIntervalMs: 60_000, file, saveIntervalMs: 60_000, logger: silent };
    const first = await memoryLimitStore(options);
    await first.check([item({ bucket: 'budget', amount: 30, limit: 100, expireAt: 0 })], 'a', clock.now, clock.now + TTL);
    await first.check([item({ bucket: 'budget', amount: 50, limit: 100, reserve: true, expireAt: 0 })], 'b', clock.now, clock.now + TTL);
    await first.check([item({ bucket: 'gone', amount: 1, limit: 100, expireAt: T0 + 1000 })], 'c', clock.now, clock.now + TTL);
    await first.close();
    clock.now = T0 + 5000;
    const second = await memoryLimitStore(options);
    expect(await second.read('budget', clock.now)).toEqual([{ group: '*', used: 30, reserved: 0 }]);
    // A window that ended while the gateway was down is not brought back.
    expect(await second.read('gone', clock.now)).toEqual([]);
    await second.close();
  });
});
