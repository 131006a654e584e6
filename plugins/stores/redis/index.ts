import { Cluster, Redis, type ClusterNode, type RedisOptions } from 'ioredis';
import * as v from 'valibot';
import { type GatewayPlugin, parseOptions, redisConnection } from '../../../sdk/index.js';
import { sentinelPrimaryCheck } from './sentinel-primary.js';
import { parseRedisUrl, type RedisTopology } from './url.js';

export const PLUGIN_NAME = 'redis';

const Node = v.strictObject({ host: v.pipe(v.string(), v.minLength(1)), port: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(65535)) });

const OptionsSchema = v.pipe(
  v.strictObject({
    /**
     * Redis URL: `redis://host:6379` (one node), `redis+cluster://host1:7000,host2:7001` (a Redis Cluster: seed
     * nodes), `redis+sentinel://host1:26379,host2:26379/mymaster` (the primary Sentinel names). `rediss…` for TLS.
     */
    url: v.optional(v.pipe(v.string(), v.minLength(1))),
    /** A Redis Cluster's seed nodes (instead of a `redis+cluster://` URL). */
    cluster: v.optional(v.pipe(v.array(Node), v.minLength(1))),
    /** Sentinels (instead of a `redis+sentinel://` URL), with the primary's name in `name`. */
    sentinels: v.optional(v.pipe(v.array(Node), v.minLength(1))),
    /** The primary's name the Sentinels monitor. */
    name: v.optional(v.pipe(v.string(), v.minLength(1))),
    /** Prefix of every key this gateway writes; give each deployment (and each test) its own. */
    keyPrefix: v.optional(v.string(), 'gateway:'),
    /**
     * A command without an answer after this many ms fails, so a Redis that hangs (not just one that is down) never
     * holds a request. Default 1000 for one node; with Sentinel or a cluster, `failoverWaitMs`.
     */
    commandTimeoutMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
    /**
     * With Sentinel or a cluster: how long a command waits for a failover to finish (a replica promoted, the client
     * moved to it) before it fails. Default 5000: a failover takes 1–3 s after the node timeout.
     */
    failoverWaitMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1)), 5000),
    /**
     * Replicas that must hold a limit count before the request goes on (`WAIT`), so a promoted replica never lacks
     * it. Default 1 with Sentinel or a cluster, 0 (none) for one node.
     */
    waitReplicas: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0))),
    /** The longest a count waits for those replicas; past it the request goes on and a warning is logged. Default 100. */
    waitTimeoutMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1)), 100),
  }),
  v.check((o) => [o.url, o.cluster, o.sentinels].filter((x) => x !== undefined).length === 1, 'needs exactly one of url (set REDIS_URL), cluster or sentinels'),
  v.check((o) => o.sentinels === undefined || o.name !== undefined, 'sentinels needs name (the primary the Sentinels monitor)'),
  // A brace in the prefix would be the hash tag of every key: they would all land on one slot, whatever the key.
  v.check((o) => !/[{}]/.test(o.keyPrefix), 'keyPrefix may not contain { or } (Redis Cluster reads them as a hash tag)'),
);

export type RedisStoreOptions = v.InferInput<typeof OptionsSchema>;

/** The topology the options name. */
function topologyOf(opts: v.InferOutput<typeof OptionsSchema>): RedisTopology {
  if (opts.cluster !== undefined) return { kind: 'cluster', nodes: opts.cluster, auth: {}, tls: false };
  if (opts.sentinels !== undefined) return { kind: 'sentinel', nodes: opts.sentinels, name: opts.name!, auth: {}, tls: false };
  return parseRedisUrl(opts.url!);
}

/**
 * A shared Redis connection, registered as store `redis` for the plugins that keep shared state (breaker,
 * cache, rate limits, routing): one node, a primary found through Sentinel, or a Redis Cluster (docs/operations.md,
 * "Topology"). Commands fail fast while Redis is down (no offline queue) or hangs (`commandTimeoutMs`), so callers
 * can degrade instead of queueing requests behind it; ioredis follows a failover (Sentinel's new primary, a
 * cluster's promoted replica) on its own.
 */
export function redisStore(options: RedisStoreOptions): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, options);
  const topology = topologyOf(opts);
  return {
    name: PLUGIN_NAME,
    state: [],
    apply(api) {
      const single = topology.kind === 'single';
      // One node fails fast (there is nothing to wait for). Behind Sentinel or in a cluster, a command waits for a
      // failover (queued while the client finds the new primary), bounded by the command timeout.
      const common: RedisOptions = {
        lazyConnect: true,
        enableOfflineQueue: !single,
        // Behind Sentinel, a command cut off by the primary's death is sent again to the new one (bounded by the timeout).
        maxRetriesPerRequest: single ? 1 : null,
        connectTimeout: 2000,
        commandTimeout: opts.commandTimeoutMs ?? (single ? 1000 : opts.failoverWaitMs),
        ...topology.auth,
        ...(topology.tls ? { tls: {} } : {}),
      };
      let client: Redis | Cluster;
      if (topology.kind === 'cluster') {
        const nodes: ClusterNode[] = topology.nodes.map((n) => ({ host: n.host, port: n.port }));
        // Writes and reads go to the primaries: a replica's counts may lag.
        client = new Cluster(nodes, { lazyConnect: true, enableOfflineQueue: true, scaleReads: 'master', redisOptions: common, slotsRefreshTimeout: 2000, retryDelayOnFailover: 200, retryDelayOnClusterDown: 200, retryDelayOnTryAgain: 200, retryDelayOnMoved: 50, maxRedirections: 64 });
      } else if (topology.kind === 'sentinel') {
        client = new Redis({ ...common, sentinels: topology.nodes.map((n) => ({ host: n.host, port: n.port })), name: topology.name, sentinelCommandTimeout: 1000, failoverDetector: true });
      } else {
        client = new Redis({ ...common, host: topology.nodes[0]!.host, port: topology.nodes[0]!.port, db: topology.db });
      }
      client.on('error', () => undefined); // reported by the callers that degrade; ioredis keeps reconnecting
      const waitReplicas = opts.waitReplicas ?? (single ? 0 : 1);
      const sentinels = topology.kind === 'sentinel' ? sentinelPrimaryCheck(topology.nodes, topology.name!) : null;
      api.stores.add(
        PLUGIN_NAME,
        redisConnection(client, opts.keyPrefix, topology.kind === 'cluster', waitReplicas > 0 ? { replicas: waitReplicas, timeoutMs: opts.waitTimeoutMs } : null, sentinels?.confirm),
      );
      api.onReady(async () => {
        try {
          await client.connect();
        } catch (err) {
          api.logger.warn({ err: (err as Error).message, topology: topology.kind }, 'redis is unreachable at start; shared state degrades until it is back');
        }
      });
      api.onClose(async () => {
        await client.quit().catch(() => client.disconnect());
        await sentinels?.close();
      });
    },
  };
}

export default redisStore;
