import { createHash } from 'node:crypto';
import { expect, test } from 'vitest';
import { LOG_MIGRATIONS } from '../../../plugins/logs/store/migrations.js';

/*
 * The log migrations whose text is built from code (the cubes, the sketch's bins, the back-fill helpers) rather
 * than written out: a released migration's text never changes (a database that ran it must stay as one that runs
 * it now), so a change to that code must leave these texts as they are. Another shape is another migration.
 * 14's hash is the one it was written with; while it is unreleased, a deliberate change to it updates the hash here.
 */
const FROZEN: Record<string, string> = {
  '9/sqlite': 'd8bfdafcd0a6d39698d00d44b95c5a6064c341489dd4d5fc907f2dd723b145ae',
  '9/postgres': '84dede104b4ab07bb71eaab0a38803abcabc2bc166451cfbdad741a4a1f362aa',
  '12/sqlite': 'efaa30053097a6b66c8fe52b543b238f82de55de9dc555cea27863c7cfbae722',
  '12/postgres': 'efaa30053097a6b66c8fe52b543b238f82de55de9dc555cea27863c7cfbae722',
  '14/sqlite': 'ed4efdcb9425bc3507b84cc1829773f4993dac4d0a57cac9efc130d1fdca5058',
  '14/postgres': 'ed4efdcb9425bc3507b84cc1829773f4993dac4d0a57cac9efc130d1fdca5058',
};

test('migrations built from code keep the text they were released with', () => {
  const texts: Record<string, string> = {};
  for (const m of LOG_MIGRATIONS) {
    for (const dialect of ['sqlite', 'postgres'] as const) {
      const id = `${m.version}/${dialect}`;
      if (!(id in FROZEN)) continue;
      const sql = typeof m.up === 'string' ? m.up : m.up[dialect];
      texts[id] = createHash('sha256').update(sql).digest('hex');
    }
  }
  expect(texts).toEqual(FROZEN);
});

test('migration 14 adds the cache-write columns to the entries, and reasoning and cache-write sums to every rollup', () => {
  const m = LOG_MIGRATIONS.find((x) => x.version === 14)!;
  expect(m.name).toBe('gateway_log cache writes, rollups reasoning_tokens and cache_write_tokens');
  const sql = m.up as string;
  expect(sql).toContain('ALTER TABLE gateway_logs ADD COLUMN cache_write_tokens BIGINT;\nALTER TABLE gateway_logs ADD COLUMN cache_write_1h_tokens BIGINT;');
  for (const cube of ['total', 'status', 'config', 'key', 'model']) {
    expect(sql).toContain(`ALTER TABLE gateway_log_rollup_${cube} ADD COLUMN reasoning_tokens BIGINT NOT NULL DEFAULT 0`);
    expect(sql).toContain(`ALTER TABLE gateway_log_rollup_${cube} ADD COLUMN cache_write_tokens BIGINT NOT NULL DEFAULT 0`);
    // One back-fill of reasoning per level; no back-fill of cache writes (no entry stored before holds any).
    expect(sql.split(`UPDATE gateway_log_rollup_${cube} SET reasoning_tokens = s.c FROM`).length - 1).toBe(3);
  }
  expect(sql).not.toContain('SET cache_write_tokens');
});
