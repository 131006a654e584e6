import { waitForReplicas, type RedisConnection } from '../../sdk/index.js';
import type { CheckItem, CheckResult, GroupCount, Hold, LimitStore } from './store.js';

// Releases a bucket's expired holds: each member is `<request id>|<amount>|<group>`, scored by when it expires.
const RELEASE = `
local function release(h, z, now)
  local gone = redis.call('ZRANGEBYSCORE', z, '-inf', now)
  if #gone == 0 then return end
  for _, m in ipairs(gone) do
    local a = string.find(m, '|', 1, true)
    local b = string.find(m, '|', a + 1, true)
    local f = 'r:' .. string.sub(m, b + 1)
    if redis.call('HINCRBY', h, f, -tonumber(string.sub(m, a + 1, b - 1))) <= 0 then redis.call('HDEL', h, f) end
  end
  redis.call('ZREMRANGEBYSCORE', z, '-inf', now)
end
`;

/*
 * One round trip, atomic: release expired holds, check every item, and only if all pass count or hold each.
 * KEYS: per item, its bucket's hash (fields u:<group>, r:<group>) and its holds' sorted set.
 * ARGV: now, hold expiry, request id, then per item: group, amount, limit, reserve (1/0), expireAt (0: never).
 * Returns {denied index (1-based, 0 when passed), used1, reserved1, used2, reserved2, …}.
 *
 * With `once` (a connection that waits for replicas): KEYS ends with a marker of the request and ARGV with its
 * TTL. A request whose marker exists was counted already: its check is answered as passed, counting nothing. So
 * a check sent again after its count could not be confirmed on a replica (the primary died) counts once: again
 * if the count was lost with the primary, not again if it survived.
 */
function checkScript(once: boolean): string {
  return `${RELEASE}
local now = tonumber(ARGV[1])
local n = ${once ? '(#KEYS - 1) / 2' : '#KEYS / 2'}
local used, reserved = {}, {}
local denied = 0
${
  once
    ? `if redis.call('EXISTS', KEYS[#KEYS]) == 1 then
  local out = {0}
  for i = 1, n do
    local h, o = KEYS[2 * i - 1], 3 + (i - 1) * 5
    out[#out + 1] = tonumber(redis.call('HGET', h, 'u:' .. ARGV[o + 1]) or 0)
    out[#out + 1] = tonumber(redis.call('HGET', h, 'r:' .. ARGV[o + 1]) or 0)
  end
  return out
end`
    : ''
}
for i = 1, n do
  local h, z, o = KEYS[2 * i - 1], KEYS[2 * i], 3 + (i - 1) * 5
  release(h, z, now)
  used[i] = tonumber(redis.call('HGET', h, 'u:' .. ARGV[o + 1]) or 0)
  reserved[i] = tonumber(redis.call('HGET', h, 'r:' .. ARGV[o + 1]) or 0)
  if denied == 0 and used[i] + reserved[i] + math.max(tonumber(ARGV[o + 2]), 1) > tonumber(ARGV[o + 3]) then denied = i end
end
if denied == 0 then
  for i = 1, n do
    local h, z, o = KEYS[2 * i - 1], KEYS[2 * i], 3 + (i - 1) * 5
    local g, amount, expireAt = ARGV[o + 1], tonumber(ARGV[o + 2]), tonumber(ARGV[o + 5])
    if amount > 0 then
      if ARGV[o + 4] == '1' then
        reserved[i] = redis.call('HINCRBY', h, 'r:' .. g, amount)
        redis.call('ZADD', z, ARGV[2], ARGV[3] .. '|' .. ARGV[o + 2] .. '|' .. g)
        if expireAt > 0 then redis.call('PEXPIRE', z, math.max(expireAt - now, 1)) else redis.call('PERSIST', z) end
      else
        used[i] = redis.call('HINCRBY', h, 'u:' .. g, amount)
      end
      -- A budget that no longer resets keeps its counts: a TTL set under its former rule is dropped.
      if expireAt > 0 then redis.call('PEXPIRE', h, math.max(expireAt - now, 1)) else redis.call('PERSIST', h) end
    end
  end
  ${once ? "redis.call('SET', KEYS[#KEYS], '1', 'PX', ARGV[#ARGV])" : ''}
end
local out = {denied}
for i = 1, n do
  out[#out + 1] = used[i]
  out[#out + 1] = reserved[i]
end
return out
`;
}

/**
 * How long a check is sent again while a replica does not confirm it (or a failover refuses it), and how often:
 * two failover waits, so a check that began as the primary died still finds the promoted replica.
 */
const CONFIRM_MS = 10_000;
const CONFIRM_RETRY_MS = 200;

/** How long a request's marker stays (`checkScript(true)`): longer than any failover a check waits out. */
const MARKER_TTL_MS = 60_000;

/* What CHECK would answer, counting nothing. KEYS and ARGV as CHECK's. Returns the denied index (1-based, 0: all pass). */
const PEEK = `${RELEASE}
local now = tonumber(ARGV[1])
for i = 1, #KEYS / 2 do
  local h, z, o = KEYS[2 * i - 1], KEYS[2 * i], 3 + (i - 1) * 5
  release(h, z, now)
  local used = tonumber(redis.call('HGET', h, 'u:' .. ARGV[o + 1]) or 0)
  local reserved = tonumber(redis.call('HGET', h, 'r:' .. ARGV[o + 1]) or 0)
  if used + reserved + math.max(tonumber(ARGV[o + 2]), 1) > tonumber(ARGV[o + 3]) then return i end
end
return 0
`;

/*
 * Replaces holds by real amounts. KEYS: per hold, hash and sorted set. ARGV: now, then per hold: member, group, held, actual, expireAt.
 * A hold already released (it expired) is not released twice; the real amount is added either way.
 */
const SETTLE = `
local now = tonumber(ARGV[1])
for i = 1, #KEYS / 2 do
  local h, z, o = KEYS[2 * i - 1], KEYS[2 * i], 1 + (i - 1) * 5
  local g = ARGV[o + 2]
  if redis.call('ZREM', z, ARGV[o + 1]) == 1 then
    if redis.call('HINCRBY', h, 'r:' .. g, -tonumber(ARGV[o + 3])) <= 0 then redis.call('HDEL', h, 'r:' .. g) end
  end
  local actual = tonumber(ARGV[o + 4])
  if actual > 0 then
    redis.call('HINCRBY', h, 'u:' .. g, actual)
    local expireAt = tonumber(ARGV[o + 5])
    if expireAt > 0 then redis.call('PEXPIRE', h, math.max(expireAt - now, 1)) end
  end
end
return 1
`;

const READ = `${RELEASE}
release(KEYS[1], KEYS[2], tonumber(ARGV[1]))
return redis.call('HGETALL', KEYS[1])
`;

type LimitCommands = {
  gatewayLimitCheck(numKeys: number, ...args: (string | number)[]): Promise<number[]>;
  gatewayLimitPeek(numKeys: number, ...args: (string | number)[]): Promise<number>;
  gatewayLimitSettle(numKeys: number, ...args: (string | number)[]): Promise<number>;
  gatewayLimitRead(numKeys: number, ...args: (string | number)[]): Promise<string[]>;
};

/**
 * Counters in Redis, shared by every instance with the same connection prefix.
 * Layout (see docs/limits.md): `<prefix>limits:<bucket>` is a hash of
 * `u:<group>` (settled) and `r:<group>` (held) counts, and
 * `<prefix>limits:<bucket>:z` a sorted set of the holds, scored by when they
 * expire. Both expire at the window's end plus the hold TTL, set as a TTL
 * (`PEXPIRE`) from the gateway's clock, so a skew between it and Redis's
 * clock moves no expiry.
 * Each check and each settle is one Lua script (`defineCommand`: EVALSHA). On a Redis Cluster every limit key is
 * under the hash tag `{limits}` (`<prefix>{limits}:<bucket>`): a check touches the buckets of every policy that
 * matches, atomically, so they must share a slot (all limits live on one primary; see docs/operations.md).
 */
export function redisLimitStore(connection: RedisConnection, onUnreplicated: (acked: number) => void = () => undefined): LimitStore {
  const client = connection.client;
  const group = connection.keyGroup('limits');
  const wait = connection.replicaWait;
  /**
   * Runs one limits script; with `replicaWait`, then `WAIT` on the same primary, so the counts it wrote are on a
   * replica before the caller goes on: a replica promoted after the primary died has them (docs/operations.md).
   * Not one pipeline: a cluster client follows a failover's redirections for a command alone, not for a pipeline
   * whose commands answer differently.
   */
  const run = async <T>(command: keyof LimitCommands, numKeys: number, args: (string | number)[]): Promise<T> => {
    const value = await (commands[command] as (n: number, ...a: (string | number)[]) => Promise<T>)(numKeys, ...args);
    if (wait !== null) {
      // The script's answer stands either way (its counts are on the primary); a wait that fails is reported as none acked.
      const acked = await waitForReplicas(connection, String(args[0])).catch(() => 0);
      if (acked !== null && acked < wait.replicas) onUnreplicated(acked);
    }
    return value;
  };
  /**
   * A check whose counts are on a replica before it answers: sent again (it counts once, see `checkScript`)
   * while a replica cannot confirm it, as after a primary died with it, for up to the connection's failover wait.
   */
  const confirmed = async (keys: string[], args: (string | number)[]): Promise<number[]> => {
    const until = Date.now() + CONFIRM_MS;
    for (;;) {
      let out: number[];
      try {
        out = await (commands.gatewayLimitCheck as (n: number, ...a: (string | number)[]) => Promise<number[]>)(keys.length, ...keys, ...args);
      } catch (err) {
        // A failover in progress (redirections, a closed connection): sent again, counting once, until it settles.
        if (Date.now() >= until) throw err;
        await new Promise((r) => setTimeout(r, CONFIRM_RETRY_MS));
        continue;
      }
      const acked = await waitForReplicas(connection, keys[0]!).catch(() => 0);
      if (acked === null || acked >= wait!.replicas) return out;
      if (Date.now() >= until) {
        onUnreplicated(acked ?? 0);
        return out;
      }
      await new Promise((r) => setTimeout(r, CONFIRM_RETRY_MS));
    }
  };

  client.defineCommand('gatewayLimitCheck', { lua: checkScript(connection.replicaWait !== null) });
  client.defineCommand('gatewayLimitPeek', { lua: PEEK });
  client.defineCommand('gatewayLimitSettle', { lua: SETTLE });
  client.defineCommand('gatewayLimitRead', { lua: READ });
  const commands = client as unknown as LimitCommands;
  const hash = (bucket: string) => `${group}:${bucket}`;
  const holds = (bucket: string) => `${group}:${bucket}:z`;
  const checkArgs = (items: readonly CheckItem[], head: (string | number)[]) => {
    const keys: string[] = [];
    const args = head;
    for (const item of items) {
      keys.push(hash(item.bucket), holds(item.bucket));
      args.push(item.group, item.amount, item.limit, item.reserve ? 1 : 0, item.expireAt);
    }
    return { keys, args };
  };
  return {
    async check(items: readonly CheckItem[], requestId: string, now: number, holdUntil: number): Promise<CheckResult> {
      const { keys, args } = checkArgs(items, [now, holdUntil, requestId]);
      if (wait !== null) {
        keys.push(`${group}:once:${requestId}`);
        args.push(MARKER_TTL_MS);
      }
      const out = wait === null ? await run<number[]>('gatewayLimitCheck', keys.length, [...keys, ...args]) : await confirmed(keys, args);
      const used: number[] = [];
      const reserved: number[] = [];
      for (let i = 0; i < items.length; i++) {
        used.push(Number(out[1 + 2 * i]));
        reserved.push(Number(out[2 + 2 * i]));
      }
      return { denied: Number(out[0]) - 1, used, reserved };
    },

    async peek(items: readonly CheckItem[], now: number): Promise<number> {
      const { keys, args } = checkArgs(items, [now, 0, '']);
      return Number(await commands.gatewayLimitPeek(keys.length, ...keys, ...args)) - 1;
    },

    async settle(list: readonly Hold[], actual: readonly number[], now: number): Promise<void> {
      const keys: string[] = [];
      const args: (string | number)[] = [now];
      for (let i = 0; i < list.length; i++) {
        const h = list[i]!;
        keys.push(hash(h.bucket), holds(h.bucket));
        args.push(h.member, h.group, h.amount, actual[i]!, h.expireAt);
      }
      await run<number>('gatewayLimitSettle', keys.length, [...keys, ...args]);
    },

    async read(bucket: string, now: number): Promise<GroupCount[]> {
      const flat = await commands.gatewayLimitRead(2, hash(bucket), holds(bucket), now);
      const groups = new Map<string, GroupCount>();
      for (let i = 0; i < flat.length; i += 2) {
        const field = flat[i]!;
        const group = field.slice(2);
        const entry = groups.get(group) ?? { group, used: 0, reserved: 0 };
        if (field.startsWith('u:')) entry.used = Number(flat[i + 1]);
        else entry.reserved = Number(flat[i + 1]);
        groups.set(group, entry);
      }
      return [...groups.values()];
    },

    // The connection belongs to the redis store plugin, which closes it.
    async close(): Promise<void> {},
  };
}
