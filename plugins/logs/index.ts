import * as v from 'valibot';
import {
  bundledPricing,
  captureResponses,
  DEFAULT_SCAN_LIMIT,
  type GatewayPlugin,
  LOG_STORE,
  type LogStoreStatus,
  migrate,
  parseOptions,
  pricingOf,
  PRICING,
  type PricingTable,
  requestSummary,
  type ServiceToken,
  type SqlStore,
  withoutUserInfo,
  STAGES,
  TENANCY,
  tenantOf,
  knownTenant,
  NO_TENANT,
  type RequestContext,
} from '../../sdk/index.js';
import { buildEntry, DEFAULT_HOUSEKEEPING_ROUTES, entrySize, headLength, type CaptureMode, type LogEntry } from './entry.js';
import { finishEntry, type FinishOptions } from './finish.js';
import { BatchQueue, type LogSink } from './queue.js';
import { LOG_MIGRATIONS, LOGS_NAMESPACE } from './store/migrations.js';
import type { LogReader } from './reader.js';
import { bodyStore } from './store/bodies.js';
import { LogRepository } from './store/repository.js';
import { ReaderPool } from './thread/readers.js';
import { ThreadSink } from './thread/sink.js';

export const PLUGIN_NAME = 'log-store';


export type { EntryKind, LogEntry } from './entry.js';
export { DEFAULT_HOUSEKEEPING_ROUTES, ENTRY_KINDS } from './entry.js';
export type { QueueStats } from './queue.js';
export { LogRepository } from './store/repository.js';
export type { LogReader } from './reader.js';

/** What the log store offers: the SDK's `LogStoreStatus` (read by the metrics), and to its own package the tables and retention. */
export interface LogStoreService extends LogStoreStatus {
  /** The tables, once the store is open (from `onReady` on). */
  repository(): LogRepository;
  /** Runs the retention clean-up now; returns entries deleted. */
  applyRetention(): Promise<number>;
  /** Where the routes read: the reader threads with an SQLite file, a read replica when the store has one, else the store's client. */
  reader(): LogReader;
  /** How far behind the writes {@link reader} reads, ms (a read replica's lag), or null when it reads what is written. */
  readLagMs(): Promise<number | null>;
  /** The time limit of one analytics query, ms (`queryTimeoutMs`). */
  readonly queryTimeoutMs: number;
}

/** The SDK's `LOG_STORE` token, typed with everything the log store offers (for this package's log API). */
export const LOG_STORE_SERVICE = LOG_STORE as ServiceToken<LogStoreService>;

const int = (min: number) => v.pipe(v.number(), v.integer(), v.minValue(min, `must be an integer of at least ${min}`));

const OptionsSchema = v.strictObject({
  /** Name of the SQL store in `api.stores` (the `sqlite` or `postgres` plugin, listed before this one). */
  store: v.optional(v.string(), 'sql'),
  /** Request and response bodies: `full` (up to `scanLimitBytes`), `truncated` at `captureBytes`, or `off`. Credentials are always redacted. */
  capture: v.optional(v.picklist(['full', 'truncated', 'off'], 'must be full, truncated or off'), 'truncated'),
  /** Bytes kept of each body in `truncated` mode. */
  captureBytes: v.optional(int(1), 16 * 1024),
  /** Bytes of a response looked at: a stream is assembled from at most this much; `full` bodies stop here. */
  scanLimitBytes: v.optional(int(4096), DEFAULT_SCAN_LIMIT),
  /** Entries held in memory at most (waiting and being written); beyond, new entries are dropped and counted. */
  queueMaxEntries: v.optional(int(1), 10_000),
  /** Bytes held in memory at most (bodies dominate); beyond, new entries are dropped and counted. */
  queueMaxBytes: v.optional(int(1024), 64 * 1024 * 1024),
  /**
   * Where entries are finished and written: `thread`, a worker thread with its own connection (SQLite
   * files only); `inline`, on the event loop through the store's client; `auto` (default), the thread
   * whenever the store is an SQLite file, else inline (PostgreSQL writes are asynchronous already).
   */
  writer: v.optional(v.picklist(['auto', 'thread', 'inline'], 'must be auto, thread or inline'), 'auto'),
  /** Entries per write transaction; a write starts as soon as this many wait. */
  batchSize: v.optional(int(1), 500),
  /** A write starts at least this often while entries wait, in ms. Short, so entries leave the main heap young. */
  flushIntervalMs: v.optional(int(1), 100),
  /** Attempts at writing one batch before it is dropped (counted as `write_failed`). */
  maxWriteAttempts: v.optional(int(1), 3),
  /**
   * Threads reading the log for its routes when the store is an SQLite file, so no query runs on the
   * event loop; started the first time one is needed. 0: reads run on the store's own connection.
   */
  readers: v.optional(int(0), 2),
  /**
   * The longest an analytics query (groups, time series) may run, in ms; past it the route answers 503
   * `query_timeout`. Checked between the query's statements, each of which reads a bounded stretch of time.
   */
  queryTimeoutMs: v.optional(int(100), 15_000),
  /** Entries older than this many days are deleted in the background; 0 keeps everything. */
  retentionDays: v.optional(v.pipe(v.number(), v.minValue(0, 'must be at least 0')), 30),
  /**
   * Hour and day rollups (what the analytics routes read) are kept this many days, past the entries
   * themselves, so analytics reach further back than the log; 0 keeps them forever. Never less than
   * `retentionDays`.
   */
  rollupRetentionDays: v.optional(v.pipe(v.number(), v.minValue(0, 'must be at least 0')), 400),
  /** Minute rollups are kept this many hours (ranges older than that read their minutes from the entries). */
  minuteRollupHours: v.optional(v.pipe(v.number(), v.minValue(1, 'must be at least 1')), 48),
  /** How often the retention clean-up runs, in ms. */
  retentionIntervalMs: v.optional(int(1000), 60 * 60 * 1000),
  /** At most one warning about dropped entries (and one about failed writes) per this many ms. */
  warnIntervalMs: v.optional(int(0), 60_000),
  /** On close, how long writing what is left may take, in ms; what remains after is counted as dropped. */
  closeTimeoutMs: v.optional(int(0), 10_000),
  /** Request paths not logged (e.g. `/health`, `/metrics`). Default: none, every request is logged. */
  skipPaths: v.optional(v.array(v.string()), []),
  /** The server's default config id, recorded as `config_id` for provider requests that send no `x-gateway-config`. */
  defaultConfigId: v.optional(v.string()),
  /**
   * Names of the routes whose requests are stored with `kind: "housekeeping"`, which the analytics routes
   * leave out unless asked (docs/logs.md, "Housekeeping traffic"). Replaces the default list.
   */
  housekeepingRoutes: v.optional(v.array(v.pipe(v.string(), v.minLength(1, 'must be a route name'))), [...DEFAULT_HOUSEKEEPING_ROUTES]),
});

export type LogStoreOptions = v.InferInput<typeof OptionsSchema>;

/**
 * The durable log sink: every finished request (proxied and internal ones
 * included) becomes one entry in the `gateway_logs` table of the SQL store.
 * Entries are queued in memory (bounded) and written in batches, one
 * transaction each, off the request path; with an SQLite file, redaction and
 * the inserts run on a writer thread. The queue is flushed on close.
 * See docs/logs.md.
 */
export function logStore(options: LogStoreOptions = {}): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, options);
  const capture = opts.capture as CaptureMode;
  const finishOptions: FinishOptions = { capture, captureBytes: opts.captureBytes, scanLimit: opts.scanLimitBytes };
  const entryOptions = { ...finishOptions, defaultConfigId: opts.defaultConfigId ?? null, housekeeping: new Set(opts.housekeepingRoutes), workspaceOf: actingWorkspace };
  const skip = new Set(opts.skipPaths);
  return {
    name: PLUGIN_NAME,
    // The price list for costs (`pricingOf`), the bundled one without the pricing plugin.
    uses: [PRICING, TENANCY],
    state: [
      { name: 'entries', scope: 'workspace', keyedBy: "Request logs, their rollups and their metadata index: each row carries the workspace; a workspace's reads, existence checks and query bounds run under it." },
    ],
    apply(api) {
      let repository: LogRepository | null = null;
      let pricing: PricingTable = bundledPricing();
      let retentionTimer: NodeJS.Timeout | null = null;
      let firstRetention: NodeJS.Timeout | null = null;
      let closed = false;
      let retentionRunning: Promise<number> | null = null;
      let failedAt = -Infinity;

      // Credential fields of a stored inline config, besides those the log's name rule catches: every declared one, and its aliases.
      const credentials = api.targetFields.credentials();
      const aliases = [...api.targetFields.aliases()].filter(([, name]) => credentials.has(name)).map(([alias]) => alias);
      const finish: FinishOptions = { ...finishOptions, credentialFields: [...credentials, ...aliases] };

      // The writer is chosen now, from the store as its plugin (listed before this one) declared it.
      const declared = api.stores.get(opts.store) as SqlStore | undefined;
      const file = declared?.dialect === 'sqlite' ? declared.file : undefined;
      if (opts.writer === 'thread' && file === undefined) {
        const what = declared === undefined ? 'not loaded before it' : declared.dialect === 'sqlite' ? 'in memory' : declared.dialect;
        throw new Error(`${PLUGIN_NAME}: writer "thread" needs an SQLite file store; "${opts.store}" is ${what}`);
      }
      const bounds = { maxEntries: opts.queueMaxEntries, maxBytes: opts.queueMaxBytes, batchSize: opts.batchSize, maxWriteAttempts: opts.maxWriteAttempts, warnIntervalMs: opts.warnIntervalMs, logger: api.logger };
      // Bodies and headers out of the rows: segment files beside an SQLite file, else a side table (store/bodies.ts).
      const bodiesDir = file === undefined ? null : `${file}.bodies`;
      const thread = opts.writer !== 'inline' && file !== undefined ? new ThreadSink({ ...bounds, file, bodiesDir: bodiesDir!, finish, flushIntervalMs: opts.flushIntervalMs, retryDelayMs: opts.flushIntervalMs }) : null;
      const queue: LogSink =
        thread ??
        new BatchQueue<LogEntry>({
          ...bounds,
          flushIntervalMs: opts.flushIntervalMs,
          write: (batch) => repository!.insert(batch.map((e) => finishEntry(e, finish, withoutUserInfo))),
        });

      const applyRetention = async (): Promise<number> => {
        if (repository === null || closed) return 0;
        const now = Date.now();
        const before = opts.retentionDays === 0 ? null : now - opts.retentionDays * 86_400_000;
        // Hour rollups never go before the entries do: the list looks a filter up in them (store/repository.ts, list).
        const rollupDays = opts.rollupRetentionDays === 0 || opts.retentionDays === 0 ? 0 : Math.max(opts.rollupRetentionDays, opts.retentionDays);
        const rollups = { minutesBefore: now - opts.minuteRollupHours * 3_600_000, before: rollupDays === 0 ? null : now - rollupDays * 86_400_000 };
        // With the writer thread, the deletes run there too: no SQLite statement on the event loop.
        retentionRunning ??= (thread !== null ? thread.deleteBefore(before, rollups) : repository.deleteBefore(before, rollups)).finally(() => {
          retentionRunning = null;
        });
        return retentionRunning;
      };

      /** The repository on the read replica, when the SQL store has one; and that store (for its lag). */
      let replica: LogRepository | null = null;
      let sqlStore: SqlStore | null = null;
      // Reads off the event loop: threads of their own on the SQLite file (WAL: they never wait for the writer).
      const readers = file !== undefined && opts.readers > 0 ? new ReaderPool({ file, bodiesDir: bodiesDir!, cacheKiB: 8000 }, opts.readers) : null;

      const service: LogStoreService = {
        repository() {
          if (repository === null) throw new Error('the log store is not open yet');
          return repository;
        },
        reader() {
          return readers ?? replica ?? service.repository();
        },
        readLagMs() {
          return replica === null ? Promise.resolve(null) : (sqlStore?.readLagMs?.() ?? Promise.resolve(null));
        },
        queryTimeoutMs: opts.queryTimeoutMs,
        stats: () => queue.stats(),
        flush: () => queue.flush(),
        applyRetention,
      };
      api.provide(LOG_STORE_SERVICE, service);
      // Non-stream answers: what capture keeps (plus the redaction slack), so memory per request stays small.
      captureResponses(api, { scanLimit: opts.scanLimitBytes, bodyLimit: headLength(finishOptions) });

      // A request's entry belongs to the workspace it acted in (an organisation-level key's too): known before the strategy
      // runs, so the sync log tap below reads it. Only with workspaces (the control plane); without, the key's own.
      if (api.provided(TENANCY)) {
        const tenant = tenantOf(api);
        api.hooks.beforeRequest.tapAsync({ name: PLUGIN_NAME, stage: STAGES.beforeRequest.PREPARE - 10 }, (ctx, done) => {
          let known: string | Promise<string>;
          try {
            known = tenant(ctx);
          } catch (err) {
            return done(err as Error);
          }
          if (typeof known === 'string') return done();
          known.then(() => done(), (err: unknown) => done(err as Error));
        });
      }

      // A sync tap: the entry is queued before the pipeline counts the request as finished, so close() flushes it.
      api.hooks.log.tap(PLUGIN_NAME, (ctx) => {
        if (skip.has(ctx.path)) return;
        try {
          const summary = requestSummary(ctx, { pricing, wantText: capture !== 'off' });
          const entry = buildEntry(ctx, summary, entryOptions);
          queue.push(entry, entrySize(entry));
        } catch (err) {
          // Never the client's problem; say it at most once a minute.
          if (Date.now() - failedAt > 60_000) {
            failedAt = Date.now();
            api.logger.error({ err, trace_id: ctx.traceId }, 'log store: building a log entry failed');
          }
        }
      });

      api.onReady(async () => {
        pricing = pricingOf(api);
        const store = api.stores.get(opts.store) as SqlStore | undefined;
        if (store === undefined || typeof store.client !== 'function') {
          throw new Error(`${PLUGIN_NAME}: no SQL store named "${opts.store}"; load the sqlite or postgres plugin before it`);
        }
        const client = store.client();
        await migrate(client, LOGS_NAMESPACE, LOG_MIGRATIONS);
        repository = new LogRepository(client, bodyStore(bodiesDir));
        // A read replica (the postgres store's readUrl): the routes' reads go there, off the primary.
        const readClient = store.readClient?.() ?? null;
        if (readClient !== null) {
          replica = new LogRepository(readClient, bodyStore(bodiesDir));
          sqlStore = store;
        }
        await thread?.open();
        queue.start();
        // Always, even when entries are kept forever: minute rollups are pruned.
        const run = () => {
          applyRetention().then(
            (deleted) => {
              if (deleted > 0) api.logger.info({ deleted, retention_days: opts.retentionDays }, 'log store: old entries deleted');
            },
            (err: unknown) => api.logger.warn({ err }, 'log store: retention clean-up failed'),
          );
        };
        retentionTimer = setInterval(run, opts.retentionIntervalMs);
        retentionTimer.unref();
        firstRetention = setTimeout(run, Math.min(5000, opts.retentionIntervalMs));
        firstRetention.unref();
      });

      // Closes run in reverse order: this one before the SQL store's (listed earlier), so the store is still open.
      api.onClose(async () => {
        closed = true;
        if (retentionTimer !== null) clearInterval(retentionTimer);
        if (firstRetention !== null) clearTimeout(firstRetention);
        await queue.close(opts.closeTimeoutMs);
        await retentionRunning?.catch(() => 0);
        await readers?.close();
      });
    },
  };
}

/** The workspace a request acted in, as the tenancy found it (an organisation-level key's too), else the key's own. */
function actingWorkspace(ctx: RequestContext): string | null {
  const tenant = knownTenant(ctx);
  return tenant === undefined ? (ctx.auth?.workspaceId ?? null) : tenant === NO_TENANT ? null : tenant;
}

export default logStore;
