import * as v from 'valibot';
import { GatewayError, issuePath, type RequestContext } from '../../sdk/index.js';
import type { BatchRow, BatchStatus, BatchTime, FileRow } from './repository.js';

/** The spec's batch statuses. */
export const BATCH_STATUSES: readonly BatchStatus[] = ['validating', 'failed', 'in_progress', 'finalizing', 'completed', 'expired', 'cancelling', 'cancelled'];
const STATUS_SET = new Set<string>(BATCH_STATUSES);
/** Spellings some providers use for the same states. */
const STATUS_ALIASES: Readonly<Record<string, BatchStatus>> = { canceled: 'cancelled', canceling: 'cancelling' };

const TIMESTAMPS = ['created_at', 'in_progress_at', 'expires_at', 'finalizing_at', 'completed_at', 'failed_at', 'expired_at', 'cancelling_at', 'cancelled_at'] as const;

/** The spec's Batch object. */
export interface Batch extends Pick<BatchRow, 'id' | 'endpoint' | 'input_file_id' | 'completion_window' | 'status' | 'created_at' | BatchTime> {
  object: 'batch';
  expires_at: number | null;
  errors: { object: 'list'; data: BatchError[] } | null;
  output_file_id: string | null;
  error_file_id: string | null;
  request_counts: { total: number; completed: number; failed: number };
  metadata: Record<string, string> | null;
}

export interface BatchError {
  code: string;
  message: string;
  param: string | null;
  line: number | null;
}

const seconds = (ms: number | null): number | null => (ms === null ? null : Math.floor(Number(ms) / 1000));

/** A gateway-run batch as the API shows it (times in Unix seconds); never its sealed request. */
export function presentBatch(row: BatchRow): Batch {
  return {
    id: row.id,
    object: 'batch',
    endpoint: row.endpoint,
    input_file_id: row.input_file_id,
    completion_window: row.completion_window,
    status: row.status,
    created_at: seconds(row.created_at)!,
    in_progress_at: seconds(row.in_progress_at),
    expires_at: seconds(row.expires_at),
    finalizing_at: seconds(row.finalizing_at),
    completed_at: seconds(row.completed_at),
    failed_at: seconds(row.failed_at),
    expired_at: seconds(row.expired_at),
    cancelling_at: seconds(row.cancelling_at),
    cancelled_at: seconds(row.cancelled_at),
    errors: row.errors === null ? null : { object: 'list', data: JSON.parse(row.errors) as BatchError[] },
    output_file_id: row.output_file_id,
    error_file_id: row.error_file_id,
    request_counts: { total: Number(row.total), completed: Number(row.completed), failed: Number(row.failed) },
    metadata: row.metadata === null ? null : (JSON.parse(row.metadata) as Record<string, string>),
  };
}

const invalidUpstream = (what: string) => new GatewayError('upstream_invalid_response', `The provider's batch object is invalid: ${what}.`);
const int = (value: unknown): number | null => (typeof value === 'number' && Number.isFinite(value) ? Math.floor(value) : null);
const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);

/**
 * A provider's batch object checked and brought to the spec's shape: every
 * field present (`null` where the provider has none), timestamps as integer
 * seconds, `status` one of the spec's (a known alias mapped, anything else a
 * 502), `errors` and `request_counts` in their shapes. Fields the spec does
 * not name are dropped.
 */
export function normaliseBatch(value: Record<string, unknown>): Batch {
  const id = text(value.id);
  if (id === null || id === '') throw invalidUpstream('no id');
  const raw = text(value.status);
  const status = raw === null ? null : STATUS_SET.has(raw) ? (raw as BatchStatus) : (STATUS_ALIASES[raw] ?? null);
  if (status === null) throw invalidUpstream(`unknown status "${String(raw).slice(0, 32)}"`);
  const counts = (value.request_counts ?? {}) as Record<string, unknown>;
  const errors = value.errors as { data?: unknown } | null | undefined;
  const out = {
    id,
    object: 'batch',
    endpoint: text(value.endpoint) ?? '',
    input_file_id: text(value.input_file_id) ?? '',
    completion_window: text(value.completion_window) ?? '24h',
    status,
  } as Batch;
  for (const t of TIMESTAMPS) (out as unknown as Record<string, number | null>)[t] = int(value[t]);
  if (out.created_at === null) throw invalidUpstream('no created_at');
  out.errors =
    errors !== null && typeof errors === 'object' && Array.isArray(errors.data)
      ? {
          object: 'list',
          data: errors.data.map((e: Record<string, unknown>) => ({ code: text(e?.code) ?? 'error', message: text(e?.message) ?? '', param: text(e?.param), line: int(e?.line) })),
        }
      : null;
  out.output_file_id = text(value.output_file_id);
  out.error_file_id = text(value.error_file_id);
  out.request_counts = { total: int(counts.total) ?? 0, completed: int(counts.completed) ?? 0, failed: int(counts.failed) ?? 0 };
  const metadata = value.metadata;
  out.metadata = metadata !== null && typeof metadata === 'object' && !Array.isArray(metadata) ? (metadata as Record<string, string>) : null;
  return out;
}

/** OpenAI's File object. */
export interface FileObject {
  id: string;
  object: 'file';
  bytes: number;
  created_at: number;
  filename: string;
  purpose: string;
  status: string;
  expires_at: number | null;
  status_details: string | null;
}

export function presentFile(row: FileRow): FileObject {
  return {
    id: row.id,
    object: 'file',
    bytes: Number(row.bytes),
    created_at: seconds(row.created_at)!,
    filename: row.filename,
    purpose: row.purpose,
    status: 'processed',
    expires_at: null,
    status_details: null,
  };
}

/** A provider's file object in OpenAI's shape (Mistral's `size_bytes`, missing fields as null). */
export function normaliseFile(value: Record<string, unknown>): FileObject {
  const id = text(value.id);
  if (id === null || id === '') throw new GatewayError('upstream_invalid_response', "The provider's file object has no id.");
  return {
    id,
    object: 'file',
    bytes: int(value.bytes) ?? int(value.size_bytes) ?? 0,
    created_at: int(value.created_at) ?? 0,
    filename: text(value.filename) ?? '',
    purpose: text(value.purpose) ?? '',
    status: text(value.status) ?? 'processed',
    expires_at: int(value.expires_at),
    status_details: text(value.status_details),
  };
}

/** `metadata`: at most 16 pairs, keys up to 64 characters, values up to 512 (spec, Limits). */
export const MetadataSchema = v.nullish(
  v.pipe(
    v.record(v.pipe(v.string(), v.maxLength(64, 'keys must be at most 64 characters')), v.pipe(v.string('values must be strings'), v.maxLength(512, 'values must be at most 512 characters'))),
    v.check((m) => Object.keys(m).length <= 16, 'holds at most 16 pairs'),
  ),
);

/** Endpoints a batch may use: the gateway's shaped routes it can run line by line (OpenAI's own list is longer, for native batches). */
export const GATEWAY_ENDPOINTS = ['/v1/chat/completions', '/v1/completions', '/v1/embeddings', '/v1/rerank'] as const;
const NATIVE_ENDPOINTS = ['/v1/responses', '/v1/chat/completions', '/v1/embeddings', '/v1/completions', '/v1/moderations', '/v1/images/generations', '/v1/images/edits', '/v1/videos'];

/** `completion_window`: OpenAI takes only `24h`; the gateway runs any whole number of hours from 1 to 168. */
const WINDOW = /^([1-9]\d{0,2})h$/;

export const CreateBatchSchema = v.object({
  input_file_id: v.pipe(v.string(), v.minLength(1, 'must not be empty'), v.maxLength(256)),
  endpoint: v.picklist([...new Set([...GATEWAY_ENDPOINTS, ...NATIVE_ENDPOINTS])], `must be one of ${[...new Set([...GATEWAY_ENDPOINTS, ...NATIVE_ENDPOINTS])].join(', ')}`),
  completion_window: v.pipe(
    v.string(),
    v.check((w) => WINDOW.test(w) && Number(WINDOW.exec(w)![1]) <= 168, 'must be a whole number of hours from 1h to 168h, e.g. 24h'),
  ),
  metadata: MetadataSchema,
});
export type CreateBatchBody = v.InferOutput<typeof CreateBatchSchema>;

/** The window in ms (`24h` → 86 400 000). */
export function windowMs(window: string): number {
  return Number(WINDOW.exec(window)![1]) * 3_600_000;
}

/** A query string parsed strictly: unknown parameters and bad values are a 400 naming them. */
export function parseQuery<S extends v.GenericSchema>(ctx: RequestContext, schema: S): v.InferOutput<S> {
  const raw: Record<string, string> = Object.create(null);
  for (const [k, value] of new URLSearchParams(ctx.query)) raw[k] = value;
  const result = v.safeParse(schema, raw);
  if (result.success) return result.output;
  const issue = result.issues[0];
  const param = issuePath(issue) || null;
  if (issue.kind === 'schema' && issue.expected === 'never' && param !== null) {
    const known = Object.keys((schema as unknown as { entries?: Record<string, unknown> }).entries ?? {});
    throw new GatewayError('invalid_request', `Unknown query parameter '${param}'; known: ${known.join(', ')}.`, { param });
  }
  throw new GatewayError('invalid_request', `Invalid query parameter${param === null ? '' : ` '${param}'`}: ${issue.message}`, { param });
}

/** A `limit` query parameter from 1 to `max`. */
export const limitParam = (max: number) =>
  v.pipe(v.string(), v.regex(/^\d{1,6}$/, 'must be a positive integer'), v.transform(Number), v.minValue(1, 'must be at least 1'), v.maxValue(max, `must be at most ${max}`));

/** The list envelope of OpenAI's cursor pages. */
export function cursorPage<T extends { id: string }>(rows: T[], limit: number): { object: 'list'; data: T[]; first_id: string | null; last_id: string | null; has_more: boolean } {
  const data = rows.slice(0, limit);
  return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: rows.length > limit };
}
