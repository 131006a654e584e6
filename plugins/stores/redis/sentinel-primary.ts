import { Redis } from 'ioredis';

/** What the Sentinels are asked for: whether a node is still the primary they name. */
export interface SentinelPrimaryCheck {
  confirm(node: Redis): Promise<boolean>;
  close(): Promise<void>;
}

const ASK_TIMEOUT_MS = 500;
const RUN_ID = /run_id:(\w+)/;

/**
 * Asks the Sentinels, one after the other until one answers, whether `node` is the primary they name `name`,
 * by run id (`INFO server` on the node, `SENTINEL MASTER` on a Sentinel), so no address has to match one the
 * Sentinels announce. Asked only when a primary reports no replica (see the SDK's `waitForReplicas`), so the
 * connections to the Sentinels open on first use and stay open.
 */
export function sentinelPrimaryCheck(sentinels: readonly { host: string; port: number }[], name: string): SentinelPrimaryCheck {
  let clients: Redis[] | null = null;
  const open = () =>
    (clients ??= sentinels.map((s) => {
      const client = new Redis({ host: s.host, port: s.port, enableOfflineQueue: true, maxRetriesPerRequest: 1, connectTimeout: ASK_TIMEOUT_MS, commandTimeout: ASK_TIMEOUT_MS });
      client.on('error', () => undefined); // a Sentinel that is down is skipped; ioredis keeps reconnecting
      return client;
    }));
  return {
    async confirm(node) {
      const info = String(await node.call('INFO', 'server'));
      const runId = RUN_ID.exec(info)?.[1];
      if (runId === undefined) return false;
      for (const sentinel of open()) {
        try {
          const fields = (await sentinel.call('SENTINEL', 'MASTER', name)) as string[];
          const at = fields.indexOf('runid');
          return at !== -1 && fields[at + 1] === runId;
        } catch {
          // This Sentinel is down or slow: the next one is asked.
        }
      }
      // No Sentinel answered: nothing says this node was replaced, and one unreachable set of Sentinels must not
      // hold every request; the count stands as it did before the Sentinels were asked.
      return true;
    },
    async close() {
      // Not QUIT: a Sentinel of Redis 7.0 does not know it.
      for (const c of clients ?? []) c.disconnect();
    },
  };
}
