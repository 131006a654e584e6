import { type Dialect, mapAnswer, type Page } from './dialect.js';
import { type Checkpoint, int, type Integration, invalidUpstream, type Job, type JobEvent, JOB_STATUSES, type JobStatus, metricsOf, text } from './shapes.js';

const STATUS_SET = new Set<string>(JOB_STATUSES);
/**
 * Statuses outside the spec's enum, as OpenAI and Azure OpenAI send them:
 * Azure's older API versions (`created`, `pending`, `notRunning`) and a job
 * OpenAI paused (`paused`: not training now, resumable).
 */
export const OPENAI_STATUS_MAP: Readonly<Record<string, JobStatus>> = {
  created: 'validating_files',
  pending: 'queued',
  notRunning: 'queued',
  paused: 'queued',
  cancelling: 'running',
  canceled: 'cancelled',
};

const query = (q: Record<string, string | number | undefined>): string => {
  const params = new URLSearchParams();
  for (const [k, value] of Object.entries(q)) if (value !== undefined) params.set(k, String(value));
  const s = params.toString();
  return s === '' ? '' : `?${s}`;
};

/** An OpenAI-format job checked and brought to the spec's shape (every field present, `null` where unfinished). */
export function normaliseOpenAIJob(o: Record<string, unknown>): Job {
  const id = text(o.id);
  if (id === null) throw invalidUpstream('a job has no id');
  const raw = text(o.status) ?? '';
  const status = STATUS_SET.has(raw) ? (raw as JobStatus) : OPENAI_STATUS_MAP[raw];
  if (status === undefined) throw invalidUpstream(`unknown job status "${raw.slice(0, 32)}"`);
  const created = int(o.created_at);
  if (created === null) throw invalidUpstream('a job has no created_at');
  const method = o.method as { type?: string; [k: string]: unknown } | undefined;
  const hp = ((o.hyperparameters ?? (method?.type !== undefined ? (method[method.type] as Record<string, unknown> | undefined)?.hyperparameters : undefined)) ?? {}) as Record<
    string,
    unknown
  >;
  const e = o.error as Record<string, unknown> | null | undefined;
  const error = e !== null && typeof e === 'object' && (text(e.message) !== null || text(e.code) !== null) ? { code: text(e.code) ?? 'error', message: text(e.message) ?? '', param: text(e.param) } : null;
  return {
    id,
    object: 'fine_tuning.job',
    created_at: created,
    error: status === 'failed' ? (error ?? { code: 'failed', message: 'The job failed.', param: null }) : error,
    fine_tuned_model: text(o.fine_tuned_model),
    finished_at: int(o.finished_at),
    hyperparameters: { ...hp, n_epochs: typeof hp.n_epochs === 'number' ? hp.n_epochs : 'auto' },
    model: text(o.model) ?? '',
    organization_id: text(o.organization_id) ?? '',
    result_files: Array.isArray(o.result_files) ? o.result_files.filter((f): f is string => typeof f === 'string') : [],
    status,
    trained_tokens: int(o.trained_tokens),
    training_file: text(o.training_file) ?? '',
    validation_file: text(o.validation_file),
    seed: int(o.seed),
    integrations: Array.isArray(o.integrations) ? (o.integrations as Integration[]) : null,
    estimated_finish: status === 'running' || status === 'queued' ? int(o.estimated_finish) : null,
  };
}

function normaliseCheckpoint(o: Record<string, unknown>, jobId: string): Checkpoint {
  const id = text(o.id);
  if (id === null) throw invalidUpstream('a checkpoint has no id');
  const step = int(o.step_number) ?? 0;
  return {
    id,
    object: 'fine_tuning.job.checkpoint',
    created_at: int(o.created_at) ?? 0,
    fine_tuned_model_checkpoint: text(o.fine_tuned_model_checkpoint) ?? '',
    step_number: step,
    metrics: metricsOf(o.metrics, step),
    fine_tuning_job_id: text(o.fine_tuning_job_id) ?? jobId,
  };
}

function normaliseEvent(o: Record<string, unknown>): JobEvent {
  const id = text(o.id);
  if (id === null) throw invalidUpstream('an event has no id');
  return { id, object: 'fine_tuning.job.event', created_at: int(o.created_at) ?? 0, level: text(o.level) ?? 'info', message: typeof o.message === 'string' ? o.message : '' };
}

function page<T>(value: Record<string, unknown>, item: (o: Record<string, unknown>) => T): Page<T> {
  const data = Array.isArray(value.data) ? (value.data as Record<string, unknown>[]).map(item) : [];
  return { data, has_more: value.has_more === true };
}

const job = (id: string) => `/fine_tuning/jobs/${encodeURIComponent(id)}`;

/**
 * OpenAI's own format (OpenAI, Azure OpenAI): calls pass through as sent,
 * cursors (`after`, `limit`) are the provider's, answers are checked and normalised.
 */
export const openaiDialect: Dialect = {
  async create(send, body) {
    return mapAnswer(await send({ method: 'POST', path: '/fine_tuning/jobs', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }), normaliseOpenAIJob);
  },
  async retrieve(send, id) {
    return mapAnswer(await send({ method: 'GET', path: job(id) }), normaliseOpenAIJob);
  },
  async list(send, q) {
    return mapAnswer(await send({ method: 'GET', path: `/fine_tuning/jobs${query({ after: q.after, limit: q.limit })}` }), (v) => page(v, normaliseOpenAIJob));
  },
  async cancel(send, id) {
    return mapAnswer(await send({ method: 'POST', path: `${job(id)}/cancel` }), normaliseOpenAIJob);
  },
  async checkpoints(send, id, q) {
    return mapAnswer(await send({ method: 'GET', path: `${job(id)}/checkpoints${query({ after: q.after, limit: q.limit })}` }), (v) => page(v, (o) => normaliseCheckpoint(o, id)));
  },
  async events(send, id, q) {
    return mapAnswer(await send({ method: 'GET', path: `${job(id)}/events${query({ after: q.after, limit: q.limit })}` }), (v) => page(v, normaliseEvent));
  },
};
