import * as v from 'valibot';
import { GatewayError } from '../../sdk/index.js';

/** The spec's fine-tuning job statuses. */
export const JOB_STATUSES = ['validating_files', 'queued', 'running', 'succeeded', 'failed', 'cancelled'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

/** The spec's Fine-tuning job. */
export interface Job {
  id: string;
  object: 'fine_tuning.job';
  created_at: number;
  error: { code: string; message: string; param: string | null } | null;
  fine_tuned_model: string | null;
  finished_at: number | null;
  hyperparameters: Record<string, unknown> & { n_epochs: number | 'auto' };
  model: string;
  organization_id: string;
  result_files: string[];
  status: JobStatus;
  trained_tokens: number | null;
  training_file: string;
  validation_file: string | null;
  seed: number | null;
  integrations: Integration[] | null;
  estimated_finish: number | null;
}

export interface Integration {
  type: string;
  [name: string]: unknown;
}

export interface Checkpoint {
  id: string;
  object: 'fine_tuning.job.checkpoint';
  created_at: number;
  fine_tuned_model_checkpoint: string;
  step_number: number;
  metrics: Record<(typeof METRICS)[number], number | null>;
  fine_tuning_job_id: string;
}

export interface JobEvent {
  id: string;
  object: 'fine_tuning.job.event';
  created_at: number;
  level: string;
  message: string;
}

export const METRICS = ['step', 'train_loss', 'train_mean_token_accuracy', 'valid_loss', 'valid_mean_token_accuracy', 'full_valid_loss', 'full_valid_mean_token_accuracy'] as const;

export const int = (value: unknown): number | null => (typeof value === 'number' && Number.isFinite(value) ? Math.floor(value) : null);
export const num = (value: unknown): number | null => (typeof value === 'number' && Number.isFinite(value) ? value : null);
export const text = (value: unknown): string | null => (typeof value === 'string' && value !== '' ? value : null);

export const invalidUpstream = (what: string) => new GatewayError('upstream_invalid_response', `The provider's fine-tuning answer is invalid: ${what}.`);

/** A `metrics` object with every spec field, null where the provider reports none. */
export function metricsOf(raw: unknown, step: number): Checkpoint['metrics'] {
  const m = (raw ?? {}) as Record<string, unknown>;
  const out = {} as Checkpoint['metrics'];
  for (const k of METRICS) out[k] = num(m[k]);
  out.step ??= step;
  return out;
}

const auto = <T extends v.GenericSchema>(schema: T) => v.union([v.literal('auto'), schema], 'must be "auto" or a number');

const Wandb = v.looseObject({
  project: v.string('must be a string'),
  name: v.nullish(v.string()),
  entity: v.nullish(v.string()),
  tags: v.optional(v.array(v.string())),
});

/** The create body: the spec's fields, checked; provider-specific hyperparameters pass through. */
export const CreateJobSchema = v.looseObject({
  model: v.pipe(v.string(), v.minLength(1, 'must not be empty')),
  training_file: v.pipe(v.string(), v.minLength(1, 'must not be empty')),
  validation_file: v.nullish(v.pipe(v.string(), v.minLength(1, 'must not be empty'))),
  suffix: v.nullish(v.pipe(v.string(), v.maxLength(64, 'must be at most 64 characters'))),
  seed: v.nullish(v.pipe(v.number(), v.integer('must be an integer'))),
  hyperparameters: v.optional(
    v.looseObject({
      n_epochs: v.optional(auto(v.pipe(v.number(), v.integer(), v.minValue(1)))),
      batch_size: v.optional(auto(v.pipe(v.number(), v.integer(), v.minValue(1)))),
      learning_rate_multiplier: v.optional(auto(v.pipe(v.number(), v.gtValue(0, 'must be above 0')))),
    }),
  ),
  integrations: v.nullish(v.pipe(v.array(v.looseObject({ type: v.string(), wandb: v.optional(Wandb) })), v.maxLength(5, 'holds at most 5 integrations'))),
  metadata: v.nullish(
    v.pipe(
      v.record(v.pipe(v.string(), v.maxLength(64)), v.pipe(v.string(), v.maxLength(512))),
      v.check((m) => Object.keys(m).length <= 16, 'holds at most 16 pairs'),
    ),
  ),
});
export type CreateJobBody = v.InferOutput<typeof CreateJobSchema>;

/** A page of an already complete list, by an `after` id and a `limit`. */
export function pageAfter<T extends { id: string }>(items: readonly T[], after: string | undefined, limit: number): { data: T[]; has_more: boolean } {
  let start = 0;
  if (after !== undefined) {
    const at = items.findIndex((i) => i.id === after);
    start = at === -1 ? items.length : at + 1;
  }
  const data = items.slice(start, start + limit);
  return { data, has_more: start + limit < items.length };
}
