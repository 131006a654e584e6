import { afterAll, describe, expect, test } from 'vitest';
import type { LogEntry } from '../../../plugins/logs/entry.js';
import { rebuildRollups } from '../../../plugins/logs/analytics/rollups.js';
import { LOG_MIGRATIONS, LOGS_NAMESPACE } from '../../../plugins/logs/store/migrations.js';
import { GROUP_COLUMNS, GROUP_KEYS, LogRepository, type GroupBy, type LogFilters } from '../../../plugins/logs/store/repository.js';
import { postgresClient } from '../../../plugins/stores/postgres/client.js';
import { migrate, type SqlClient } from '../../../sdk/sql.js';
import { sqliteClient } from '../../../sdk/sqlite.js';
import { DATABASE_URL, dropSchema, requireService, uniqueSchema } from '../../helpers/services.js';
import { bruteBucket, bruteGroups, expectSketched, matches, NUMBER_FIELDS, prng, sampleEntry, SKETCHED, tempFile } from './helpers.js';


const T0 = Date.UTC(2025, 0, 1);


/** 600 varied rows: ties in latency and time, nulls in every nullable grouped column, every cache status. */
function sampleRows(): LogEntry[] {
  const r = prng(42);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const rows: LogEntry[] = [];
  for (let i = 0; i < 600; i++) {
    const provider = pick(['openai', 'anthropic', 'groq', null]);
    const hasUsage = r() < 0.8;
    const prompt = Math.floor(r() * 2000);
    const completion = Math.floor(r() * 500);
    const costStatus = !hasUsage ? 'no_usage' : pick(['priced', 'priced', 'unpriced', 'cache_hit']);
    const status = pick([200, 200, 200, 201, 302, 400, 429, 500, 503]);
    rows.push(
      sampleEntry({
        created_at: T0 + Math.floor(r() * 200) * 1000, // many rows share a millisecond
        trace_id: `trace-${i % 50}`,
        workspace_id: pick(['ws-1', 'ws-2', null]),
        api_key_id: pick(['key-1', 'key-2', 'key-3']),
        config_id: pick(['cfg-a', 'cfg-b', null]),
        prompt_id: pick(['prompt-1', null, null]),
        provider,
        provider_requested: provider === null ? null : pick([provider, `@${provider}-slug`]),
        model_requested: pick(['gpt-4o', 'claude-3-5-sonnet', 'llama', null]),
        model: pick(['gpt-4o-2024-08-06', 'claude-3-5-sonnet-20241022', null, null]),
        status,
        error_code: status >= 400 ? null : pick([null, null, null, 'upstream_unreachable']),
        latency_ms: r() < 0.05 ? null : Math.round(r() * 50) * 10 + pick([0, 0.5]), // coarse values: ties
        prompt_tokens: hasUsage ? prompt : null,
        completion_tokens: hasUsage ? completion : null,
        total_tokens: hasUsage ? prompt + completion : null,
        cached_tokens: hasUsage ? Math.floor(prompt / 4) : null,
        // Reasoning on two requests in three, cache writes (a third of them for an hour) on one in three: drawn from
        // the values above, so the generator's sequence (and every other column) stays as it was.
        reasoning_tokens: hasUsage ? (i % 3 === 0 ? 0 : Math.floor(completion / 3)) : null,
        cache_write_tokens: hasUsage ? (i % 3 === 1 ? Math.floor(prompt / 5) : 0) : null,
        cache_write_1h_tokens: hasUsage ? (i % 3 === 1 && i % 2 === 0 ? Math.floor(prompt / 15) : 0) : null,
        cost: costStatus === 'priced' ? Math.round(r() * 1e6) / 1e9 : costStatus === 'cache_hit' ? 0 : null,
        cost_status: costStatus,
        cache_status: pick([null, 'DISABLED', 'MISS', 'HIT', 'SEMANTIC HIT', 'REFRESH']),
        limit_policy_id: status === 429 ? pick(['pol-1', 'pol-2']) : null,
        rpc_method: i % 7 === 0 ? pick(['tools/call', 'tools/list', 'message/send']) : null,
        tool_name: i % 14 === 0 ? pick(['search', 'fetch']) : null,
        kind: i % 6 === 0 ? 'housekeeping' : 'api',
        metadata: r() < 0.5 ? { team: pick(['blue', 'red']), n: Math.floor(r() * 3), flag: r() < 0.5 } : null,
      }),
    );
  }
  // Versions 1 to 3 of the one prompt, without drawing from the generator (the other columns keep their values).
  for (const [i, row] of rows.entries()) if (row.prompt_id !== null) row.prompt_version = (i % 3) + 1;
  return rows;
}

const JSON_VALUED = new Set(['attempts', 'metadata', 'hook_results', 'routing', 'price', 'request_headers']);

/** An entry whose every stored column holds a value no other column holds (see the test using it). */
function distinctEntry(seed: number): LogEntry {
  const e: Record<string, unknown> = {};
  let n = 0;
  let bit = 0;
  for (const [key, value] of Object.entries(sampleEntry())) {
    n++;
    if (key === 'id') e[key] = `log_distinct_${seed}`;
    else if (key === 'created_at' || key === 'ended_at') e[key] = T0 + seed * 100 + n;
    else if (NUMBER_FIELDS.has(key)) e[key] = seed * 1000 + n + (key === 'cost' || key === 'latency_ms' ? 0.25 : 0);
    else if (JSON_VALUED.has(key)) e[key] = key === 'attempts' ? [{ target: `${key}-${seed}`, provider: 'p', status: 200, startMs: n, latencyMs: 1, error: null }] : { [key]: seed };
    else if (typeof value === 'boolean') e[key] = ((++bit >> seed) & 1) === 1; // column k: bit `seed` of k, so no two columns match on all three
    else e[key] = `${key}-${seed}`;
  }
  return e as unknown as LogEntry;
}

const newestFirst = (a: LogEntry, b: LogEntry) => b.created_at - a.created_at || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

function contract(name: string, open: () => Promise<SqlClient | null>, openEmpty: () => Promise<SqlClient | null>) {
  describe(`log store on ${name}`, () => {
    test('migration 8 adds kind: new rows default to api, and rows stored before of the default housekeeping routes become housekeeping', async () => {
      const empty = await openEmpty();
      if (empty === null) return;
      try {
        expect(await migrate(empty, LOGS_NAMESPACE, LOG_MIGRATIONS.filter((m) => m.version < 8))).toEqual([1, 2, 3, 4, 5, 6, 7]);
        const before = ['dashboard.asset', 'auth.whoami', 'analytics.timeseries', 'health', 'chat.completions', null];
        for (const [i, route] of before.entries()) {
          await empty.run(
            `INSERT INTO gateway_logs (id, created_at, ended_at, route, method, path, status, stream, internal, aborted, tokens_estimated, cost_status, pricing_multiplier, retry_count, attempt_count, fallback_count, request_body_truncated, response_body_truncated)
             VALUES (?, ?, ?, ?, 'GET', '/x', 200, 0, 0, 0, 0, 'no_usage', 1, 0, 0, 0, 0, 0)`,
            [`log_old_${i}`, T0 + i, T0 + i, route],
          );
        }
        expect(await migrate(empty, LOGS_NAMESPACE, LOG_MIGRATIONS)).toEqual([8, 9, 10, 11, 12, 13, 14, 15]);
        const kinds = await empty.all<{ id: string; kind: string }>('SELECT id, kind FROM gateway_logs ORDER BY id');
        expect(kinds.map((k) => k.kind)).toEqual(['housekeeping', 'housekeeping', 'housekeeping', 'housekeeping', 'api', 'api']);
        // A row written without the column (an older writer still running during an upgrade) is api.
        await empty.run(
          `INSERT INTO gateway_logs (id, created_at, ended_at, route, method, path, status, stream, internal, aborted, tokens_estimated, cost_status, pricing_multiplier, retry_count, attempt_count, fallback_count, request_body_truncated, response_body_truncated)
           VALUES ('log_new', 1, 1, 'health', 'GET', '/health', 200, 0, 0, 0, 0, 'no_usage', 1, 0, 0, 0, 0, 0)`,
        );
        expect((await empty.get<{ kind: string }>("SELECT kind FROM gateway_logs WHERE id = 'log_new'"))!.kind).toBe('api');
      } finally {
        await empty.close();
      }
    });

    let client: SqlClient | null = null;
    let repo: LogRepository;
    const rows = sampleRows();
    afterAll(async () => {
      await client?.close();
    });

    test('migrations apply once; a batch of 600 entries is written in one transaction', async () => {
      client = await open();
      if (client === null) return;
      expect(await migrate(client, LOGS_NAMESPACE, LOG_MIGRATIONS)).toEqual(LOG_MIGRATIONS.map((m) => m.version));
      expect(await migrate(client, LOGS_NAMESPACE, LOG_MIGRATIONS)).toEqual([]);
      // Only the indexes the routes' queries use are kept: each costs every insert.
      const indexes = await client.all<{ name: string }>(
        client.dialect === 'sqlite'
          ? "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name IN ('gateway_logs', 'gateway_log_metadata') AND name NOT LIKE 'sqlite_autoindex%' ORDER BY name"
          : "SELECT indexname AS name FROM pg_indexes WHERE schemaname = current_schema() AND tablename IN ('gateway_logs', 'gateway_log_metadata') AND indexname NOT LIKE '%_pkey' ORDER BY indexname",
      );
      expect(indexes.map((i) => i.name)).toEqual(['gateway_log_metadata_created', 'gateway_log_metadata_kv', 'gateway_log_metadata_workspace_kv', 'gateway_logs_created', 'gateway_logs_trace', 'gateway_logs_workspace']);
      repo = new LogRepository(client);
      await repo.insert(rows);
      expect(await repo.count()).toBe(rows.length);
      // A failing batch leaves nothing behind (same id twice violates the primary key).
      const dup = sampleEntry({ created_at: T0 - 1 });
      await expect(repo.insert([dup, { ...dup }])).rejects.toThrow();
      expect(await repo.count()).toBe(rows.length);
    });

    test('one entry by id, every field as written', async () => {
      if (client === null) return;
      const full = sampleEntry({
        created_at: T0 - 5000,
        trace_id: 'one',
        attempts: [{ target: '0', provider: 'openai', status: 500, startMs: 0, latencyMs: 1.5, error: null }, { target: '1', provider: 'openai', status: 200, startMs: 0, latencyMs: 2, error: null }],
        metadata: { a: 'b', nested: { x: [1, 2] } },
        hook_results: { before_request_hooks: [{ id: 'h1', verdict: true }], after_request_hooks: [] },
        routing: [{ at: '', mode: 'loadbalance', considered: ['0', '1'], skipped: [{ target: '1', reason: 'tokens_exhausted' }], chosen: ['0'], affinity: null, prefer: 'weight' }],
        request_body: '{"model":"gpt-4o"}',
        response_body: 'Hello',
        response_body_truncated: true,
        stream: true,
        cost: 0.000123,
        cost_status: 'priced',
        latency_ms: 12.345,
        prompt_tokens: 5,
        workspace_id: 'ws-9',
        prompt_id: 'pp-one',
        prompt_version: 7,
        rpc_method: 'tools/call',
        tool_name: 'search',
        request_headers: { 'user-agent': 'test/1.0', authorization: '[REDACTED]', 'x-gateway-config': '{"provider":"openai","api_key":"[REDACTED]"}', 'x-note': 'é ✓ "quoted"' },
      });
      await repo.insert([full]);
      const got = await repo.get(full.id, undefined);
      const { response_stream: _notAColumn, received_headers: _notAColumnEither, config_accepted: _norThis, ...columns } = full;
      const expected: Record<string, unknown> = { ...columns, created_at: new Date(full.created_at).toISOString(), ended_at: new Date(full.ended_at).toISOString() };
      expect(got).toEqual(expected);
      // Stored out of the row, as JSON text in the body table (store/bodies.ts); a list item leaves it out (as it does the bodies).
      const raw = await client.get<{ request_headers: unknown; body_ref: unknown }>('SELECT request_headers, body_ref FROM gateway_logs WHERE id = ?', [full.id]);
      expect(raw).toEqual({ request_headers: null, body_ref: 't' });
      const kept = await client.get<{ request_headers: unknown }>('SELECT request_headers FROM gateway_log_bodies WHERE id = ?', [full.id]);
      expect(JSON.parse(String(kept?.request_headers))).toEqual(full.request_headers);
      const listed = (await repo.list({ traceId: 'one' }, 10, null)).data;
      expect(listed.map((d) => d.id)).toEqual([full.id]);
      expect(listed[0]).not.toHaveProperty('request_headers');
      expect(listed[0]).not.toHaveProperty('request_body');
      expect(await repo.get(full.id, 'ws-1')).toBeNull();
      expect(await repo.get(full.id, 'ws-9')).not.toBeNull();
      expect(await repo.get('log_missing', undefined)).toBeNull();
      await client.run('DELETE FROM gateway_logs WHERE id = ?', [full.id]);
      await client.run('DELETE FROM gateway_log_metadata WHERE log_id = ?', [full.id]);
      // Deleted behind the store's back: the rollups are rebuilt from the rows left.
      await rebuildRollups(client);
    });

    test('every column is written to its own place (a column left out or out of order fails)', async () => {
      if (client === null) return;
      // Three entries with a value in every column that no other column holds: numbers and texts counted up,
      // JSON columns distinct objects, and each boolean column a distinct pattern of bits over the three entries.
      const written = [0, 1, 2].map((seed) => distinctEntry(seed));
      await repo.insert(written);
      for (const e of written) {
        const got = await repo.get(e.id, undefined);
        const { response_stream: _a, received_headers: _b, config_accepted: _c, ...columns } = e;
        expect(got).toEqual({ ...columns, created_at: new Date(e.created_at).toISOString(), ended_at: new Date(e.ended_at).toISOString() });
      }
      for (const e of written) {
        await client.run('DELETE FROM gateway_logs WHERE id = ?', [e.id]);
        await client.run('DELETE FROM gateway_log_metadata WHERE log_id = ?', [e.id]);
      }
      await rebuildRollups(client);
    });

    const FILTERS: LogFilters[] = [
      {},
      { status: [500, 503] },
      { provider: 'openai' },
      { provider: '@groq-slug' },
      { model: 'gpt-4o' },
      { model: 'claude-3-5-sonnet-20241022' },
      { traceId: 'trace-7' },
      { apiKey: 'key-2' },
      { config: 'cfg-a' },
      { workspace: 'ws-1' },
      { cacheStatus: 'HIT' },
      { limitPolicy: 'pol-1' },
      { prompt: 'prompt-1' },
      { prompt: 'prompt-1', promptVersion: 2 },
      { rpcMethod: 'tools/call' },
      { toolName: 'search', rpcMethod: 'tools/call' },
      { from: T0 + 50_000, to: T0 + 120_000 },
      { metadata: [['team', 'blue']] },
      { metadata: [['n', '2'], ['flag', 'true']] },
      { workspace: 'ws-2', status: [200], metadata: [['team', 'red']], from: T0 + 10_000 },
      { kind: 'housekeeping' },
      { kind: 'api', provider: 'openai' },
    ];

    test.each(FILTERS.map((f) => [JSON.stringify(f), f] as const))('filter %s: the cursor walk returns exactly the matching rows, newest first', async (_, filters) => {
      if (client === null) return;
      const expected = rows.filter((e) => matches(e, filters)).sort(newestFirst).map((e) => e.id);
      const seen: string[] = [];
      let cursor = null;
      for (let pages = 0; pages < 1000; pages++) {
        const page: Awaited<ReturnType<LogRepository['list']>> = await repo.list(filters, 37, cursor);
        expect(page.data.length).toBeLessThanOrEqual(37);
        seen.push(...page.data.map((d) => String(d.id)));
        cursor = page.next;
        if (cursor === null) break;
      }
      expect(seen).toEqual(expected);
    });

    const ALL = [...GROUP_COLUMNS];
    const cases: [GroupBy, LogFilters][] = [];
    for (const g of Object.keys(GROUP_KEYS) as GroupBy[]) {
      cases.push([g, {}]);
      cases.push([g, { from: T0 + 30_000, to: T0 + 150_000 }]);
    }
    cases.push(['model', { workspace: 'ws-1', status: [200, 201] }]);
    cases.push(['model', { kind: 'api' }], ['status_code', { kind: 'housekeeping' }]);

    test.each(cases.map(([g, f]) => [g, JSON.stringify(f), f] as const))('groups by %s %s: every column equals a brute-force computation', async (groupBy, _, filters) => {
      if (client === null) return;
      const expected = bruteGroups(rows.filter((e) => matches(e, filters)), groupBy);
      const { data, hasMore } = await repo.groups(groupBy, ALL, filters, 1000, 0);
      expect(hasMore).toBe(false);
      expect(data).toHaveLength(expected.size);
      for (let i = 1; i < data.length; i++) expect(Number(data[i - 1]!.requests)).toBeGreaterThanOrEqual(Number(data[i]!.requests));
      for (const row of data) {
        const want = expected.get(String(row[groupBy]));
        expect(want, `group ${String(row[groupBy])}`).toBeDefined();
        for (const [column, value] of Object.entries(want!)) {
          const got = row[column];
          if (SKETCHED.has(column)) expectSketched(got, value, `${String(row[groupBy])}.${column}`);
          else if (typeof value === 'number' && !Number.isInteger(value)) expect(got, `${String(row[groupBy])}.${column}`).toBeCloseTo(value, 9);
          else expect(got, `${String(row[groupBy])}.${column}`).toEqual(value);
        }
      }
      // Without columns: only the key and the count.
      const bare = await repo.groups(groupBy, [], filters, 1000, 0);
      for (const row of bare.data) expect(Object.keys(row).sort()).toEqual(['requests', groupBy].sort());
    });

    test('group pages: limit and offset', async () => {
      if (client === null) return;
      const all = await repo.groups('api_key', [], {}, 1000, 0);
      const first = await repo.groups('api_key', [], {}, 2, 0);
      const rest = await repo.groups('api_key', [], {}, 2, 2);
      expect(first.hasMore).toBe(true);
      expect([...first.data, ...rest.data]).toEqual(all.data);
    });

    test.each([
      ['every bucket, no filter', {}, 20_000, T0 + 190_000],
      ['a workspace, uneven last bucket, empty buckets after the data', { workspace: 'ws-1' }, 45_000, T0 + 400_000],
      ['api traffic only', { kind: 'api' }, 30_000, T0 + 200_000],
    ] as const)('time series (%s): every bucket and the totals equal a brute-force computation', async (_, extra, bucketMs, to) => {
      if (client === null) return;
      const from = T0 + 5_000;
      const filters = { ...extra, from, to };
      const { buckets, totals } = await repo.timeseries(filters, bucketMs);
      const matching = rows.filter((e) => matches(e, filters));
      expect(buckets).toHaveLength(Math.ceil((to - from) / bucketMs));
      const check = (got: Record<string, unknown>, want: Record<string, unknown>, label: string) => {
        for (const [k, value] of Object.entries(want)) {
          if (SKETCHED.has(k)) expectSketched(got[k], value, `${label}.${k}`);
          else if (typeof value === 'number' && !Number.isInteger(value)) expect(got[k], `${label}.${k}`).toBeCloseTo(value, 9);
          else expect(got[k], `${label}.${k}`).toEqual(value);
        }
      };
      buckets.forEach((b, i) => {
        const start = from + i * bucketMs;
        check(b as unknown as Record<string, unknown>, bruteBucket(matching.filter((e) => e.created_at >= start && e.created_at < start + bucketMs), start), `bucket ${i}`);
      });
      check(totals as unknown as Record<string, unknown>, bruteBucket(matching, from), 'totals');
      expect(totals.requests).toBeGreaterThan(100);
      // Empty buckets are there, as zeros and nulls (the rows end at T0 + 200 s).
      if (to > T0 + 300_000) expect(buckets.at(-1)).toMatchObject({ requests: 0, errors: 0, cost: 0, p50_latency: null, cache_hit_rate: null });
    });

    test('retention deletes entries older than the cut-off, with their metadata rows', async () => {
      if (client === null) return;
      const cut = T0 + 100_000;
      const older = rows.filter((e) => e.created_at < cut).length;
      expect(await repo.deleteBefore(cut)).toBe(older);
      expect(await repo.count()).toBe(rows.length - older);
      const orphans = await client.get<{ c: unknown }>('SELECT COUNT(*) AS c FROM gateway_log_metadata WHERE created_at < ?', [cut]);
      expect(Number(orphans!.c)).toBe(0);
      // The bodies go with their entries; the others' stay.
      const bodies = await client.get<{ old: unknown; left: unknown }>('SELECT SUM(CASE WHEN created_at < ? THEN 1 ELSE 0 END) AS old, COUNT(*) AS left FROM gateway_log_bodies', [cut]);
      expect(Number(bodies!.old)).toBe(0);
      expect(Number(bodies!.left)).toBe(rows.filter((e) => e.created_at >= cut && (e.request_body !== null || e.response_body !== null || e.request_headers !== null || e.hook_results !== null)).length);
      const left = await repo.list({ metadata: [['team', 'blue']] }, 500, null);
      expect(left.data.map((d) => d.id)).toEqual(rows.filter((e) => e.created_at >= cut && matches(e, { metadata: [['team', 'blue']] })).sort(newestFirst).map((e) => e.id));
    });
  });
}

contract(
  'sqlite',
  async () => sqliteClient(await tempFile('contract.db')),
  async () => sqliteClient(await tempFile('migration.db')),
);

describe('postgres', async () => {
  const available = await requireService('PostgreSQL', DATABASE_URL);
  const schema = uniqueSchema('logs');
  const empty = `${schema}_m8`;
  afterAll(async () => {
    if (available) await Promise.all([dropSchema(schema), dropSchema(empty)]);
  });
  contract(
    'postgres',
    async () => (available ? postgresClient({ url: DATABASE_URL, schema }) : null),
    async () => (available ? postgresClient({ url: DATABASE_URL, schema: empty }) : null),
  );
});
