import { join } from 'node:path';
import { LogRepository } from '../../../plugins/logs/store/repository.js';
import { sqliteClient } from '../../../sdk/sqlite.js';
import { recordingClient } from '../../helpers/recording-sql.js';
import type { Probe } from '../probe.js';
import { chat, type Caller, type World } from '../world.js';

/** Waits until the log store has `caller`'s request tagged `value` (it writes in the background). */
async function logged(world: World, caller: Caller, value: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    const r = await world.call(caller, 'GET', `/v1/logs?workspace_id=${caller.workspaceSlug}&metadata.tag=${encodeURIComponent(value)}`);
    if ((r.body?.data ?? []).length > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`logs probe: the request tagged ${value} was never logged`);
}

/**
 * The statements a workspace's metadata filter runs on the world's log file, with the workspace and
 * the value named by placeholders: whether another workspace stored the value must change none of
 * them (nor what each returned), or the filter's time would tell.
 */
async function statementsOf(world: World, who: Caller, value: string) {
  const db = sqliteClient(join(world.dataDir, 'gateway.db'));
  try {
    const { client, statements } = recordingClient(db);
    const page = await new LogRepository(client).list({ workspace: who.workspaceId, metadata: [['tag', value]] }, 50, null);
    const named = (p: unknown) => (p === who.workspaceId ? '<workspace>' : p === value ? '<value>' : p);
    return { found: page.data.length, statements: statements.map((s) => ({ sql: s.sql, params: s.params.map(named), rows: s.rows })) };
  } finally {
    await db.close();
  }
}

/** The log's metadata index answers a workspace about its own rows only, in what it returns and in what it runs. */
export const LOGS_PROBES: readonly Probe[] = [
  {
    title: "A tags a request with a metadata value: B's filter on it runs what a value stored nowhere runs",
    covers: ['log-store:entries'],
    async dirty(world, a) {
      const value = 'launch-codes-7d1';
      const r = await chat(world, a, { provider: '@main' }, 'hello', { body: { model: 'logs-probe' }, headers: { 'x-gateway-metadata': JSON.stringify({ tag: value }) } });
      if (r.status !== 200) throw new Error(`logs probe: A's request answered ${r.status} ${r.text}`);
      await logged(world, a, value);
      return { value };
    },
    async observe(world, who, clue) {
      // The workspace named by its slug, as every kind of key may: its own for a workspace key, the one acted in for an organisation key.
      const answer = await world.call(who, 'GET', `/v1/logs?workspace_id=${who.workspaceSlug}&metadata.tag=${encodeURIComponent(clue.value)}`);
      return { status: answer.status, listed: (answer.body?.data ?? []).length, ...(await statementsOf(world, who, clue.value)) };
    },
  },
];
