import { rebuildRollups } from '../../plugins/logs/analytics/rollups.js';
import { LOG_MIGRATIONS, LOGS_NAMESPACE } from '../../plugins/logs/store/migrations.js';
import { migrate } from '../../sdk/sql.js';
import { sqliteClient } from '../../sdk/sqlite.js';

/*
 * Fills a log store with realistic entries, fast (generated in SQL, not
 * through the writer): `rows` entries spread over `days` days up to `now`,
 * 20 models of 3 providers, 50 API keys, about 5% errors, request and response
 * bodies of about 1.5 KB together, a metadata key on half of them; then the
 * rollups, as migration 9 builds them from stored rows.
 *
 *   node --import tsx test/bench/fill-log.ts <file> [rows] [days]
 */

const BODY = 'x'.repeat(700);
const CHUNK = 200_000;

export interface FillOptions {
  rows: number;
  days?: number;
  now?: number;
  /** Called after each chunk with the rows written so far. */
  progress?: (written: number) => void;
}

export async function fillLog(file: string, o: FillOptions): Promise<void> {
  const days = o.days ?? 30;
  const now = o.now ?? Date.now();
  const start = now - days * 86_400_000;
  const step = (days * 86_400_000) / o.rows;
  const client = sqliteClient(file, { cacheKiB: 64_000 });
  try {
    await migrate(client, LOGS_NAMESPACE, LOG_MIGRATIONS);
    for (let from = 0; from < o.rows; from += CHUNK) {
      const to = Math.min(o.rows, from + CHUNK);
      await client.transaction(async (tx) => {
        // h: a hash of the row number, so columns vary independently and repeat on no short cycle.
        const rows = `WITH RECURSIVE n(i) AS (SELECT ${from} UNION ALL SELECT i + 1 FROM n WHERE i < ${to - 1}),
          r AS (SELECT i, (i * 2654435761) % 4294967296 AS h, CAST(${start} + i * ${step} AS INTEGER) AS t FROM n)`;
        await tx.run(
          `${rows}
          INSERT INTO gateway_logs (id, created_at, ended_at, trace_id, workspace_id, api_key_id, route, front_door, method, path,
            provider_requested, provider, model_requested, model, status, stream, internal, aborted, latency_ms, prompt_tokens,
            completion_tokens, total_tokens, tokens_estimated, cost, cost_status, pricing_multiplier, cache_status, retry_count,
            attempt_count, fallback_count, error_code, metadata, request_body, request_body_truncated, response_body, response_body_truncated, kind)
          SELECT printf('log_%012d', i), t, t + 200 + h % 3000, printf('%032x', h * 7919 + i), 'ws-' || (h / 7 % 3),
            'key-' || (h / 11 % 50), 'chat.completions', 'chat', 'POST', '/v1/chat/completions',
            CASE h / 13 % 20 WHEN 0 THEN '@prod-openai' ELSE NULL END, CASE h / 17 % 3 WHEN 0 THEN 'openai' WHEN 1 THEN 'anthropic' ELSE 'groq' END,
            'model-' || (h / 17 % 20), 'model-' || (h / 17 % 20), CASE WHEN h / 19 % 20 = 0 THEN 500 + (h / 23 % 4) ELSE 200 END,
            h / 29 % 2, 0, 0, 200 + h / 31 % 3000 + (h % 1000) / 1000.0, 100 + h / 37 % 2000, 10 + h / 41 % 500,
            110 + h / 37 % 2000 + h / 41 % 500, 0, (h / 43 % 1000) / 1000000.0, 'priced', 1,
            CASE h / 47 % 4 WHEN 0 THEN 'HIT' WHEN 1 THEN 'MISS' ELSE 'DISABLED' END, 0, 1, 0,
            CASE WHEN h / 19 % 20 = 0 THEN 'upstream_unreachable' ELSE NULL END,
            CASE WHEN h % 2 = 0 THEN '{"team":"team-' || (h / 53 % 10) || '"}' ELSE NULL END,
            '{"model":"model-' || (h / 17 % 20) || '","messages":[{"role":"user","content":"${BODY}"}]}', 0,
            '{"id":"chatcmpl-' || i || '","choices":[{"message":{"content":"${BODY}"}}]}', 0, 'api'
          FROM r`,
        );
        await tx.run(
          `${rows} INSERT INTO gateway_log_metadata (log_id, meta_key, meta_value, created_at)
          SELECT printf('log_%012d', i), 'team', 'team-' || (h / 53 % 10), t FROM r WHERE h % 2 = 0`,
        );
      });
      o.progress?.(to);
    }
    await rebuildRollups(client);
    await client.run('ANALYZE');
  } finally {
    await client.close();
  }
}

if (process.argv[1] !== undefined && import.meta.url.endsWith(process.argv[1].split('/').pop()!)) {
  const [file, rows = '1000000', days = '30'] = process.argv.slice(2);
  if (file === undefined) throw new Error('usage: fill-log.ts <file> [rows] [days]');
  const t0 = Date.now();
  await fillLog(file, { rows: Number(rows), days: Number(days), progress: (n) => process.stdout.write(`\r${n} rows`) });
  console.log(`\n${rows} rows in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
}
