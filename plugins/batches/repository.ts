import type { SqlClient } from '../../sdk/index.js';

/** Rows as stored; times are epoch ms. */
export interface FileRow {
  id: string;
  owner: string;
  purpose: string;
  filename: string;
  bytes: number;
  line_count: number;
  store: string;
  location: string;
  created_at: number;
}

export type BatchStatus = 'validating' | 'failed' | 'in_progress' | 'finalizing' | 'completed' | 'expired' | 'cancelling' | 'cancelled';

/** The times a batch's state changed, epoch ms in a row and Unix seconds in the Batch object; null until it happens. */
export type BatchTime = 'in_progress_at' | 'finalizing_at' | 'completed_at' | 'failed_at' | 'expired_at' | 'cancelling_at' | 'cancelled_at';

export interface BatchRow extends Record<BatchTime, number | null> {
  id: string;
  owner: string;
  endpoint: string;
  input_file_id: string;
  completion_window: string;
  status: BatchStatus;
  created_at: number;
  expires_at: number;
  errors: string | null;
  output_file_id: string | null;
  error_file_id: string | null;
  total: number;
  completed: number;
  failed: number;
  metadata: string | null;
  request: string;
  lease_owner: string | null;
  lease_until: number | null;
}

/**
 * A line's state: `pending` (waiting, or handed back), `running` (claimed by
 * `lease_owner` until `lease_until`; past it, claimable again), then one of
 * `completed`, `failed` (with `result`, its output line), `cancelled` or
 * `expired` (never started; their error line is made when the files are written).
 */
export type LineState = 'pending' | 'running' | 'completed' | 'failed' | 'cancelled' | 'expired';

export interface ClaimedLine {
  line: number;
  custom_id: string;
  byte_offset: number;
  byte_length: number;
  runs: number;
}

export interface LineEntry {
  line: number;
  custom_id: string;
  offset: number;
  length: number;
}

/** Batches whose work is not over: the runner's to do list. */
export const ACTIVE_STATUSES: readonly BatchStatus[] = ['validating', 'in_progress', 'finalizing', 'cancelling'];

const FILE_COLUMNS = 'id, owner, purpose, filename, bytes, line_count, store, location, created_at';

export async function insertFile(db: SqlClient, f: FileRow): Promise<void> {
  await db.run(`INSERT INTO gw_files (${FILE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, [
    f.id,
    f.owner,
    f.purpose,
    f.filename,
    f.bytes,
    f.line_count,
    f.store,
    f.location,
    f.created_at,
  ]);
}

export function getFile(db: SqlClient, id: string): Promise<FileRow | undefined> {
  return db.get<FileRow>(`SELECT ${FILE_COLUMNS} FROM gw_files WHERE id = ?`, [id]);
}

/** The condition on the owner column for one or more owners. */
const ownerIn = (owners: readonly string[]) => (owners.length === 1 ? 'owner = ?' : `owner IN (${owners.map(() => '?').join(', ')})`);

/** A page of an owner's files by id (ids sort by creation time), one more than `limit` to tell whether more follow. */
export function listFiles(db: SqlClient, owners: readonly string[], q: { purpose?: string; after?: string; limit: number; order: 'asc' | 'desc' }): Promise<FileRow[]> {
  const where = [ownerIn(owners)];
  const params: unknown[] = [...owners];
  if (q.purpose !== undefined) {
    where.push('purpose = ?');
    params.push(q.purpose);
  }
  if (q.after !== undefined) {
    where.push(q.order === 'desc' ? 'id < ?' : 'id > ?');
    params.push(q.after);
  }
  params.push(q.limit + 1);
  return db.all<FileRow>(`SELECT ${FILE_COLUMNS} FROM gw_files WHERE ${where.join(' AND ')} ORDER BY id ${q.order === 'desc' ? 'DESC' : 'ASC'} LIMIT ?`, params);
}

export async function deleteFile(db: SqlClient, id: string): Promise<boolean> {
  return (await db.run('DELETE FROM gw_files WHERE id = ?', [id])).changes === 1;
}

/** Whether a batch that still reads its input uses this file. */
export async function fileInUse(db: SqlClient, fileId: string): Promise<boolean> {
  const row = await db.get(`SELECT id FROM gw_batches WHERE input_file_id = ? AND status IN ('validating', 'in_progress', 'cancelling', 'finalizing') LIMIT 1`, [fileId]);
  return row !== undefined;
}

const BATCH_COLUMNS =
  'id, owner, endpoint, input_file_id, completion_window, status, created_at, in_progress_at, expires_at, finalizing_at, completed_at, failed_at, expired_at, ' +
  'cancelling_at, cancelled_at, errors, output_file_id, error_file_id, total, completed, failed, metadata, request, lease_owner, lease_until';

export async function insertBatch(db: SqlClient, b: BatchRow): Promise<void> {
  const names = BATCH_COLUMNS.split(', ');
  await db.run(`INSERT INTO gw_batches (${BATCH_COLUMNS}) VALUES (${names.map(() => '?').join(', ')})`, names.map((n) => b[n as keyof BatchRow]));
}

export function getBatch(db: SqlClient, id: string): Promise<BatchRow | undefined> {
  return db.get<BatchRow>(`SELECT ${BATCH_COLUMNS} FROM gw_batches WHERE id = ?`, [id]);
}

/** A page of an owner's batches, newest first, one more than `limit`. */
export function listBatches(db: SqlClient, owners: readonly string[], q: { after?: string; limit: number }): Promise<BatchRow[]> {
  const params: unknown[] = [...owners];
  let where = ownerIn(owners);
  if (q.after !== undefined) {
    where += ' AND id < ?';
    params.push(q.after);
  }
  params.push(q.limit + 1);
  return db.all<BatchRow>(`SELECT ${BATCH_COLUMNS} FROM gw_batches WHERE ${where} ORDER BY id DESC LIMIT ?`, params);
}

/**
 * Cancels a batch that is still validating or running: it moves to
 * `cancelling`, and in the same transaction every line not yet started
 * becomes `cancelled`, so none of them can be claimed afterwards. Lines in
 * flight finish; the runner then writes the files and marks it `cancelled`.
 * False when the batch was in no state to cancel.
 */
export function cancelBatch(db: SqlClient, id: string, now: number): Promise<boolean> {
  return db.transaction(async (tx) => {
    const moved = await tx.run(`UPDATE gw_batches SET status = 'cancelling', cancelling_at = ? WHERE id = ? AND status IN ('validating', 'in_progress')`, [now, id]);
    if (moved.changes !== 1) return false;
    await tx.run(`UPDATE gw_batch_lines SET state = 'cancelled' WHERE batch_id = ? AND state = 'pending'`, [id]);
    return true;
  });
}

export interface ActiveBatch {
  id: string;
  status: BatchStatus;
  expires_at: number;
  lease_owner: string | null;
  lease_until: number | null;
}

/** Every batch with work left, oldest first. */
export function activeBatches(db: SqlClient): Promise<ActiveBatch[]> {
  return db.all<ActiveBatch>(
    `SELECT id, status, expires_at, lease_owner, lease_until FROM gw_batches WHERE status IN (${ACTIVE_STATUSES.map(() => '?').join(', ')}) ORDER BY id`,
    ACTIVE_STATUSES,
  );
}

/**
 * Takes the batch-level lease (validation, writing the files) when it is
 * free, expired, or already ours; true when this instance holds it now.
 */
export async function leaseBatch(db: SqlClient, id: string, status: BatchStatus, me: string, until: number, now: number): Promise<boolean> {
  const r = await db.run('UPDATE gw_batches SET lease_owner = ?, lease_until = ? WHERE id = ? AND status = ? AND (lease_owner IS NULL OR lease_until < ? OR lease_owner = ?)', [
    me,
    until,
    id,
    status,
    now,
    me,
  ]);
  return r.changes === 1;
}

/** Extends every lease this instance holds (lines and batches), so work that outlasts one lease is not taken over. */
export async function renewLeases(db: SqlClient, me: string, until: number): Promise<void> {
  await db.run(`UPDATE gw_batch_lines SET lease_until = ? WHERE lease_owner = ? AND state = 'running'`, [until, me]);
  await db.run('UPDATE gw_batches SET lease_until = ? WHERE lease_owner = ?', [until, me]);
}

/** Lines left: waiting, running under a live lease, and running under an expired one (in flight on an instance that died). */
export async function remainingLines(db: SqlClient, batchId: string, now: number): Promise<{ pending: number; live: number; stale: number }> {
  const row = await db.get<{ pending: number | null; live: number | null; stale: number | null }>(
    `SELECT SUM(CASE WHEN state = 'pending' THEN 1 ELSE 0 END) AS pending,
            SUM(CASE WHEN state = 'running' AND lease_until >= ? THEN 1 ELSE 0 END) AS live,
            SUM(CASE WHEN state = 'running' AND lease_until < ? THEN 1 ELSE 0 END) AS stale
     FROM gw_batch_lines WHERE batch_id = ? AND state IN ('pending', 'running')`,
    [now, now, batchId],
  );
  return { pending: Number(row?.pending ?? 0), live: Number(row?.live ?? 0), stale: Number(row?.stale ?? 0) };
}

/**
 * Claims up to `limit` lines of a running batch, lowest line first: pending
 * ones whose `not_before` passed, and running ones whose lease expired. One
 * statement, so a line goes to one claimer: on PostgreSQL the candidate rows
 * are locked with SKIP LOCKED (another instance's concurrent claim takes
 * others); SQLite runs one writer at a time. Nothing is claimed once the
 * batch is no longer `in_progress` or its window passed.
 */
export function claimLines(db: SqlClient, batchId: string, me: string, until: number, now: number, limit: number): Promise<ClaimedLine[]> {
  const lock = db.dialect === 'postgres' ? ' FOR UPDATE SKIP LOCKED' : '';
  return db.all<ClaimedLine>(
    `UPDATE gw_batch_lines SET state = 'running', lease_owner = ?, lease_until = ?, runs = runs + 1
     WHERE batch_id = ? AND line IN (
       SELECT line FROM gw_batch_lines
       WHERE batch_id = ? AND not_before <= ? AND (state = 'pending' OR (state = 'running' AND lease_until < ?))
         AND EXISTS (SELECT 1 FROM gw_batches WHERE id = ? AND status = 'in_progress' AND expires_at > ?)
       ORDER BY line LIMIT ?${lock})
     RETURNING line, custom_id, byte_offset, byte_length, runs`,
    [me, until, batchId, batchId, now, now, batchId, now, limit],
  );
}

/**
 * Records a line's outcome, once: only while this instance still holds its
 * claim (a claim that expired and went to another instance records nothing
 * here), and the batch's counts move in the same transaction.
 */
export function completeLine(db: SqlClient, batchId: string, line: number, me: string, ok: boolean, result: string): Promise<boolean> {
  return db.transaction(async (tx) => {
    const r = await tx.run(`UPDATE gw_batch_lines SET state = ?, result = ?, lease_owner = NULL, lease_until = NULL WHERE batch_id = ? AND line = ? AND lease_owner = ? AND state = 'running'`, [
      ok ? 'completed' : 'failed',
      result,
      batchId,
      line,
      me,
    ]);
    if (r.changes !== 1) return false;
    await tx.run(`UPDATE gw_batches SET ${ok ? 'completed = completed + 1' : 'failed = failed + 1'} WHERE id = ?`, [batchId]);
    return true;
  });
}

/** Hands a claimed line back unstarted (deferred by a rate limit until `notBefore`, or the runner stopping). */
export async function releaseLine(db: SqlClient, batchId: string, line: number, me: string, notBefore: number, unrun: boolean): Promise<void> {
  await db.run(
    `UPDATE gw_batch_lines SET state = 'pending', lease_owner = NULL, lease_until = NULL, not_before = ?${unrun ? ', runs = runs - 1' : ''}
     WHERE batch_id = ? AND line = ? AND lease_owner = ? AND state = 'running'`,
    [notBefore, batchId, line, me],
  );
}

/** The lines of a validated batch, replacing any a crashed validation left; in the caller's transaction. */
export async function replaceLines(tx: SqlClient, batchId: string, entries: readonly LineEntry[], now: number): Promise<void> {
  await tx.run('DELETE FROM gw_batch_lines WHERE batch_id = ?', [batchId]);
  const CHUNK = 400;
  for (let i = 0; i < entries.length; i += CHUNK) {
    const part = entries.slice(i, i + CHUNK);
    const params: unknown[] = [];
    for (const e of part) params.push(batchId, e.line, e.custom_id, e.offset, e.length, 'pending', 0, now);
    await tx.run(
      `INSERT INTO gw_batch_lines (batch_id, line, custom_id, byte_offset, byte_length, state, runs, not_before) VALUES ${part.map(() => '(?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}`,
      params,
    );
  }
}

/** One page of a batch's lines in line order, for writing its files. */
export function linesPage(db: SqlClient, batchId: string, afterLine: number, limit: number): Promise<Array<{ line: number; custom_id: string; state: LineState; result: string | null }>> {
  return db.all(`SELECT line, custom_id, state, result FROM gw_batch_lines WHERE batch_id = ? AND line > ? ORDER BY line LIMIT ?`, [batchId, afterLine, limit]);
}

/** Lines that will never run (the window passed): pending ones, and running ones whose claim expired. */
export async function expireLines(db: SqlClient, batchId: string, now: number): Promise<void> {
  await db.run(`UPDATE gw_batch_lines SET state = 'expired', lease_owner = NULL, lease_until = NULL WHERE batch_id = ? AND (state = 'pending' OR (state = 'running' AND lease_until < ?))`, [
    batchId,
    now,
  ]);
}

/** Lines of a cancelled batch whose claim expired (in flight on an instance that died): they will not run again. */
export async function cancelStaleLines(db: SqlClient, batchId: string, now: number): Promise<void> {
  await db.run(`UPDATE gw_batch_lines SET state = 'cancelled', lease_owner = NULL, lease_until = NULL WHERE batch_id = ? AND state = 'running' AND lease_until < ?`, [batchId, now]);
}

/** Sets columns of a batch this instance holds the lease of, moving it from `from`; false when it no longer holds it or the status moved. */
export async function updateLeasedBatch(db: SqlClient, id: string, me: string, from: BatchStatus, set: Partial<BatchRow>): Promise<boolean> {
  const names = Object.keys(set);
  const r = await db.run(`UPDATE gw_batches SET ${names.map((n) => `${n} = ?`).join(', ')} WHERE id = ? AND lease_owner = ? AND status = ?`, [
    ...names.map((n) => set[n as keyof BatchRow]),
    id,
    me,
    from,
  ]);
  return r.changes === 1;
}

/** Replaces a file row (the output files of a batch whose writing is redone after a crash keep their ids). */
export async function upsertFile(db: SqlClient, f: FileRow): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.run('DELETE FROM gw_files WHERE id = ?', [f.id]);
    await insertFile(tx, f);
  });
}
