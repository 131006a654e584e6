import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { LOG_MIGRATIONS, LOGS_NAMESPACE } from '../../../plugins/logs/store/migrations.js';
import { LogRepository, type LogFilters } from '../../../plugins/logs/store/repository.js';
import { migrate, type SqlClient } from '../../../sdk/sql.js';
import { sqliteClient } from '../../../sdk/sqlite.js';
import { recordingClient, type RecordedStatement } from '../../helpers/recording-sql.js';
import { sampleEntry, tempFile } from './helpers.js';

/*
 * The log's queries answer a workspace-confined caller from its own rows only, from the first
 * statement on (docs/security.md, "Indexes answer within the caller's workspace"). Two runs that
 * issue the same statements, which return the same rows, do the same work: whatever another
 * workspace stored must change neither. (The server-level probe is in test/isolation.)
 */

const T0 = Date.UTC(2026, 10, 2);
const HOUR = 3_600_000;
let db: SqlClient;

beforeAll(async () => {
  db = sqliteClient(await tempFile('isolation.db'));
  await migrate(db, LOGS_NAMESPACE, LOG_MIGRATIONS);
  const repo = new LogRepository(db);
  // Workspace A: many tagged requests, later than any of B's. Workspace B: a few of its own.
  const entries = [
    ...Array.from({ length: 400 }, (_, i) => sampleEntry({ created_at: T0 + 2 * 24 * HOUR + i * 1000, workspace_id: 'ws-a', api_key_id: 'key-a', model: 'gpt-4o', metadata: { tag: 'launch-codes' } })),
    ...Array.from({ length: 20 }, (_, i) => sampleEntry({ created_at: T0 + i * 60_000, workspace_id: 'ws-b', api_key_id: 'key-b', model: 'gpt-4o', metadata: { tag: 'b-only' } })),
  ];
  await repo.insert(entries);
});
afterAll(async () => {
  await db?.close();
});

/** The statements `run` issues on a recording client, with `value` named by a placeholder. */
async function statements(run: (repo: LogRepository) => Promise<unknown>, value?: string): Promise<RecordedStatement[]> {
  const { client, statements: seen } = recordingClient(db);
  await run(new LogRepository(client));
  return seen.map((s) => ({ ...s, params: s.params.map((p) => (p === value ? '<value>' : p)) }));
}

describe("a workspace's log queries", () => {
  test("a metadata value only another workspace stored runs what a value stored nowhere runs: the same statements, over the same rows", async () => {
    const b: LogFilters = { workspace: 'ws-b' };
    const others = await statements((repo) => repo.list({ ...b, metadata: [['tag', 'launch-codes']] }, 50, null), 'launch-codes');
    const nowhere = await statements((repo) => repo.list({ ...b, metadata: [['tag', 'never-stored']] }, 50, null), 'never-stored');
    expect(others).toEqual(nowhere);
    // The comparison can fail: a value B stored itself runs more (the page), and finds B's rows.
    const own = await statements((repo) => repo.list({ ...b, metadata: [['tag', 'b-only']] }, 50, null), 'b-only');
    expect(own.length).toBeGreaterThan(nowhere.length);
    // An organisation-wide caller asks the whole index: the value is found.
    const organisation = await new LogRepository(db).list({ metadata: [['tag', 'launch-codes']] }, 5, null);
    expect(organisation.data).toHaveLength(5);
  });

  test('every statement of a confined list, group, time series and open-ended aggregate is scoped to the workspace', async () => {
    const b: LogFilters = { workspace: 'ws-b' };
    const runs: Array<[string, (repo: LogRepository) => Promise<unknown>]> = [
      ['list with metadata', (repo) => repo.list({ ...b, metadata: [['tag', 'b-only']] }, 10, null)],
      ['list guided by a rollup', (repo) => repo.list({ ...b, apiKey: 'key-b' }, 10, null)],
      ['groups without an end (the last stored entry bounds it)', (repo) => repo.groups('model', ['cost', 'p95_latency'], b, 10, 0)],
      ['groups scanning rows (a metadata filter no rollup holds)', (repo) => repo.groups('model', ['cost'], { ...b, metadata: [['tag', 'b-only']], from: T0 - 30 * 24 * HOUR }, 10, 0)],
      ['time series', (repo) => repo.timeseries({ ...b, from: T0 - 24 * HOUR, to: T0 + 3 * 24 * HOUR }, HOUR)],
    ];
    for (const [what, run] of runs) {
      const unscoped = (await statements(run)).filter((s) => !s.sql.includes('workspace_id') && !s.sql.includes('gateway_log_rollup_state'));
      expect(unscoped.map((s) => s.sql), what).toEqual([]);
    }
  });

  test("the open end of B's aggregate is B's last entry, not A's later ones", async () => {
    const seen = await statements((repo) => repo.groups('model', ['cost'], { workspace: 'ws-b' }, 10, 0));
    const bounds = seen.filter((s) => s.sql.includes('MAX(created_at)'));
    expect(bounds).toHaveLength(1);
    expect(bounds[0]!.params).toEqual(['ws-b', 'ws-b']);
    const answer = await new LogRepository(db).groups('model', ['cost'], { workspace: 'ws-b' }, 10, 0);
    expect(answer.data).toEqual([expect.objectContaining({ model: 'gpt-4o', requests: 20 })]);
  });
});
