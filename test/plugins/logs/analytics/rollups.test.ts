import { afterAll, describe, expect, test } from 'vitest';
import { addEntry, emptyAgg, ROLLUP_VALUE_COLUMNS, rollupValues } from '../../../../plugins/logs/analytics/aggregate.js';
import { CUBES, DAY, dimValue, HOUR, LEVELS, MINUTE } from '../../../../plugins/logs/analytics/cubes.js';
import { QueryTimeoutError } from '../../../../plugins/logs/analytics/query.js';
import type { LogEntry } from '../../../../plugins/logs/entry.js';
import { LOG_MIGRATIONS, LOGS_NAMESPACE } from '../../../../plugins/logs/store/migrations.js';
import { GROUP_COLUMNS, GROUP_KEYS, LogRepository, type GroupBy, type LogFilters } from '../../../../plugins/logs/store/repository.js';
import { postgresClient } from '../../../../plugins/stores/postgres/client.js';
import { migrate, type SqlClient } from '../../../../sdk/sql.js';
import { sqliteClient } from '../../../../sdk/sqlite.js';
import { DATABASE_URL, dropSchema, requireService, uniqueSchema } from '../../../helpers/services.js';
import { bruteBucket, bruteGroups, expectSketched, matches, prng, sampleEntry, SKETCHED, tempFile } from '../helpers.js';

/*
 * The rollups against the rows they summarise: the tables themselves equal a
 * brute-force aggregate of the rows (the migration's back-fill and the
 * writer's upserts alike), and the analytics answers equal a brute-force
 * computation whatever the range's alignment, with minute rollups gone, and
 * with rows gone (the rollups outlive them).
 */

/** Three days ending at today's start (UTC): the back-fill builds minutes for the last 48 hours only, so the rows straddle that. */
const T0 = Date.now() - (Date.now() % DAY) - 3 * DAY;

/** Rows stored by a version before the rollups (the first 600 of {@link rows}): inserted without them, and without the columns of migration 14. */
const BEFORE = 600;

/**
 * 1,500 rows over three days at millisecond times, varied in every rollup key. Reasoning and cache-write tokens are drawn
 * from the other counts (the generator's sequence stays as it was); the rows stored before the migrations have no cache
 * writes (null: the column came with migration 14), as a version before it stored them.
 */
function rows(): LogEntry[] {
  const r = prng(7);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const entries = Array.from({ length: 1500 }, (_, i) => {
    const provider = pick(['openai', 'anthropic', null]);
    const usage = r() < 0.8;
    const status = pick([200, 200, 200, 400, 429, 500]);
    return sampleEntry({
      created_at: T0 + Math.floor(r() * 3 * DAY),
      workspace_id: pick(['ws-1', 'ws-2', null]),
      api_key_id: pick(['key-1', 'key-2', 'key-3', null]),
      config_id: pick(['cfg-a', null]),
      prompt_id: pick(['p-1', null]),
      prompt_version: i % 4 === 0 ? 2 : null,
      provider,
      provider_requested: provider === null ? null : pick([provider, `@${provider}`]),
      model: pick(['gpt-4o', 'claude', null]),
      model_requested: pick(['gpt-4o', null]),
      status,
      error_code: status === 200 && r() < 0.1 ? 'upstream_unreachable' : null,
      route: pick(['chat.completions', 'messages']),
      front_door: pick(['chat', 'messages', null]),
      cache_status: pick([null, 'DISABLED', 'MISS', 'HIT', 'SEMANTIC HIT']),
      limit_policy_id: status === 429 ? 'pol-1' : null,
      latency_ms: r() < 0.05 ? null : r() < 0.05 ? r() : Math.exp(r() * 10),
      prompt_tokens: usage ? Math.floor(r() * 1000) : null,
      completion_tokens: usage ? Math.floor(r() * 300) : null,
      total_tokens: usage ? Math.floor(r() * 1300) : null,
      cached_tokens: usage ? (r() < 0.5 ? Math.floor(r() * 500) : 0) : null,
      cost: usage && r() < 0.7 ? r() / 1000 : null,
      cost_status: usage ? pick(['priced', 'unpriced']) : 'no_usage',
      kind: i % 9 === 0 ? 'housekeeping' : 'api',
    });
  });
  for (const [i, e] of entries.entries()) {
    e.reasoning_tokens = e.completion_tokens === null ? null : i % 4 === 0 ? 0 : Math.floor(e.completion_tokens / 2);
    e.cache_write_tokens = i < BEFORE || e.prompt_tokens === null ? null : i % 3 === 0 ? Math.floor(e.prompt_tokens / 3) : 0;
    e.cache_write_1h_tokens = e.cache_write_tokens === null ? null : i % 2 === 0 ? Math.floor(e.cache_write_tokens / 2) : 0;
  }
  return entries;
}

/** The rollup rows the entries make, as the tables hold them, keyed like the tables' primary keys; minutes only of entries `minutes` accepts. */
function bruteRollups(entries: readonly LogEntry[], minutes: (e: LogEntry) => boolean = () => true): Map<string, number[]> {
  const out = new Map<string, { agg: ReturnType<typeof emptyAgg> }>();
  for (const c of CUBES) {
    for (const e of entries) {
      const dims = c.dims.map((d) => dimValue(d, (e as unknown as Record<string, unknown>)[d.column]));
      for (const level of LEVELS) {
        if (level === MINUTE && !minutes(e)) continue;
        const key = [c.name, level, e.created_at - (e.created_at % level), ...dims].join('|');
        let cell = out.get(key);
        if (cell === undefined) out.set(key, (cell = { agg: emptyAgg() }));
        addEntry(cell.agg, e);
      }
    }
  }
  return new Map([...out].map(([k, v]) => [k, rollupValues(v.agg)]));
}

async function storedRollups(client: SqlClient): Promise<Map<string, number[]>> {
  const out = new Map<string, number[]>();
  for (const c of CUBES) {
    const stored = await client.all<Record<string, unknown>>(`SELECT * FROM ${c.table}`);
    for (const row of stored) {
      const key = [c.name, Number(row.level), Number(row.bucket), ...c.dims.map((d) => (d.type === 'int' ? Number(row[d.column]) : row[d.column]))].join('|');
      out.set(key, ROLLUP_VALUE_COLUMNS.map((column) => Number(row[column])));
    }
  }
  return out;
}

/** Equal key for key; the two floating sums (cost, latency) within 1e-9, as the order of adding changes their last bits. */
function expectSameRollups(got: Map<string, number[]>, want: Map<string, number[]>): void {
  expect([...got.keys()].sort()).toEqual([...want.keys()].sort());
  const differences: string[] = [];
  for (const [key, values] of want) {
    const stored = got.get(key)!;
    values.forEach((v, i) => {
      if (Number.isInteger(v) ? stored[i] !== v : !(Math.abs(stored[i]! - v) < 1e-9)) differences.push(`${key} ${ROLLUP_VALUE_COLUMNS[i]}: ${stored[i]} != ${v}`);
    });
  }
  expect(differences).toEqual([]);
}

/** An answer with its floating sums rounded, to compare two ways of adding the same numbers. */
const rounded = (value: unknown): unknown => JSON.parse(JSON.stringify(value, (_, v: unknown) => (typeof v === 'number' && !Number.isInteger(v) ? Math.round(v * 1e9) / 1e9 : v)));

function expectClose(got: Record<string, unknown>, want: Record<string, unknown>, label: string): void {
  for (const [k, value] of Object.entries(want)) {
    if (SKETCHED.has(k)) expectSketched(got[k], value, `${label}.${k}`);
    else if (typeof value === 'number' && !Number.isInteger(value)) expect(got[k], `${label}.${k}`).toBeCloseTo(value, 9);
    else expect(got[k], `${label}.${k}`).toEqual(value);
  }
}

/** Records the statements a client runs, to tell which tables answered. */
function recording(client: SqlClient): { client: SqlClient; statements: string[] } {
  const statements: string[] = [];
  const wrapped: SqlClient = {
    ...client,
    all: (sql, params) => {
      statements.push(sql);
      return client.all(sql, params);
    },
    get: (sql, params) => {
      statements.push(sql);
      return client.get(sql, params);
    },
  };
  return { client: wrapped, statements };
}

function contract(name: string, open: () => Promise<SqlClient | null>) {
  describe(`rollups on ${name}`, () => {
    const all = rows();
    const before = all.slice(0, BEFORE);
    const after = all.slice(BEFORE);
    let client: SqlClient | null = null;
    let repo: LogRepository;
    afterAll(async () => {
      await client?.close();
    });

    test('the migration rolls up the rows stored before it, and the writer each batch after: the tables equal a brute-force aggregate', async () => {
      client = await open();
      if (client === null) return;
      await migrate(client, LOGS_NAMESPACE, LOG_MIGRATIONS.filter((m) => m.version < 9));
      // Rows stored by the version before the rollups: inserted without them.
      await client.transaction(async (tx) => {
        for (const e of before) {
          await tx.run(
            `INSERT INTO gateway_logs (id, created_at, ended_at, workspace_id, api_key_id, config_id, prompt_id, prompt_version, route, front_door, method, path, provider_requested, provider, model_requested, model, status, stream, internal, aborted, latency_ms, prompt_tokens, completion_tokens, total_tokens, cached_tokens, reasoning_tokens, tokens_estimated, cost, cost_status, pricing_multiplier, cache_status, retry_count, attempt_count, fallback_count, error_code, limit_policy_id, request_body_truncated, response_body_truncated, kind)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'POST', '/v1/x', ?, ?, ?, ?, ?, 0, 0, 0, ?, ?, ?, ?, ?, ?, 0, ?, ?, 1, ?, 0, 1, 0, ?, ?, 0, 0, ?)`,
            [e.id, e.created_at, e.ended_at, e.workspace_id, e.api_key_id, e.config_id, e.prompt_id, e.prompt_version, e.route, e.front_door, e.provider_requested, e.provider, e.model_requested, e.model, e.status, e.latency_ms, e.prompt_tokens, e.completion_tokens, e.total_tokens, e.cached_tokens, e.reasoning_tokens, e.cost, e.cost_status, e.cache_status, e.error_code, e.limit_policy_id, e.kind],
          );
        }
      });
      expect(await migrate(client, LOGS_NAMESPACE, LOG_MIGRATIONS)).toEqual([9, 10, 11, 12, 13, 14, 15]);
      // Minutes are back-filled from the floor on: the minute 48 hours before the migration ran.
      const floor = Number((await client.get<{ value: unknown }>("SELECT value FROM gateway_log_rollup_state WHERE name = 'minute_floor'"))!.value);
      expect(floor % MINUTE).toBe(0);
      expect(Math.abs(Date.now() - 48 * HOUR - floor)).toBeLessThan(5 * MINUTE);
      const backfilled = (e: LogEntry) => e.created_at >= floor;
      expect(before.some(backfilled) && before.some((e) => !backfilled(e))).toBe(true);
      expectSameRollups(await storedRollups(client), bruteRollups(before, backfilled));
      repo = new LogRepository(client);
      for (let i = 0; i < after.length; i += 97) await repo.insert(after.slice(i, i + 97));
      const written = new Set(after);
      expectSameRollups(await storedRollups(client), bruteRollups(all, (e) => written.has(e) || backfilled(e)));
    });

    const ORIGIN = T0 + DAY; // a day boundary
    const ranges: [string, number, number, number, number][] = [
      // label, from, to, bucketMs, origin
      ['by hour, on the clock, ragged edges', T0 + 37 * MINUTE + 12_345, T0 + 2 * DAY + 5 * HOUR + 59_999, HOUR, T0],
      ['by day, ragged edges', T0 + 11 * HOUR + 1, T0 + 3 * DAY - 7, DAY, T0],
      ['by 6 hours', T0 + 6 * HOUR, T0 + 3 * DAY, 6 * HOUR, T0 + 6 * HOUR],
      ['by 15 minutes over a day', ORIGIN + 3 * MINUTE + 500, ORIGIN + DAY, 15 * MINUTE, ORIGIN],
      ['buckets off the clock (from the range start)', T0 + 12_345, T0 + DAY + 12_345, HOUR, T0 + 12_345],
    ];
    const FILTERS: LogFilters[] = [{}, { kind: 'api' }, { workspace: 'ws-1', provider: 'openai' }, { apiKey: 'key-2', status: [200] }, { route: 'messages', cacheStatus: 'HIT' }, { promptVersion: 2, prompt: 'p-1' }, { metadata: [['x', 'y']] }];

    test.each(ranges.flatMap(([label, from, to, bucketMs, origin]) => FILTERS.map((f) => [label, JSON.stringify(f), from, to, bucketMs, origin, f] as const)))(
      'time series %s %s: equal to a brute-force computation',
      async (_, __, from, to, bucketMs, origin, extra) => {
        if (client === null) return;
        const filters = { ...extra, from, to };
        const { buckets, totals } = await repo.timeseries(filters, bucketMs, origin);
        const matching = all.filter((e) => matches(e, filters));
        expect(buckets).toHaveLength(Math.ceil((to - origin) / bucketMs));
        buckets.forEach((b, i) => {
          const start = origin + i * bucketMs;
          expectClose(b as unknown as Record<string, unknown>, bruteBucket(matching.filter((e) => e.created_at >= start && e.created_at < start + bucketMs), start), `bucket ${i}`);
        });
        expectClose(totals as unknown as Record<string, unknown>, bruteBucket(matching, from), 'totals');
      },
    );

    const GROUP_CASES: [GroupBy, LogFilters][] = (Object.keys(GROUP_KEYS) as GroupBy[]).flatMap((g) => [
      [g, { from: T0 + 13 * MINUTE + 7, to: T0 + 2 * DAY + HOUR + 59 * MINUTE }],
      [g, { kind: 'api' }],
    ]);
    GROUP_CASES.push(['api_key', { provider: 'anthropic', from: T0 + DAY }], ['model', { limitPolicy: 'pol-1' }]);

    test.each(GROUP_CASES.map(([g, f]) => [g, JSON.stringify(f), f] as const))('groups by %s %s: equal to a brute-force computation', async (groupBy, _, filters) => {
      if (client === null) return;
      const expected = bruteGroups(all.filter((e) => matches(e, filters)), groupBy);
      const { data } = await repo.groups(groupBy, [...GROUP_COLUMNS], filters, 1000, 0);
      expect(data).toHaveLength(expected.size);
      for (const row of data) expectClose(row, expected.get(String(row[groupBy]))!, String(row[groupBy]));
    });

    test('a range of whole days is read from the day rollups only, and a filter no rollup holds from the rows', async () => {
      if (client === null) return;
      const rec = recording(client);
      const r = new LogRepository(rec.client);
      await r.groups('api_key', ['p95_latency'], { from: T0, to: T0 + 3 * DAY, kind: 'api' }, 100, 0);
      expect(rec.statements.some((s) => s.includes('FROM gateway_logs'))).toBe(false);
      expect(rec.statements.filter((s) => s.includes('gateway_log_rollup_key')).length).toBe(1);
      rec.statements.length = 0;
      await r.timeseries({ from: T0, to: T0 + 3 * DAY, traceId: 'nope' }, DAY);
      expect(rec.statements.some((s) => s.includes('gateway_log_rollup_'))).toBe(false);
      expect(rec.statements.some((s) => s.includes('FROM gateway_logs'))).toBe(true);
    });

    const LISTS: LogFilters[] = [
      { limitPolicy: 'pol-1' },
      { apiKey: 'key-2', status: [500], from: T0 + 5 * HOUR + 17, to: T0 + 2 * DAY + 3 },
      { model: 'claude', cacheStatus: 'HIT' },
      { route: 'messages', kind: 'housekeeping', workspace: 'ws-2' },
    ];
    test.each(LISTS.map((f) => [JSON.stringify(f), f] as const))('list %s, looked up in the hour rollups: the cursor walk returns exactly the matching rows', async (_, filters) => {
      if (client === null) return;
      const expected = all.filter((e) => matches(e, filters)).sort((a, b) => b.created_at - a.created_at || (a.id < b.id ? 1 : -1)).map((e) => e.id);
      expect(expected.length).toBeGreaterThan(0);
      const seen: string[] = [];
      let cursor = null;
      for (let pages = 0; pages < 500; pages++) {
        const page: Awaited<ReturnType<LogRepository['list']>> = await repo.list(filters, 7, cursor);
        seen.push(...page.data.map((d) => String(d.id)));
        cursor = page.next;
        if (cursor === null) break;
      }
      expect(seen).toEqual(expected);
    });

    test('a list filter that matches nothing reads no entry: the rollup has no hour for it, the metadata index no value', async () => {
      if (client === null) return;
      const rec = recording(client);
      const page = await new LogRepository(rec.client).list({ apiKey: 'key-none' }, 50, null);
      expect(page).toEqual({ data: [], next: null });
      // Nor a metadata value stored nowhere: the key/value index says so.
      expect(await new LogRepository(rec.client).list({ metadata: [['team', 'nobody']] }, 50, null)).toEqual({ data: [], next: null });
      expect(rec.statements.some((s) => s.includes('FROM gateway_logs'))).toBe(false);
    });

    test.each([
      ['api key', { apiKey: 'key-2' }],
      ['model', { model: 'claude' }],
      ['provider', { provider: '@openai' }],
      ['status', { status: [429] }],
      ['cache status', { cacheStatus: 'HIT' }],
      ['route', { route: 'messages' }],
      ['config', { config: 'cfg-a' }],
      ['limit policy', { limitPolicy: 'pol-1' }],
      ['front door', { frontDoor: 'messages' }],
      ['prompt version', { prompt: 'p-1', promptVersion: 2 }],
      ['trace id', { traceId: 'nope' }],
      ['metadata', { metadata: [['team', 'blue']] }],
      ['workspace and a range', { workspace: 'ws-1', from: T0 + HOUR, to: T0 + 2 * HOUR }],
    ] as const)('query plan: a list filtered by %s searches an index, never scans the log table (SQLite)', async (label, filters) => {
      if (client === null || name !== 'sqlite') return;
      const rec = recording(client);
      const all: { sql: string; params: readonly unknown[] }[] = [];
      const spy: SqlClient = { ...rec.client, all: (sql, params = []) => (all.push({ sql, params }), rec.client.all(sql, params)) };
      await new LogRepository(spy).list(filters as LogFilters, 20, null);
      const reads = all.filter((q) => q.sql.includes('FROM gateway_logs'));
      for (const q of reads) {
        const plan = (await client.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${q.sql}`, q.params)).map((r) => r.detail);
        // A metadata filter walks the time index newest first, each row checked against the key/value index, until the page
        // is full (a value stored nowhere is answered before: see the test above); every other filter searches a range.
        const scans = plan.filter((d) => /^SCAN (gateway_logs|l)\b/.test(d));
        if (label === 'metadata') expect(scans.every((d) => d.includes('USING INDEX gateway_logs_created')), plan.join('\n')).toBe(true);
        else expect(scans, `${q.sql}\n${plan.join('\n')}`).toEqual([]);
      }
    });

    test('a query past its deadline stops with a timeout error', async () => {
      if (client === null) return;
      await expect(repo.groups('model', [], {}, 10, 0, { at: Date.now() - 1, limitMs: 5 })).rejects.toBeInstanceOf(QueryTimeoutError);
    });

    test('minute rollups deleted: the same answers, the minutes read from the rows', async () => {
      if (client === null) return;
      const filters = { from: T0 + 5 * MINUTE + 1, to: T0 + 2 * DAY + 17 * MINUTE, kind: 'api' };
      const want = await repo.timeseries(filters, 15 * MINUTE, T0);
      const cut = T0 + 2 * DAY + 5 * HOUR;
      expect(Number((await client.get<{ c: unknown }>(`SELECT COUNT(*) AS c FROM gateway_log_rollup_total WHERE level = ${MINUTE} AND bucket < ?`, [cut]))!.c)).toBeGreaterThan(0);
      await repo.deleteBefore(null, { minutesBefore: cut, before: null });
      const minutes = await client.get<{ c: unknown }>(`SELECT COUNT(*) AS c FROM gateway_log_rollup_total WHERE level = ${MINUTE} AND bucket < ?`, [cut]);
      expect(Number(minutes!.c)).toBe(0);
      expect(rounded(await repo.timeseries(filters, 15 * MINUTE, T0))).toEqual(rounded(want));
    });

    test('rows deleted by retention: whole hours and days are still counted from the rollups', async () => {
      if (client === null) return;
      const cut = T0 + DAY + 30 * MINUTE;
      const days = await repo.timeseries({ from: T0, to: T0 + 3 * DAY }, DAY);
      await repo.deleteBefore(cut, { minutesBefore: cut, before: null });
      expect(await repo.count()).toBe(all.filter((e) => e.created_at >= cut).length);
      // Day 1 is all rollup; day 2 is whole hours from its rollups and minutes from the rows.
      const again = await repo.timeseries({ from: T0, to: T0 + 3 * DAY }, DAY);
      expect(rounded(again.buckets[0])).toEqual(rounded(days.buckets[0]));
      expect(rounded(again.buckets[2])).toEqual(rounded(days.buckets[2]));
      // Hour and day rollups before their own cut-off go too.
      await repo.deleteBefore(cut, { minutesBefore: cut, before: T0 + DAY });
      const gone = await repo.timeseries({ from: T0, to: T0 + 3 * DAY }, DAY);
      expect(gone.buckets[0]!.requests).toBe(0);
      // Every entry gone: the groups over all time still count the whole days the rollups keep.
      await repo.deleteBefore(Date.now() + DAY, { minutesBefore: 0, before: null });
      expect(await repo.count()).toBe(0);
      const left = await repo.groups('workspace', [], {}, 100, 0);
      expect(left.data.reduce((a, r) => a + Number(r.requests), 0)).toBe(all.filter((e) => e.created_at >= T0 + DAY).length);
    });

    test('PostgreSQL stops a statement that runs past the time limit itself (statement_timeout), and it is a timeout', async () => {
      if (client === null || name !== 'postgres') return;
      // Within the limit, the transaction with a statement_timeout answers as a query without a limit does.
      const limit = { at: Date.now() + 60_000, limitMs: 60_000 };
      expect(await repo.groups('api_key', ['p95_latency', 'cost'], { kind: 'api' }, 100, 0, limit)).toEqual(await repo.groups('api_key', ['p95_latency', 'cost'], { kind: 'api' }, 100, 0));
      // 300,000 entries within one six-hour stretch, each with a metadata row: a scan of them (a metadata filter, which no
      // rollup keeps) is one statement, far longer than 50 ms.
      const start = T0 + 10 * DAY;
      await client.run(
        `INSERT INTO gateway_logs (id, created_at, ended_at, method, path, status, stream, internal, aborted, tokens_estimated, cost_status, pricing_multiplier, retry_count, attempt_count, fallback_count, request_body_truncated, response_body_truncated, latency_ms, kind)
         SELECT 'log_pg_' || i, ${start} + i, ${start} + i, 'POST', '/x', 200, 0, 0, 0, 0, 'no_usage', 1, 0, 1, 0, 0, 0, i % 1000, 'api' FROM generate_series(1, 300000) AS i`,
      );
      await client.run(`INSERT INTO gateway_log_metadata (log_id, meta_key, meta_value, created_at) SELECT 'log_pg_' || i, 'team', 'blue', ${start} + i FROM generate_series(1, 300000) AS i`);
      const codes: string[] = [];
      const spy = (c: SqlClient): SqlClient => ({
        ...c,
        all: <T,>(sql: string, params?: readonly unknown[]) =>
          c.all<T>(sql, params).catch((err: { code?: string }) => {
            codes.push(String(err.code));
            throw err;
          }),
        transaction: (fn) => c.transaction((tx) => fn(spy(tx))),
      });
      const deadline = { at: Date.now() + 50, limitMs: 50 };
      await expect(new LogRepository(spy(client)).groups('model', ['p95_latency'], { metadata: [['team', 'blue']], from: start, to: start + HOUR }, 10, 0, deadline)).rejects.toBeInstanceOf(QueryTimeoutError);
      expect(codes).toContain('57014');
      await client.run("DELETE FROM gateway_logs WHERE id LIKE 'log_pg_%'");
      await client.run("DELETE FROM gateway_log_metadata WHERE log_id LIKE 'log_pg_%'");
    });
  });
}

contract('sqlite', async () => sqliteClient(await tempFile('rollups.db')));

describe('postgres', async () => {
  const available = await requireService('PostgreSQL', DATABASE_URL);
  const schema = uniqueSchema('rollups');
  afterAll(async () => {
    if (available) await dropSchema(schema);
  });
  contract('postgres', async () => (available ? postgresClient({ url: DATABASE_URL, schema }) : null));
});
