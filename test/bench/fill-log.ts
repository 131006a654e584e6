import { rebuildRollups } from '../../plugins/logs/analytics/rollups.js';
import { BodySegments } from '../../plugins/logs/bodies/segments.js';
import { LOG_MIGRATIONS, LOGS_NAMESPACE } from '../../plugins/logs/store/migrations.js';
import { migrate } from '../../sdk/sql.js';
import { sqliteClient } from '../../sdk/sqlite.js';

/*
 * Fills a log store with realistic entries, fast (generated in SQL, not
 * through the writer): `rows` entries spread over `days` days up to `now`,
 * 20 models of 3 providers, 50 API keys, about 5% errors, request and response
 * bodies of about 1.5 KB together (in the body segments beside the file, a
 * block per 100 entries, as the writer keeps them), a metadata key on half of
 * them; then the rollups, as migration 9 builds them from stored rows.
 *
 *   node --import tsx test/bench/fill-log.ts <file> [rows] [days]
 */

/** Words drawn for the bodies' text: it compresses about as prose does, not as one letter repeated. */
const WORDS = 'the of and to in is that for it as was with be by on not he this are or his from at which but have an they you were her she there been one all we their has would when if so no will more out up can what said who its into them some time could only new may other about than then my do like its first also any after year two way these made our over well most where much should very through well back years just much good people'.split(' ');

/** About `length` characters of words, the same for the same seed. */
function text(seed: number, length: number): string {
  let x = seed >>> 0 || 1;
  let out = '';
  while (out.length < length) {
    x = Math.imul(x ^ (x >>> 15), 0x2c1b3c6d) >>> 0;
    x = (x ^ (x >>> 12)) >>> 0;
    out += `${WORDS[x % WORDS.length]} `;
  }
  return out;
}
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
  const segments = new BodySegments(`${file}.bodies`);
  try {
    await migrate(client, LOGS_NAMESPACE, LOG_MIGRATIONS);
    await client.run('CREATE TEMP TABLE fill_refs (i INTEGER PRIMARY KEY, ref TEXT NOT NULL)');
    for (let from = 0; from < o.rows; from += CHUNK) {
      const to = Math.min(o.rows, from + CHUNK);
      // The bodies first, a block per 100 entries; their references joined to the rows by number.
      await client.run('DELETE FROM fill_refs');
      await client.transaction(async (tx) => {
        for (let i = from; i < to; i += 100) {
          const block = [];
          for (let j = i; j < Math.min(to, i + 100); j++) {
            const model = `model-${Math.floor((Math.imul(j, 0x9e3779b1) >>> 0) / 17) % 20}`;
            block.push([
              { 'content-type': 'application/json', 'user-agent': 'fill-log/1.0', 'x-gateway-provider': 'openai' },
              null,
              `{"model":"${model}","messages":[{"role":"user","content":"${text(j, 700)}"}]}`,
              `{"id":"chatcmpl-${j}","choices":[{"message":{"content":"${text(j + 0x51ed27, 700)}"}}]}`,
            ]);
          }
          const refs = segments.append(block);
          for (let k = 0; k < refs.length; k++) await tx.run('INSERT INTO fill_refs (i, ref) VALUES (?, ?)', [i + k, refs[k]]);
        }
      });
      await client.transaction(async (tx) => {
        // h: a hash of the row number, so columns vary independently and repeat on no short cycle.
        const rows = `WITH RECURSIVE n(i) AS (SELECT ${from} UNION ALL SELECT i + 1 FROM n WHERE i < ${to - 1}),
          r AS (SELECT i, (i * 2654435761) % 4294967296 AS h, CAST(${start} + i * ${step} AS INTEGER) AS t FROM n)`;
        await tx.run(
          `${rows}
          INSERT INTO gateway_logs (id, created_at, ended_at, trace_id, workspace_id, api_key_id, route, front_door, method, path,
            provider_requested, provider, model_requested, model, status, stream, internal, aborted, latency_ms, prompt_tokens,
            completion_tokens, total_tokens, tokens_estimated, cost, cost_status, pricing_multiplier, cache_status, retry_count,
            attempt_count, fallback_count, error_code, metadata, request_body_truncated, response_body_truncated, kind, body_ref)
          SELECT printf('log_%012d', i), t, t + 200 + h % 3000, printf('%032x', h * 7919 + i), 'ws-' || (h / 7 % 3),
            'key-' || (h / 11 % 50), 'chat.completions', 'chat', 'POST', '/v1/chat/completions',
            CASE h / 13 % 20 WHEN 0 THEN '@prod-openai' ELSE NULL END, CASE h / 17 % 3 WHEN 0 THEN 'openai' WHEN 1 THEN 'anthropic' ELSE 'groq' END,
            'model-' || (h / 17 % 20), 'model-' || (h / 17 % 20), CASE WHEN h / 19 % 20 = 0 THEN 500 + (h / 23 % 4) ELSE 200 END,
            h / 29 % 2, 0, 0, 200 + h / 31 % 3000 + (h % 1000) / 1000.0, 100 + h / 37 % 2000, 10 + h / 41 % 500,
            110 + h / 37 % 2000 + h / 41 % 500, 0, (h / 43 % 1000) / 1000000.0, 'priced', 1,
            CASE h / 47 % 4 WHEN 0 THEN 'HIT' WHEN 1 THEN 'MISS' ELSE 'DISABLED' END, 0, 1, 0,
            CASE WHEN h / 19 % 20 = 0 THEN 'upstream_unreachable' ELSE NULL END,
            CASE WHEN h % 2 = 0 THEN '{"team":"team-' || (h / 53 % 10) || '"}' ELSE NULL END, 0, 0, 'api', (SELECT ref FROM fill_refs WHERE fill_refs.i = r.i)
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
    segments.close();
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
