import type { RedisConnection } from '../../sdk/index.js';
import { TRIAL_TTL_MS, type Admission, type BreakerState } from './state.js';

/** Keys live this long past their last write, so abandoned targets do not accumulate. */
const KEY_TTL_MS = 24 * 60 * 60 * 1000;

// Atomic on the server, so two gateway instances never both take the half-open trial.
const ADMIT = `
local f = redis.call('HMGET', KEYS[1], 'failures', 'opened_at')
local opened = tonumber(f[2]) or 0
if opened == 0 then return {0, tonumber(f[1]) or 0} end
local now = tonumber(ARGV[1])
local left = tonumber(ARGV[2]) - (now - opened)
if left > 0 then return {1, left} end
if redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[3]) then return {2, 0} end
return {1, 1000}
`;

const FAILURE = `
if ARGV[3] == '1' then
  redis.call('HSET', KEYS[1], 'opened_at', ARGV[1])
  redis.call('DEL', KEYS[2])
else
  local n = redis.call('HINCRBY', KEYS[1], 'failures', 1)
  local opened = tonumber(redis.call('HGET', KEYS[1], 'opened_at')) or 0
  if n >= tonumber(ARGV[2]) and opened == 0 then redis.call('HSET', KEYS[1], 'opened_at', ARGV[1]) end
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
`;

/**
 * Breaker state in Redis, shared by every gateway instance that uses the same prefix. A target's two keys (its
 * state and its trial) are touched by one script: on a Redis Cluster they share the hash tag `{breaker:<target>}`.
 */
export function redisBreakerState(connection: RedisConnection): BreakerState {
  const client = connection.client;
  const keys = (key: string) => {
    const base = connection.keyGroup(`breaker:${key}`);
    return [base, `${base}:trial`] as const;
  };
  return {
    async admit(key, cooldownMs, now): Promise<Admission> {
      const [k, trial] = keys(key);
      const [code, value] = (await client.eval(ADMIT, 2, k, trial, now, cooldownMs, TRIAL_TTL_MS)) as [number, number];
      if (code === 0) return { state: 'closed', failures: value };
      if (code === 2) return { state: 'trial' };
      return { state: 'open', retryInMs: value };
    },
    async failure(key, threshold, now, trial) {
      const [k, t] = keys(key);
      await client.eval(FAILURE, 2, k, t, now, threshold, trial ? '1' : '0', KEY_TTL_MS);
    },
    async success(key) {
      const [k, t] = keys(key);
      await client.del(k, t);
    },
    async release(key) {
      await client.del(keys(key)[1]);
    },
  };
}
