import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { sentinelPrimaryCheck } from '../../../../plugins/stores/redis/sentinel-primary.js';
import { redisConnection, waitForReplicas } from '../../../../sdk/index.js';
import { requireRedisBinaries, startRedisSentinel, type RedisSentinelHandle } from '../../../helpers/redis-topology.js';

/*
 * A primary the Sentinels replaced but that still takes writes (it was cut off from them, or, as here, refuses to
 * be made a replica) reports no replica, as a primary whose replica is merely resyncing does. What it
 * acknowledges then is lost when it is made a replica, so a count written there must not count as safe.
 */
describe('a primary with no replica: trusted only while the Sentinels still name it', () => {
  const available = requireRedisBinaries();
  let sentinel: RedisSentinelHandle;
  let sentinelPorts: number[];

  beforeAll(async () => {
    if (!available) return;
    sentinel = await startRedisSentinel('gwcheck');
    sentinelPorts = sentinel.url.replace(/^redis\+sentinel:\/\//, '').split('/')[0]!.split(',').map((a) => Number(a.split(':')[1]));
  }, 60_000);
  afterAll(async () => {
    await sentinel?.close();
  });

  test('the named primary is confirmed; the one the Sentinels replaced is not, and a count there waits', async (ctx) => {
    if (!available) ctx.skip();
    const check = sentinelPrimaryCheck(sentinelPorts.map((port) => ({ host: '127.0.0.1', port })), 'gwcheck');
    const old = sentinel.primary();
    // The gateway's own user, so the Sentinels' default user can be barred from demoting the primary below.
    const admin = new Redis({ host: '127.0.0.1', port: old, lazyConnect: true });
    await admin.call('ACL', 'SETUSER', 'gw', 'on', '>gw-secret', '~*', '&*', '+@all');
    const node = new Redis({ host: '127.0.0.1', port: old, username: 'gw', password: 'gw-secret' });
    try {
      expect(await check.confirm(node)).toBe(true);
      // A generous WAIT: under a loaded machine a replica's acknowledgement can take longer than the gateway's 100 ms.
      const connection = redisConnection(node, 'sp:', false, { replicas: 1, timeoutMs: 2000 }, check.confirm);
      await node.set('sp:k', '1');
      expect(await waitForReplicas(connection, 'sp:k')).toBe(1);

      // The Sentinels promote the replica; the old primary refuses their REPLICAOF and stays a primary, alone.
      await admin.call('ACL', 'SETUSER', 'default', '-replicaof', '-slaveof');
      const asked = new Redis({ host: '127.0.0.1', port: sentinelPorts[0]! });
      // A Sentinel whose last word from the replica is too old refuses (NOGOODSLAVE) until it hears from it again.
      await until('the Sentinel to accept the failover', () =>
        asked.call('SENTINEL', 'FAILOVER', 'gwcheck').then(
          () => true,
          (err: Error) => {
            if (!/NOGOODSLAVE/.test(err.message)) throw err;
            return false;
          },
        ),
      );
      asked.disconnect();
      await until('the Sentinels to promote the replica', async () => sentinel.primary() !== old && (await check.confirm(node)) === false);
      const role = (await node.call('ROLE')) as unknown[];
      expect(role[0]).toBe('master');
      expect(role[2]).toEqual([]);

      // Before the Sentinels were asked, this count counted as safe (no replica, nothing to promote); it is not.
      await node.set('sp:k', '2');
      expect(await waitForReplicas(connection, 'sp:k')).toBe(0);
      // Without the Sentinels to ask, a primary alone is trusted, as for a cluster.
      expect(await waitForReplicas(redisConnection(node, 'sp:', false, { replicas: 1, timeoutMs: 2000 }), 'sp:k')).toBe(1);
    } finally {
      await check.close();
      node.disconnect();
      admin.disconnect();
    }
  }, 60_000);
});

async function until(what: string, ok: () => Promise<boolean>, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
