import type { Answer, Dialect, Page, Send } from './dialect.js';
import { mapAnswer } from './dialect.js';
import { type Checkpoint, type CreateJobBody, int, invalidUpstream, type Job, type JobEvent, type JobStatus, metricsOf, pageAfter, text } from './shapes.js';

/**
 * Mistral's job statuses on the spec's enum (docs/fine-tuning-mistral.md).
 * VALIDATED waits for a start (a job created with auto_start false), so it is
 * queued; CANCELLATION_REQUESTED still trains until Mistral stops it.
 */
export const MISTRAL_STATUS_MAP: Readonly<Record<string, JobStatus>> = {
  QUEUED: 'queued',
  STARTED: 'validating_files',
  VALIDATING: 'validating_files',
  VALIDATED: 'queued',
  RUNNING: 'running',
  FAILED_VALIDATION: 'failed',
  FAILED: 'failed',
  SUCCESS: 'succeeded',
  CANCELLED: 'cancelled',
  CANCELLATION_REQUESTED: 'running',
};

const FINISHED = new Set<JobStatus>(['succeeded', 'failed', 'cancelled']);

/** Mistral's default learning rate: `learning_rate_multiplier` scales it. */
const BASE_LEARNING_RATE = 1e-4;
/** Hyperparameters Mistral takes as they are. */
const MISTRAL_HYPERPARAMETERS = ['training_steps', 'learning_rate', 'weight_decay', 'warmup_fraction', 'epochs', 'seq_len', 'fim_ratio'];

/** The create body in Mistral's terms. */
export function mistralCreateBody(body: CreateJobBody): Record<string, unknown> {
  const hp = (body.hyperparameters ?? {}) as Record<string, unknown>;
  const hyperparameters: Record<string, unknown> = {};
  for (const k of MISTRAL_HYPERPARAMETERS) if (hp[k] !== undefined) hyperparameters[k] = hp[k];
  if (typeof hp.n_epochs === 'number') hyperparameters.epochs ??= hp.n_epochs;
  if (typeof hp.learning_rate_multiplier === 'number') hyperparameters.learning_rate ??= hp.learning_rate_multiplier * BASE_LEARNING_RATE;
  const out: Record<string, unknown> = {
    model: body.model,
    training_files: [{ file_id: body.training_file, weight: 1 }],
    hyperparameters,
    auto_start: true,
  };
  if (body.validation_file) out.validation_files = [body.validation_file];
  if (body.suffix) out.suffix = body.suffix;
  if (body.integrations) {
    out.integrations = body.integrations.filter((i) => i.type === 'wandb' && i.wandb !== undefined).map((i) => ({ type: 'wandb', ...(i.wandb as Record<string, unknown>) }));
  }
  return out;
}

const fileId = (value: unknown): string | null => text(value) ?? text((value as { file_id?: unknown } | null)?.file_id);

/** A Mistral job (or detailed job) in the spec's shape. */
export function normaliseMistralJob(o: Record<string, unknown>): Job {
  const id = text(o.id);
  if (id === null) throw invalidUpstream('a job has no id');
  const raw = text(o.status) ?? '';
  const status = MISTRAL_STATUS_MAP[raw];
  if (status === undefined) throw invalidUpstream(`unknown job status "${raw.slice(0, 32)}"`);
  const created = int(o.created_at);
  if (created === null) throw invalidUpstream('a job has no created_at');
  const hp = (o.hyperparameters ?? {}) as Record<string, unknown>;
  const events = Array.isArray(o.events) ? (o.events as Array<Record<string, unknown>>) : [];
  const failure = [...events].reverse().find((e) => /fail|error/i.test(String(e.name ?? '')));
  const meta = (o.metadata ?? {}) as Record<string, unknown>;
  const modified = int(o.modified_at);
  const wandb = Array.isArray(o.integrations)
    ? (o.integrations as Array<Record<string, unknown>>).map((i) => ({ type: text(i.type) ?? 'wandb', wandb: { project: text(i.project) ?? '', name: text(i.name), entity: null, tags: [] } }))
    : null;
  const expected = int(meta.expected_duration_seconds);
  return {
    id,
    object: 'fine_tuning.job',
    created_at: created,
    error:
      status === 'failed'
        ? {
            code: raw === 'FAILED_VALIDATION' ? 'invalid_training_file' : 'failed',
            message: failureMessage(failure) ?? (raw === 'FAILED_VALIDATION' ? 'The training files failed validation.' : 'The job failed.'),
            param: raw === 'FAILED_VALIDATION' ? 'training_file' : null,
          }
        : null,
    fine_tuned_model: text(o.fine_tuned_model),
    finished_at: FINISHED.has(status) ? modified : null,
    hyperparameters: { ...hp, n_epochs: typeof hp.epochs === 'number' ? hp.epochs : 'auto' },
    model: text(o.model) ?? '',
    organization_id: '',
    result_files: [],
    status,
    trained_tokens: FINISHED.has(status) ? int(o.trained_tokens) : null,
    training_file: Array.isArray(o.training_files) ? (fileId(o.training_files[0]) ?? '') : '',
    validation_file: Array.isArray(o.validation_files) ? fileId(o.validation_files[0]) : null,
    seed: null,
    integrations: wandb,
    estimated_finish: status === 'running' && expected !== null ? (modified ?? created) + expected : null,
  };
}

function failureMessage(event: Record<string, unknown> | undefined): string | null {
  if (event === undefined) return null;
  const data = event.data as Record<string, unknown> | null | undefined;
  return text(data?.error) ?? text(data?.message) ?? text(event.name);
}

/** Checkpoints of a detailed job, newest first, with ids the gateway makes (Mistral gives none). */
export function mistralCheckpoints(detail: Record<string, unknown>): Checkpoint[] {
  const jobId = text(detail.id) ?? '';
  const model = text(detail.fine_tuned_model) ?? text(detail.model) ?? '';
  const list = Array.isArray(detail.checkpoints) ? (detail.checkpoints as Array<Record<string, unknown>>) : [];
  return list
    .map((c) => {
      const step = int(c.step_number) ?? 0;
      return {
        id: `ftckpt-${jobId}-${step}`,
        object: 'fine_tuning.job.checkpoint' as const,
        created_at: int(c.created_at) ?? 0,
        fine_tuned_model_checkpoint: `${model}:ckpt-step-${step}`,
        step_number: step,
        metrics: metricsOf(c.metrics, step),
        fine_tuning_job_id: jobId,
      };
    })
    .sort((a, b) => b.step_number - a.step_number);
}

/** Events of a detailed job, newest first; ids from their place in Mistral's list (which only grows). */
export function mistralEvents(detail: Record<string, unknown>): JobEvent[] {
  const jobId = text(detail.id) ?? '';
  const list = Array.isArray(detail.events) ? (detail.events as Array<Record<string, unknown>>) : [];
  return list
    .map((e, index) => {
      const name = text(e.name) ?? 'event';
      const data = e.data !== null && typeof e.data === 'object' ? (e.data as Record<string, unknown>) : null;
      const details = data === null ? '' : Object.entries(data).filter(([, v]) => v !== null && typeof v !== 'object').map(([k, v]) => `${k}=${String(v)}`).join(', ');
      return {
        id: `ftevent-${jobId}-${index}`,
        object: 'fine_tuning.job.event' as const,
        created_at: int(e.created_at) ?? 0,
        level: /fail|error/i.test(name) ? 'error' : 'info',
        message: details === '' ? name : `${name}: ${details}`,
        index,
      };
    })
    .sort((a, b) => b.created_at - a.created_at || b.index - a.index)
    .map(({ index: _index, ...event }) => event);
}

/** Pages Mistral reads at most to find an `after` cursor (jobs are paged by number there, not by id). */
const MAX_PAGES = 20;
const PAGE_SIZE = 100;

async function listJobs(send: Send, q: { after?: string; limit: number }): Promise<Answer<Page<Job>>> {
  const out: Job[] = [];
  let found = q.after === undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const answer = await send({ method: 'GET', path: `/fine_tuning/jobs?page=${page}&page_size=${PAGE_SIZE}` });
    if (!answer.ok) return answer;
    const data = Array.isArray(answer.value.data) ? (answer.value.data as Record<string, unknown>[]) : [];
    for (const raw of data) {
      if (!found) {
        found = raw.id === q.after;
        continue;
      }
      if (out.length === q.limit) return { ok: true, value: { data: out, has_more: true } };
      out.push(normaliseMistralJob(raw));
    }
    const total = int(answer.value.total);
    if (data.length < PAGE_SIZE || (total !== null && (page + 1) * PAGE_SIZE >= total)) break;
  }
  return { ok: true, value: { data: out, has_more: false } };
}

const job = (id: string) => `/fine_tuning/jobs/${encodeURIComponent(id)}`;

/**
 * Mistral's fine-tuning API (`/v1/fine_tuning/jobs`), translated: the create
 * body in its terms, jobs paged by page number (the `after` cursor found by
 * reading pages), checkpoints and events read from the job's detail (Mistral
 * lists them there) and paged by the gateway.
 */
export const mistralDialect: Dialect = {
  async create(send, body) {
    return mapAnswer(await send({ method: 'POST', path: '/fine_tuning/jobs', headers: { 'content-type': 'application/json' }, body: JSON.stringify(mistralCreateBody(body)) }), normaliseMistralJob);
  },
  async retrieve(send, id) {
    return mapAnswer(await send({ method: 'GET', path: job(id) }), normaliseMistralJob);
  },
  list: listJobs,
  async cancel(send, id) {
    return mapAnswer(await send({ method: 'POST', path: `${job(id)}/cancel` }), normaliseMistralJob);
  },
  async checkpoints(send, id, q) {
    return mapAnswer(await send({ method: 'GET', path: job(id) }), (detail) => pageAfter(mistralCheckpoints(detail), q.after, q.limit));
  },
  async events(send, id, q) {
    return mapAnswer(await send({ method: 'GET', path: job(id) }), (detail) => pageAfter(mistralEvents(detail), q.after, q.limit));
  },
};

