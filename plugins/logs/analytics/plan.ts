import type { GroupBy, LogFilters } from '../store/repository.js';
import { CUBES, LEVELS, type Cube } from './cubes.js';

/*
 * Which rollup answers a query, and which stretches of time come from it and
 * which from the log's rows. A range is cut into whole days, hours and minutes
 * (read from the rollups) and what is left at its edges, less than a minute on
 * each side (read from the rows), so every answer is exact, whatever the range.
 */

/** A stretch of time read at one level (a rollup level in ms, or 0 for the rows). */
export interface Piece {
  level: number;
  from: number;
  to: number;
}

/** The columns of a rollup each filter needs; a filter not here (trace, metadata, MCP method or tool) needs the rows. */
const FILTER_COLUMNS: Partial<Record<keyof LogFilters, readonly string[]>> = {
  kind: ['kind'],
  workspace: ['workspace_id'],
  status: ['status'],
  provider: ['provider', 'provider_requested'],
  model: ['model', 'model_requested'],
  apiKey: ['api_key_id'],
  limitPolicy: ['limit_policy_id'],
  config: ['config_id'],
  prompt: ['prompt_id'],
  promptVersion: ['prompt_version'],
  cacheStatus: ['cache_status'],
  frontDoor: ['front_door'],
  route: ['route'],
};
const TIME = new Set<keyof LogFilters>(['from', 'to']);

/** Per groupBy: the rollup columns it needs and its expression over them ('' stands for null). */
export const ROLLUP_GROUPS: Record<GroupBy, { columns: readonly string[]; sql: string }> = {
  ai_service: { columns: ['provider'], sql: "NULLIF(provider, '')" },
  provider: { columns: ['provider', 'provider_requested'], sql: "COALESCE(NULLIF(provider_requested, ''), NULLIF(provider, ''))" },
  model: { columns: ['model', 'model_requested'], sql: "COALESCE(NULLIF(model, ''), NULLIF(model_requested, ''))" },
  status_code: { columns: ['status'], sql: 'status' },
  front_door: { columns: ['front_door'], sql: "NULLIF(front_door, '')" },
  api_key: { columns: ['api_key_id'], sql: "NULLIF(api_key_id, '')" },
  config: { columns: ['config_id'], sql: "NULLIF(config_id, '')" },
  workspace: { columns: ['workspace_id'], sql: "NULLIF(workspace_id, '')" },
  prompt: { columns: ['prompt_id'], sql: "NULLIF(prompt_id, '')" },
};

/** The narrowest cube holding every column the filters and the grouping need, or null when the rows must answer. */
export function cubeFor(filters: LogFilters, groupBy: GroupBy | null): Cube | null {
  const need = new Set<string>(groupBy === null ? [] : ROLLUP_GROUPS[groupBy].columns);
  for (const [name, value] of Object.entries(filters) as [keyof LogFilters, unknown][]) {
    if (value === undefined || TIME.has(name)) continue;
    const columns = FILTER_COLUMNS[name];
    if (columns === undefined) return null;
    for (const c of columns) need.add(c);
  }
  return CUBES.find((c) => [...need].every((column) => c.dims.some((d) => d.column === column))) ?? null;
}

/**
 * The rollup levels a query may read: those whose buckets each fall in one of the query's buckets
 * (the level divides the bucket width, and the buckets start on the level's boundaries). Null
 * `bucketMs`: one bucket, every level.
 */
export function levelsFor(origin: number, bucketMs: number | null): number[] {
  return LEVELS.filter((level) => bucketMs === null || (bucketMs % level === 0 && origin % level === 0));
}

/** [from, to) as whole buckets of the coarsest levels that fit, and the rows' stretches left at the edges. */
export function cover(from: number, to: number, levels: readonly number[]): Piece[] {
  const out: Piece[] = [];
  const walk = (s: number, e: number, i: number) => {
    if (s >= e) return;
    if (i === levels.length) {
      out.push({ level: 0, from: s, to: e });
      return;
    }
    const level = levels[i]!;
    const a = Math.ceil(s / level) * level;
    const b = Math.floor(e / level) * level;
    if (a >= b) return walk(s, e, i + 1);
    walk(s, a, i + 1);
    out.push({ level, from: a, to: b });
    walk(b, e, i + 1);
  };
  walk(from, to, 0);
  return out;
}

/** Adjacent or overlapping stretches joined, in time order. */
export function merged(pieces: readonly Piece[]): Piece[] {
  const sorted = [...pieces].sort((a, b) => a.from - b.from);
  const out: Piece[] = [];
  for (const p of sorted) {
    const last = out[out.length - 1];
    if (last !== undefined && p.from <= last.to) last.to = Math.max(last.to, p.to);
    else out.push({ ...p });
  }
  return out;
}
