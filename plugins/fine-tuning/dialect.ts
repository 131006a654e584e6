import type { GatewayResponse, NativeCall } from '../../sdk/index.js';
import type { Checkpoint, CreateJobBody, Job, JobEvent } from './shapes.js';

/** A provider's answer: its JSON object for a 2xx, else the error response to send back as it is. */
export type Answer<T> = { ok: true; value: T } | { ok: false; response: GatewayResponse };

/** Sends one call to the provider's fine-tuning API. */
export type Send = (call: NativeCall) => Promise<Answer<Record<string, unknown>>>;

export interface Page<T> {
  data: T[];
  has_more: boolean;
}

/** One provider wire format for fine-tuning jobs, every answer normalised to the spec's shapes. */
export interface Dialect {
  create(send: Send, body: CreateJobBody): Promise<Answer<Job>>;
  retrieve(send: Send, id: string): Promise<Answer<Job>>;
  list(send: Send, q: { after?: string; limit: number }): Promise<Answer<Page<Job>>>;
  cancel(send: Send, id: string): Promise<Answer<Job>>;
  checkpoints(send: Send, id: string, q: { after?: string; limit: number }): Promise<Answer<Page<Checkpoint>>>;
  events(send: Send, id: string, q: { after?: string; limit: number }): Promise<Answer<Page<JobEvent>>>;
}

/** Maps an answer's value, keeping an error as it is. */
export function mapAnswer<A, B>(answer: Answer<A>, fn: (value: A) => B): Answer<B> {
  return answer.ok ? { ok: true, value: fn(answer.value) } : answer;
}
