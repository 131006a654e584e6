import type { SqlClient } from '../../../sdk/index.js';
import { BodySegments } from '../bodies/segments.js';
import type { LogEntry } from '../entry.js';
import { BODY_COLUMNS, bodyOf, json } from './sql.js';

/*
 * Where an entry's bodies and headers live (what only a log's detail shows):
 * out of the log row, so the rows the lists, filters and scans read stay
 * narrow. With an SQLite file, compressed segment files beside it
 * (bodies/segments.ts); otherwise (PostgreSQL, an SQLite database in memory)
 * a side table, `gateway_log_bodies`, whose large values PostgreSQL keeps
 * compressed out of line (TOAST). The row's `body_ref` says which: a segment
 * reference, `t` for the table, or null for an entry with no body (and for
 * rows written before, which keep theirs in their own columns).
 */

export type BodyStore = { kind: 'table' } | { kind: 'segments'; segments: BodySegments };

/** The body store of a log store: segments in `dir` when given (an SQLite file), else the side table. */
export function bodyStore(dir: string | null): BodyStore {
  return dir === null ? { kind: 'table' } : { kind: 'segments', segments: new BodySegments(dir) };
}

const TABLE_REF = 't';

/** A JSON column given as JSON text already (the price) or as a value. */
const jsonText = (value: unknown): string | null => (typeof value === 'string' ? value : json(value));

/** Keeps the entries' bodies (in the transaction `tx` for the side table); returns each entry's `body_ref`. */
export async function writeBodies(store: BodyStore, tx: SqlClient, entries: readonly LogEntry[]): Promise<(string | null)[]> {
  const bodies = entries.map(bodyOf);
  if (store.kind === 'segments') {
    const kept = bodies.filter((b) => b !== null);
    if (kept.length === 0) return bodies.map(() => null);
    const refs = store.segments.append(kept);
    let next = 0;
    return bodies.map((b) => (b === null ? null : refs[next++]!));
  }
  for (let i = 0; i < entries.length; i++) {
    const b = bodies[i];
    if (b === null || b === undefined) continue;
    await tx.run('INSERT INTO gateway_log_bodies (id, created_at, request_headers, hook_results, request_body, response_body, routing, price) VALUES (?, ?, ?, ?, ?, ?, ?, ?)', [
      entries[i]!.id, entries[i]!.created_at, json(b[0]), json(b[1]), b[2] ?? null, b[3] ?? null, json(b[4]), jsonText(b[5]),
    ]);
  }
  return bodies.map((b) => (b === null ? null : TABLE_REF));
}

/** Puts a stored row's bodies back into it, as its own columns would hold them (JSON columns as text). */
export async function readBodies(store: BodyStore, client: SqlClient, row: Record<string, unknown>): Promise<void> {
  const ref = row.body_ref;
  delete row.body_ref;
  if (ref === null || ref === undefined) return;
  if (ref === TABLE_REF) {
    const stored = await client.get<Record<string, unknown>>(`SELECT ${BODY_COLUMNS.join(', ')} FROM gateway_log_bodies WHERE id = ?`, [row.id]);
    for (const c of BODY_COLUMNS) row[c] = stored?.[c] ?? null;
    return;
  }
  const body = store.kind === 'segments' ? (store.segments.read(String(ref)) as unknown[] | null) : null;
  row.request_headers = json(body?.[0]);
  row.hook_results = json(body?.[1]);
  row.request_body = body?.[2] ?? null;
  row.response_body = body?.[3] ?? null;
  row.routing = json(body?.[4]);
  // Segments written before the price was kept have five columns: no price. It is kept as JSON text since #48 (an object before).
  row.price = jsonText(body?.[5]);
}
