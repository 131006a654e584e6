import { stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { AuthInfo, Logger, PluginAPI, SecretBox, SqlClient, Target } from '../../sdk/index.js';
import { randomHex } from '../../sdk/index.js';
import { batchLineProblem, LineSplitter, lineText, type BatchLine } from './jsonl.js';
import { delay, errorFileId, LineFile, metadataOf, notRunLine, outputFileId, outputLine, retryAfterMs } from './lines.js';
import {
  activeBatches,
  cancelStaleLines,
  claimLines,
  completeLine,
  expireLines,
  getBatch,
  getFile,
  leaseBatch,
  linesPage,
  releaseLine,
  remainingLines,
  renewLeases,
  replaceLines,
  updateLeasedBatch,
  upsertFile,
  type BatchRow,
  type BatchStatus,
  type ClaimedLine,
  type LineEntry,
} from './repository.js';
import type { BatchError } from './shapes.js';
import type { FileStore } from './stores/types.js';

/** What a gateway-run batch runs with, as accepted at create time; sealed at rest (it holds provider credentials). */
export interface BatchRequest {
  /** The routing target the create call's headers or config selected (slugs left for each line to resolve). */
  target: Target;
  /** The create call's headers that matter to a request (metadata, workspace, forwarded ones, the provider key); never the gateway key. */
  headers: Record<string, string>;
  /** Who created it: lines run, are limited and are logged as this caller. */
  auth: AuthInfo | null;
}

export interface RunnerOptions {
  /** Lines in flight at once on this instance, across all batches. */
  concurrency: number;
  /** How long a claim holds without renewal; renewed every third of it while the work runs. */
  leaseMs: number;
  /** How often the queue is looked at when nothing woke the runner sooner. */
  pollMs: number;
  /** On shutdown, how long lines in flight may finish before they are aborted and handed back. */
  drainMs: number;
  /** A line claimed this many times (its instance died each time) fails instead of running again. */
  maxLineRuns: number;
  maxLineBytes: number;
  maxBatchLines: number;
}

export interface RunnerDeps {
  api: PluginAPI;
  db: () => SqlClient;
  store: () => FileStore;
  box: () => SecretBox;
  now: () => number;
  logger: Logger;
  options: RunnerOptions;
}

/** Thrown inside a transaction to roll it back when the batch moved on (cancelled) meanwhile. */
const CHANGED = new Error('the batch changed while it was validated');

interface BatchContext {
  endpoint: string;
  location: string;
  request: BatchRequest;
}

interface InFlight {
  abort: AbortController;
  batchId: string;
  line: number;
  done: Promise<void>;
}

/**
 * Runs gateway-run batches from the SQL work queue (docs/batches.md). Every
 * instance runs one; they coordinate only through the database:
 *
 * - a batch-level step (validating the input, writing the output files) is
 *   taken by leasing the batch row;
 * - lines are claimed a few at a time with a lease, in one statement, so a
 *   line has one claimer at a time; leases are renewed while the work runs,
 *   and a claim whose lease ran out (its instance died) is claimable again;
 * - a line's outcome is recorded only by the instance that still holds its
 *   claim, in the same transaction as the batch's counts, so each line has
 *   exactly one outcome and one line in the output or error file.
 */
export class BatchRunner {
  /** This instance's name in leases: random per process. */
  readonly instance = `gw-${randomHex(8)}`;
  readonly #deps: RunnerDeps;
  readonly #inFlight = new Map<string, InFlight>();
  readonly #steps = new Map<string, Promise<void>>();
  readonly #contexts = new Map<string, BatchContext>();
  #timer: NodeJS.Timeout | null = null;
  #heartbeat: NodeJS.Timeout | null = null;
  #ticking = false;
  #tick$: Promise<void> = Promise.resolve();
  #again = false;
  #stopped = false;

  constructor(deps: RunnerDeps) {
    this.#deps = deps;
  }

  /** Lines running on this instance now. */
  get inFlight(): number {
    return this.#inFlight.size;
  }

  start(): void {
    const { pollMs, leaseMs } = this.#deps.options;
    this.#timer = setInterval(() => this.wake(), pollMs);
    this.#timer.unref();
    this.#heartbeat = setInterval(() => {
      renewLeases(this.#deps.db(), this.instance, this.#deps.now() + leaseMs).catch((err: unknown) => this.#deps.logger.warn({ err }, 'batches: renewing leases failed'));
    }, Math.max(10, Math.floor(leaseMs / 3)));
    this.#heartbeat.unref();
    this.wake();
  }

  /** Looks at the queue now (a batch was created or cancelled, a line finished). */
  wake(): void {
    if (this.#stopped) return;
    if (this.#ticking) {
      this.#again = true;
      return;
    }
    this.#ticking = true;
    this.#tick$ = this.#tick()
      .catch((err: unknown) => this.#deps.logger.warn({ err }, 'batches: looking at the queue failed'))
      .finally(() => {
        this.#ticking = false;
        if (this.#again) {
          this.#again = false;
          this.wake();
        }
      });
  }

  /**
   * Stops claiming, lets lines in flight finish for up to `drainMs`, then
   * aborts the rest and hands their claims back (they run again elsewhere or
   * after a restart), and lets go of batch leases.
   */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    if (this.#timer !== null) clearInterval(this.#timer);
    if (this.#heartbeat !== null) clearInterval(this.#heartbeat);
    await this.#tick$;
    const busy = () => Promise.all([...[...this.#inFlight.values()].map((f) => f.done), ...this.#steps.values()]);
    await Promise.race([busy(), delay(this.#deps.options.drainMs)]);
    for (const f of this.#inFlight.values()) f.abort.abort();
    await Promise.race([busy(), delay(2000)]);
  }

  async #tick(): Promise<void> {
    const db = this.#deps.db();
    const { concurrency, leaseMs } = this.#deps.options;
    const now = this.#deps.now();
    for (const b of await activeBatches(db)) {
      if (this.#stopped) return;
      if (this.#steps.has(b.id)) continue;
      const leaseFree = b.lease_owner === null || b.lease_until === null || b.lease_until < now || b.lease_owner === this.instance;
      if (b.status === 'validating') {
        if (!leaseFree) continue;
        if (now >= b.expires_at) this.#step(b.id, b.status, () => this.#finish(b.id, 'validating', 'expired'));
        else this.#step(b.id, b.status, () => this.#validate(b.id));
      } else if (b.status === 'finalizing') {
        if (leaseFree) this.#step(b.id, b.status, () => this.#finish(b.id, 'finalizing', 'completed'));
      } else if (b.status === 'cancelling') {
        if (leaseFree && (await remainingLines(db, b.id, now)).live === 0) this.#step(b.id, b.status, () => this.#finish(b.id, 'cancelling', 'cancelled'));
      } else if (b.status === 'in_progress') {
        if (now >= b.expires_at) {
          // No new claims (claimLines checks the window); the lines in flight finish first, then the files are written.
          if (leaseFree && (await remainingLines(db, b.id, now)).live === 0) this.#step(b.id, b.status, () => this.#finish(b.id, 'in_progress', 'expired'));
          continue;
        }
        const free = concurrency - this.#inFlight.size;
        let claimed: ClaimedLine[] = [];
        if (free > 0) claimed = await claimLines(db, b.id, this.instance, now + leaseMs, now, free);
        if (this.#stopped) {
          // Stopped while claiming: hand them straight back, unstarted.
          for (const line of claimed) await releaseLine(db, b.id, line.line, this.instance, now, true);
          return;
        }
        for (const line of claimed) this.#runLine(b.id, line);
        if (claimed.length === 0 && leaseFree && ![...this.#inFlight.values()].some((f) => f.batchId === b.id)) {
          const left = await remainingLines(db, b.id, now);
          if (left.pending + left.live + left.stale === 0) this.#step(b.id, b.status, () => this.#finish(b.id, 'in_progress', 'completed'));
        }
      }
    }
  }

  /** Runs a batch-level step under the batch's lease, once at a time per batch on this instance. */
  #step(id: string, status: BatchStatus, work: () => Promise<void>): void {
    const { leaseMs } = this.#deps.options;
    const run = (async () => {
      const now = this.#deps.now();
      if (!(await leaseBatch(this.#deps.db(), id, status, this.instance, now + leaseMs, now))) return;
      await work();
    })()
      .catch((err: unknown) => this.#deps.logger.error({ err, batch_id: id }, `batches: a ${status} step failed; it is retried once its lease runs out`))
      .finally(() => {
        this.#steps.delete(id);
        this.wake();
      });
    this.#steps.set(id, run);
  }

  /** validating → in_progress (the lines recorded) or failed (with the errors, each naming its line). */
  async #validate(id: string): Promise<void> {
    const { db, store, now, options } = this.#deps;
    const batch = await getBatch(db(), id);
    if (batch === undefined) return;
    const file = await getFile(db(), batch.input_file_id);
    const fail = (errors: BatchError[]) =>
      updateLeasedBatch(db(), id, this.instance, 'validating', { status: 'failed', failed_at: now(), errors: JSON.stringify(errors), lease_owner: null, lease_until: null });
    if (file === undefined || file.purpose !== 'batch') {
      await fail([{ code: 'invalid_input_file', message: `The input file ${batch.input_file_id} is gone or is not a batch file.`, param: 'input_file_id', line: null }]);
      return;
    }
    const errors: BatchError[] = [];
    const entries: LineEntry[] = [];
    const seen = new Set<string>();
    const splitter = new LineSplitter(
      options.maxLineBytes,
      (line) => {
        const text = lineText(line.bytes);
        if (text === null || errors.length >= 100) return;
        let value: unknown;
        try {
          value = JSON.parse(text);
        } catch {
          errors.push({ code: 'invalid_json_line', message: `Line ${line.number} is not valid JSON.`, param: null, line: line.number });
          return;
        }
        const problem = batchLineProblem(value, seen, batch.endpoint);
        if (problem !== null) {
          errors.push({ code: 'invalid_request', message: `Line ${line.number}: ${problem.message}.`, param: problem.param, line: line.number });
          return;
        }
        entries.push({ line: line.number, custom_id: (value as BatchLine).custom_id, offset: line.offset, length: line.bytes.length });
      },
      (number) => errors.push({ code: 'line_too_long', message: `Line ${number} is longer than ${options.maxLineBytes} bytes.`, param: null, line: number }),
    );
    for await (const chunk of await store().read(file.location)) splitter.push(chunk as Buffer);
    splitter.end();
    if (entries.length > options.maxBatchLines) errors.push({ code: 'too_many_requests', message: `The file holds more than ${options.maxBatchLines} requests.`, param: 'input_file_id', line: null });
    if (errors.length === 0 && entries.length === 0) errors.push({ code: 'empty_file', message: 'The input file holds no requests.', param: 'input_file_id', line: null });
    if (errors.length > 0) {
      await fail(errors);
      return;
    }
    const at = now();
    await db()
      .transaction(async (tx) => {
        // The status moves first: a batch cancelled meanwhile rolls the lines back with it (and stays cancelling).
        const moved = await updateLeasedBatch(tx, id, this.instance, 'validating', { status: 'in_progress', in_progress_at: at, total: entries.length, lease_owner: null, lease_until: null });
        if (!moved) throw CHANGED;
        await replaceLines(tx, id, entries, at);
      })
      .catch((err: unknown) => {
        if (err !== CHANGED) throw err;
      });
  }

  /**
   * Writes the output and error files and moves the batch to its final state:
   * `completed` (through `finalizing`), `cancelled` or `expired`. Redone from
   * the start by whichever instance takes the lease after a crash: the files
   * keep their ids, and the lines are read from the table, so each appears once.
   */
  async #finish(id: string, from: BatchStatus, to: 'completed' | 'cancelled' | 'expired'): Promise<void> {
    const { db, now } = this.#deps;
    let status = from;
    if (to === 'completed' && from === 'in_progress') {
      if (!(await updateLeasedBatch(db(), id, this.instance, 'in_progress', { status: 'finalizing', finalizing_at: now() }))) return;
      status = 'finalizing';
    }
    if (to === 'expired') await expireLines(db(), id, now());
    if (to === 'cancelled') await cancelStaleLines(db(), id, now());
    const batch = await getBatch(db(), id);
    if (batch === undefined) return;
    const files = await this.#writeFiles(batch);
    const at = now();
    const set: Partial<BatchRow> = { status: to, output_file_id: files.output, error_file_id: files.errors, lease_owner: null, lease_until: null };
    if (to === 'completed') set.completed_at = at;
    else if (to === 'cancelled') set.cancelled_at = at;
    else set.expired_at = at;
    await updateLeasedBatch(db(), id, this.instance, status, set);
    this.#contexts.delete(id);
  }

  /** The output file (2xx answers) and the error file (the rest), in line order, each line once; null ids for empty ones. */
  async #writeFiles(batch: BatchRow): Promise<{ output: string | null; errors: string | null }> {
    const { db, store, now } = this.#deps;
    const tmpDir = store().tmpDir;
    const out = new LineFile(join(tmpDir, `out-${randomHex(8)}`));
    const err = new LineFile(join(tmpDir, `err-${randomHex(8)}`));
    try {
      let after = 0;
      for (;;) {
        const page = await linesPage(db(), batch.id, after, 1000);
        if (page.length === 0) break;
        for (const row of page) {
          if (row.state === 'completed' && row.result !== null) await out.write(row.result);
          else if (row.state === 'failed' && row.result !== null) await err.write(row.result);
          else await err.write(notRunLine(row.custom_id, row.state));
        }
        after = page.at(-1)!.line;
      }
      const created = now();
      const keep = async (file: LineFile, id: string): Promise<string | null> => {
        await file.close();
        if (file.lines === 0) {
          await unlink(file.path).catch(() => undefined);
          return null;
        }
        const bytes = (await stat(file.path)).size;
        await store().put(id, file.path, bytes);
        await upsertFile(db(), { id, owner: batch.owner, purpose: 'batch_output', filename: `${batch.id}_${id.endsWith('-output') ? 'output' : 'errors'}.jsonl`, bytes, line_count: file.lines, store: store().kind, location: id, created_at: created });
        return id;
      };
      return { output: await keep(out, outputFileId(batch.id)), errors: await keep(err, errorFileId(batch.id)) };
    } catch (e) {
      await Promise.all([out.discard(), err.discard()]);
      throw e;
    }
  }

  async #context(batchId: string): Promise<BatchContext> {
    const cached = this.#contexts.get(batchId);
    if (cached !== undefined) return cached;
    const { db, box } = this.#deps;
    const batch = await getBatch(db(), batchId);
    if (batch === undefined) throw new Error('the batch is gone');
    const file = await getFile(db(), batch.input_file_id);
    if (file === undefined) throw new Error('the input file is gone');
    const context: BatchContext = { endpoint: batch.endpoint, location: file.location, request: JSON.parse(box().open(batch.request, batch.id)) as BatchRequest };
    if (this.#contexts.size >= 64) this.#contexts.delete(this.#contexts.keys().next().value!);
    this.#contexts.set(batchId, context);
    return context;
  }

  #runLine(batchId: string, claimed: ClaimedLine): void {
    const key = `${batchId}:${claimed.line}`;
    const abort = new AbortController();
    const entry = { abort, batchId, line: claimed.line, done: Promise.resolve() };
    this.#inFlight.set(key, entry);
    entry.done = this.#line(batchId, claimed, abort.signal)
      .catch((err: unknown) => {
        this.#deps.logger.warn({ err, batch_id: batchId, line: claimed.line }, 'batches: a line could not run; it is handed back');
        return releaseLine(this.#deps.db(), batchId, claimed.line, this.instance, this.#deps.now() + 1000, false).catch(() => undefined);
      })
      .finally(() => {
        this.#inFlight.delete(key);
        this.wake();
      });
  }

  /** One line through the gateway's whole lifecycle, its outcome recorded once. */
  async #line(batchId: string, claimed: ClaimedLine, signal: AbortSignal): Promise<void> {
    const { api, db, store, now, options } = this.#deps;
    const me = this.instance;
    if (claimed.runs > options.maxLineRuns) {
      const error = { code: 'batch_line_abandoned', message: `The line was started ${claimed.runs - 1} times without finishing (its gateway instance stopped each time).` };
      await completeLine(db(), batchId, claimed.line, me, false, outputLine(claimed.custom_id, null, error));
      return;
    }
    const context = await this.#context(batchId);
    const input = JSON.parse((await store().readRange(context.location, Number(claimed.byte_offset), Number(claimed.byte_length))).toString('utf8')) as BatchLine;
    const headers = { ...context.request.headers, 'x-gateway-metadata': JSON.stringify({ ...metadataOf(context.request.headers), batch_id: batchId, batch_custom_id: input.custom_id }) };
    const answer = await api.runRequest({ path: context.endpoint, headers, body: input.body, auth: context.request.auth, target: context.request.target, signal });
    if (signal.aborted) {
      // Shutting down: the claim goes back, and the line runs again after a restart or on another instance.
      await releaseLine(db(), batchId, claimed.line, me, now(), false);
      return;
    }
    if (answer.attempts === 0 && (answer.status === 429 || answer.status === 503)) {
      // Refused by the gateway itself (a rate limit, a budget, an open breaker) before any upstream call:
      // the line waits for the hint and runs later, rather than failing.
      await releaseLine(db(), batchId, claimed.line, me, now() + retryAfterMs(answer.headers['retry-after']), true);
      return;
    }
    let body: unknown = answer.body.toString('utf8');
    try {
      body = JSON.parse(body as string);
    } catch {
      /* kept as text */
    }
    const ok = answer.status >= 200 && answer.status < 300;
    const response = { status_code: answer.status, request_id: answer.traceId, body };
    const envelope = (body as { error?: { code?: unknown; type?: unknown; message?: unknown } } | null)?.error;
    const error = ok ? null : { code: String(envelope?.code ?? envelope?.type ?? `http_${answer.status}`), message: String(envelope?.message ?? `The request failed with status ${answer.status}.`) };
    await completeLine(db(), batchId, claimed.line, me, ok, outputLine(input.custom_id, response, error));
  }
}

