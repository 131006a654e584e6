/** What a breaker lets through for one target. */
export type Admission = { state: 'closed'; failures: number } | { state: 'trial' } | { state: 'open'; retryInMs: number };

/**
 * Where breaker state lives. One implementation per store plugin: in memory
 * (one process) or Redis (shared by every gateway instance).
 */
export interface BreakerState {
  /** Asks to call the target. In half-open state exactly one caller gets `trial`; the others see `open`. */
  admit(key: string, cooldownMs: number, now: number): Promise<Admission>;
  /** Records a failure; opens the breaker at `threshold`, or re-opens it after a failed trial. */
  failure(key: string, threshold: number, now: number, trial: boolean): Promise<void>;
  /** Records a success: the breaker closes and its count starts again. */
  success(key: string): Promise<void>;
  /** Gives back a half-open trial that proved nothing (the request failed before reaching the target), so another caller may try. */
  release(key: string): Promise<void>;
}

/** How long a half-open trial may run before another caller may try; guards against a trial that never reports. */
export const TRIAL_TTL_MS = 60_000;

interface Entry {
  failures: number;
  openedAt: number;
  trialAt: number;
}

/** Breaker state in this process only. */
export function memoryBreakerState(): BreakerState {
  const entries = new Map<string, Entry>();
  return {
    async admit(key, cooldownMs, now) {
      const e = entries.get(key);
      if (e === undefined || e.openedAt === 0) return { state: 'closed', failures: e?.failures ?? 0 };
      const left = cooldownMs - (now - e.openedAt);
      if (left > 0) return { state: 'open', retryInMs: left };
      if (e.trialAt !== 0 && now - e.trialAt < TRIAL_TTL_MS) return { state: 'open', retryInMs: 1000 };
      e.trialAt = now;
      return { state: 'trial' };
    },
    async failure(key, threshold, now, trial) {
      let e = entries.get(key);
      if (e === undefined) entries.set(key, (e = { failures: 0, openedAt: 0, trialAt: 0 }));
      if (trial) {
        e.openedAt = now;
        e.trialAt = 0;
        return;
      }
      e.failures++;
      if (e.failures >= threshold && e.openedAt === 0) e.openedAt = now;
    },
    async success(key) {
      entries.delete(key);
    },
    async release(key) {
      const e = entries.get(key);
      if (e !== undefined) e.trialAt = 0;
    },
  };
}
