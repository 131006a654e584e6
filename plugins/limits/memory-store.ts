import { readFile, rename, writeFile } from 'node:fs/promises';
import type { Logger } from '../../sdk/index.js';
import { holdMember, type CheckItem, type CheckResult, type GroupCount, type Hold, type LimitStore } from './store.js';

interface Bucket {
  used: Map<string, number>;
  reserved: Map<string, number>;
  /** Holds by member, in the order they were made (so, with one TTL, in the order they expire). */
  holds: Map<string, { group: string; amount: number; until: number }>;
  expireAt: number;
}

export interface MemoryStoreOptions {
  now: () => number;
  /** How often expired holds are released and expired windows dropped, without waiting for traffic. */
  sweepIntervalMs: number;
  /** Where settled counts are saved (every `saveIntervalMs` when they changed, and on close) and read back at start; null: not kept. */
  file: string | null;
  saveIntervalMs: number;
  logger: Logger;
}

/** Saved counts: `[bucket, expireAt, [[group, used], …]]`. Holds are not saved: the requests holding them end with the process. */
interface SavedCounts {
  version: 1;
  buckets: Array<[string, number, Array<[string, number]>]>;
}

/**
 * Counters in this process: exact for one instance (every step is synchronous,
 * so a check and its count cannot interleave with another request's). A timer
 * releases expired holds and drops finished windows even when no request comes.
 */
export async function memoryLimitStore(options: MemoryStoreOptions): Promise<LimitStore> {
  const buckets = new Map<string, Bucket>();
  let dirty = false;

  const bucketOf = (key: string, expireAt: number): Bucket => {
    let b = buckets.get(key);
    if (b === undefined) {
      b = { used: new Map(), reserved: new Map(), holds: new Map(), expireAt };
      buckets.set(key, b);
    } else if (expireAt > b.expireAt || (expireAt === 0 && b.expireAt !== 0)) {
      b.expireAt = expireAt;
    }
    return b;
  };

  const release = (b: Bucket, now: number) => {
    for (const [member, h] of b.holds) {
      if (h.until > now) break;
      b.holds.delete(member);
      add(b.reserved, h.group, -h.amount);
    }
  };

  const sweep = () => {
    const now = options.now();
    for (const [key, b] of buckets) {
      if (b.expireAt !== 0 && b.expireAt <= now) buckets.delete(key);
      else release(b, now);
    }
  };

  if (options.file !== null) await load(options.file, buckets, options.now(), options.logger);
  const save = async () => {
    if (!dirty || options.file === null) return;
    dirty = false;
    const data: SavedCounts = { version: 1, buckets: [] };
    for (const [key, b] of buckets) if (b.used.size > 0) data.buckets.push([key, b.expireAt, [...b.used]]);
    const tmp = `${options.file}.tmp`;
    try {
      await writeFile(tmp, JSON.stringify(data), { mode: 0o600 });
      await rename(tmp, options.file);
    } catch (err) {
      dirty = true;
      options.logger.warn({ err: (err as Error).message, file: options.file }, 'limits: saving the counters failed; retrying at the next interval');
    }
  };
  let saving: Promise<void> = Promise.resolve();
  const sweepTimer = setInterval(sweep, options.sweepIntervalMs);
  sweepTimer.unref();
  const saveTimer = options.file === null ? null : setInterval(() => (saving = saving.then(save)), options.saveIntervalMs);
  saveTimer?.unref();

  return {
    async check(items: readonly CheckItem[], requestId: string, now: number, holdUntil: number): Promise<CheckResult> {
      const used: number[] = [];
      const reserved: number[] = [];
      const list: Bucket[] = [];
      let denied = -1;
      for (let i = 0; i < items.length; i++) {
        const item = items[i]!;
        const b = bucketOf(item.bucket, item.expireAt);
        release(b, now);
        list.push(b);
        used.push(b.used.get(item.group) ?? 0);
        reserved.push(b.reserved.get(item.group) ?? 0);
        if (denied === -1 && used[i]! + reserved[i]! + Math.max(item.amount, 1) > item.limit) denied = i;
      }
      if (denied !== -1) return { denied, used, reserved };
      for (let i = 0; i < items.length; i++) {
        const item = items[i]!;
        if (item.amount <= 0) continue;
        const b = list[i]!;
        if (item.reserve) {
          reserved[i] = add(b.reserved, item.group, item.amount);
          b.holds.set(holdMember(requestId, item.amount, item.group), { group: item.group, amount: item.amount, until: holdUntil });
        } else {
          used[i] = add(b.used, item.group, item.amount);
          dirty = true;
        }
      }
      return { denied, used, reserved };
    },

    async peek(items: readonly CheckItem[], now: number): Promise<number> {
      for (let i = 0; i < items.length; i++) {
        const item = items[i]!;
        const b = buckets.get(item.bucket);
        if (b === undefined) {
          if (Math.max(item.amount, 1) > item.limit) return i;
          continue;
        }
        release(b, now);
        if ((b.used.get(item.group) ?? 0) + (b.reserved.get(item.group) ?? 0) + Math.max(item.amount, 1) > item.limit) return i;
      }
      return -1;
    },

    async settle(holds: readonly Hold[], actual: readonly number[]): Promise<void> {
      // The memory store needs no clock here: expiry is checked against the caller's clock at check and sweep.
      for (let i = 0; i < holds.length; i++) {
        const h = holds[i]!;
        const b = bucketOf(h.bucket, h.expireAt);
        const held = b.holds.get(h.member);
        if (held !== undefined) {
          b.holds.delete(h.member);
          add(b.reserved, held.group, -held.amount);
        }
        if (actual[i]! > 0) {
          add(b.used, h.group, actual[i]!);
          dirty = true;
        }
      }
    },

    async read(bucket: string, now: number): Promise<GroupCount[]> {
      const b = buckets.get(bucket);
      if (b === undefined) return [];
      release(b, now);
      const groups = new Set([...b.used.keys(), ...b.reserved.keys()]);
      return [...groups].map((group) => ({ group, used: b.used.get(group) ?? 0, reserved: b.reserved.get(group) ?? 0 }));
    },

    async close(): Promise<void> {
      clearInterval(sweepTimer);
      if (saveTimer !== null) clearInterval(saveTimer);
      await saving;
      await save();
    },
  };
}

/** Adds to a group's count, dropping it at zero; returns the new value. */
function add(map: Map<string, number>, group: string, amount: number): number {
  const value = (map.get(group) ?? 0) + amount;
  if (value === 0) map.delete(group);
  else map.set(group, value);
  return value;
}

async function load(file: string, buckets: Map<string, Bucket>, now: number, logger: Logger): Promise<void> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') logger.warn({ err: (err as Error).message, file }, 'limits: the saved counters cannot be read; starting from zero');
    return;
  }
  try {
    const data = JSON.parse(text) as SavedCounts;
    if (data.version !== 1 || !Array.isArray(data.buckets)) throw new Error('unknown format');
    for (const [key, expireAt, groups] of data.buckets) {
      if (expireAt !== 0 && expireAt <= now) continue;
      buckets.set(key, { used: new Map(groups), reserved: new Map(), holds: new Map(), expireAt });
    }
  } catch (err) {
    logger.warn({ err: (err as Error).message, file }, 'limits: the saved counters are unreadable; starting from zero');
  }
}
