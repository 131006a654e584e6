import type { RedisConnection } from '../../sdk/index.js';
import type { Headroom } from './headers.js';

/** What the gateway knows of one target (provider, host, model, credentials): its headroom and its speed. */
export interface TargetState extends Headroom {
  /** Decaying average of the time to the answer's headers, ms. */
  latencyMs?: number;
  /** Decaying average of the time to a stream's first chunk, ms. */
  ttftMs?: number;
}

/** Weight of a new sample in the decaying averages: about the last ten calls count. */
export const EWMA_ALPHA = 0.2;
/** State unused this long is forgotten (a target no config names any more). */
export const STATE_TTL_MS = 60 * 60 * 1000;

/**
 * Where target state lives: this process (memory) or Redis, shared by every instance. Reads and writes
 * are one round trip each; a store that cannot be reached is treated as knowing nothing (routing falls
 * back to the strategy's own rule), never as a failure of the request.
 */
export interface RouteStateStore {
  read(keys: readonly string[]): Promise<Array<TargetState | null>>;
  /** Headroom from an answer's headers replaces what was known; latency samples fold into the averages. */
  record(key: string, headroom: Headroom | null, latencyMs: number | null, ttftMs: number | null): Promise<void>;
  /** A request sent to the target: its estimate comes off the headroom known until the next answer says better. */
  take(key: string, tokens: number): Promise<void>;
}

const fold = (old: number | undefined, sample: number) => (old === undefined ? sample : old + EWMA_ALPHA * (sample - old));

export function memoryRouteState(now: () => number, limit = 10_000): RouteStateStore {
  const states = new Map<string, TargetState & { touched: number }>();
  const get = (key: string) => {
    let s = states.get(key);
    if (s === undefined) {
      if (states.size >= limit) states.delete(states.keys().next().value!);
      s = { touched: now() };
      states.set(key, s);
    }
    s.touched = now();
    return s;
  };
  return {
    async read(keys) {
      const t = now();
      return keys.map((k) => {
        const s = states.get(k);
        return s === undefined || t - s.touched > STATE_TTL_MS ? null : s;
      });
    },
    async record(key, headroom, latencyMs, ttftMs) {
      const s = get(key);
      if (headroom !== null) Object.assign(s, headroom);
      if (latencyMs !== null) s.latencyMs = fold(s.latencyMs, latencyMs);
      if (ttftMs !== null) s.ttftMs = fold(s.ttftMs, ttftMs);
    },
    async take(key, tokens) {
      const s = states.get(key);
      if (s === undefined) return;
      if (s.requestsLeft !== undefined) s.requestsLeft = Math.max(0, s.requestsLeft - 1);
      if (s.tokensLeft !== undefined) s.tokensLeft = Math.max(0, s.tokensLeft - tokens);
    },
  };
}

const FIELDS = ['requestsLeft', 'requestsResetAt', 'tokensLeft', 'tokensResetAt', 'retryAt', 'latencyMs', 'ttftMs'] as const;

// Atomic on the server: instances folding samples at once each count.
const RECORD = `
for i = 1, #ARGV - 3, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
local alpha = ${EWMA_ALPHA}
for j, name in ipairs({'latencyMs', 'ttftMs'}) do
  local sample = tonumber(ARGV[#ARGV - 3 + j])
  if sample and sample >= 0 then
    local old = tonumber(redis.call('HGET', KEYS[1], name))
    redis.call('HSET', KEYS[1], name, old and (old + alpha * (sample - old)) or sample)
  end
end
redis.call('PEXPIRE', KEYS[1], ARGV[#ARGV])
return 1
`;

const TAKE = `
if redis.call('HEXISTS', KEYS[1], 'requestsLeft') == 1 then
  local left = tonumber(redis.call('HGET', KEYS[1], 'requestsLeft')) - 1
  redis.call('HSET', KEYS[1], 'requestsLeft', left > 0 and left or 0)
end
if redis.call('HEXISTS', KEYS[1], 'tokensLeft') == 1 then
  local left = tonumber(redis.call('HGET', KEYS[1], 'tokensLeft')) - tonumber(ARGV[1])
  redis.call('HSET', KEYS[1], 'tokensLeft', left > 0 and left or 0)
end
return 1
`;

type RouteCommands = {
  gatewayRouteRecord(numKeys: number, ...args: Array<string | number>): Promise<number>;
  gatewayRouteTake(numKeys: number, ...args: Array<string | number>): Promise<number>;
};

/**
 * Target state in Redis: one hash per target; each record and take one Lua script (`defineCommand`: EVALSHA, not
 * the script's text each call). On a Redis Cluster the keys share the hash tag `{routing}`, so a read of several
 * targets stays one pipeline to one primary.
 */
export function redisRouteState(connection: RedisConnection): RouteStateStore {
  const client = connection.client;
  const group = connection.keyGroup('routing');
  client.defineCommand('gatewayRouteRecord', { lua: RECORD });
  client.defineCommand('gatewayRouteTake', { lua: TAKE });
  const commands = client as unknown as RouteCommands;
  const k = (key: string) => `${group}:${key}`;
  return {
    async read(keys) {
      if (keys.length === 0) return [];
      const pipeline = client.pipeline();
      for (const key of keys) pipeline.hmget(k(key), ...FIELDS);
      const results = (await pipeline.exec()) ?? [];
      return results.map(([err, values]) => {
        if (err !== null || !Array.isArray(values) || values.every((v) => v === null)) return null;
        const s: TargetState = {};
        FIELDS.forEach((f, i) => {
          const v = (values as Array<string | null>)[i];
          if (v !== null && v !== undefined) s[f] = Number(v);
        });
        return s;
      });
    },
    async record(key, headroom, latencyMs, ttftMs) {
      const args: Array<string | number> = [];
      if (headroom !== null) for (const f of FIELDS) if (headroom[f as keyof Headroom] !== undefined) args.push(f, headroom[f as keyof Headroom]!);
      args.push(latencyMs ?? -1, ttftMs ?? -1, STATE_TTL_MS);
      await commands.gatewayRouteRecord(1, k(key), ...args);
    },
    async take(key, tokens) {
      await commands.gatewayRouteTake(1, k(key), tokens);
    },
  };
}
