import calculateSlot from 'cluster-key-slot';
import type { Cluster, Redis } from 'ioredis';
import type { PluginAPI } from '../core/index.js';

/**
 * The shared Redis connection the `redis` store plugin registers (`api.stores.get('redis')`), for the plugins
 * that keep shared state (limits, breaker, routing, cache). One node, a Sentinel-managed primary, or a Redis
 * Cluster (docs/operations.md, "Topology").
 */
export interface RedisConnection {
  /**
   * The client: an ioredis `Redis` (one node, or the primary Sentinel names) or `Cluster`. The commands the
   * gateway uses (single-key commands, scripts, pipelines of one slot) behave the same on both.
   */
  client: Redis;
  /** The prefix of every key this gateway writes. */
  prefix: string;
  /** Whether `client` is a Redis Cluster (keys one script or pipeline touches must share a slot). */
  cluster: boolean;
  /**
   * `<prefix><group>`: the start of the keys one script or pipeline touches together. On a cluster the group
   * is a hash tag (`{limits}`), so those keys share a slot; elsewhere it is the group as it is, so a
   * deployment's keys keep their names (nothing to migrate when a single node is kept).
   */
  keyGroup(group: string): string;
  /**
   * Replicas a write that must survive a failover (a limit count) waits for (`WAIT replicas timeoutMs`), or null
   * for none (one node: a lost node loses everything anyway).
   */
  replicaWait: { replicas: number; timeoutMs: number } | null;
  /**
   * Whether the topology still names `node` its primary, asked only when a primary reports no replica at all
   * (see `waitForReplicas`). Behind Sentinel: a primary cut off from its replica because the Sentinels promoted
   * that replica reports no replica either, and what it acknowledges then is lost when it is made a replica.
   * Absent: trusted (a cluster's primary cut off from the majority stops taking writes on its own).
   */
  confirmPrimary?: (node: Redis) => Promise<boolean>;
}

/** Builds the connection entry for a client. */
export function redisConnection(
  client: Redis | Cluster,
  prefix: string,
  cluster: boolean,
  replicaWait: RedisConnection['replicaWait'] = null,
  confirmPrimary?: RedisConnection['confirmPrimary'],
): RedisConnection {
  return {
    replicaWait,
    ...(confirmPrimary === undefined ? {} : { confirmPrimary }),
    // One type for both: every command the gateway sends is one both clients take (see above).
    client: client as Redis,
    prefix,
    cluster,
    keyGroup: cluster ? (group) => `${prefix}{${group}}` : (group) => `${prefix}${group}`,
  };
}

/**
 * The Redis connection registered as store `name`, for a plugin that needs it: a clear error naming what to
 * load when it is missing.
 */
export function redisConnectionOf(api: PluginAPI, name: string, plugin: string): RedisConnection {
  const entry = api.stores.get(name) as Partial<RedisConnection> | undefined;
  if (entry === undefined || typeof entry.client?.defineCommand !== 'function' || typeof entry.keyGroup !== 'function') {
    throw new Error(`${plugin}: store "redis" needs the redis store plugin ("${name}"), listed before it (REDIS_URL)`);
  }
  return entry as RedisConnection;
}

/**
 * Waits until the writes this connection made to `key`'s node are on `replicaWait.replicas` replicas, at most
 * `replicaWait.timeoutMs` (`WAIT`): the number of replicas that have them. `WAIT` counts the writes of the
 * connection it is sent on, so on a cluster it goes to the primary that holds the key's slot (the client has one
 * connection per node). Null when the connection waits for no replica.
 */
export async function waitForReplicas(connection: RedisConnection, key: string): Promise<number | null> {
  const wait = connection.replicaWait;
  if (wait === null) return null;
  let node: Redis = connection.client;
  if (connection.cluster) {
    const cluster = connection.client as unknown as Cluster;
    const owner = cluster.slots[calculateSlot(key)]?.[0];
    const found = owner === undefined ? undefined : cluster.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === owner);
    if (found === undefined) return 0;
    node = found;
  }
  // Bounded here too: a WAIT sent to a node that is going away must not hold the request for the command timeout.
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<number>((resolve) => (timer = setTimeout(() => resolve(0), wait.timeoutMs + 200)));
  try {
    const acked = await Promise.race([node.call('WAIT', wait.replicas, wait.timeoutMs).then(Number), late]);
    if (acked >= wait.replicas) return acked;
    // A primary with no replica at all (its replica is resyncing, or was lost) cannot lose a count to a promotion:
    // there is nothing to promote. Waiting would only hold every request until one is back. Unless the topology
    // names another primary: then this one was cut off and replaced, and its counts go when it is made a replica.
    const role = (await node.call('ROLE')) as unknown[];
    const alone = role[0] === 'master' && Array.isArray(role[2]) && role[2].length === 0;
    if (!alone) return acked;
    return connection.confirmPrimary === undefined || (await connection.confirmPrimary(node)) ? wait.replicas : acked;
  } finally {
    clearTimeout(timer);
  }
}
