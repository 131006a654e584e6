import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { DEFAULT_CONFIG } from '../../../server/default-config.js';
import { GATEWAY_KEY, startTestServer } from '../../helpers/gateway.js';
import { startMistralMock, type MistralMock } from '../../mocks/mistral-fine-tuning.js';
import { startResourcesMock, type ResourcesMock } from '../../mocks/resources.js';

type Json = Record<string, any>;

const JOB_FIELDS = [
  'id', 'object', 'created_at', 'error', 'fine_tuned_model', 'finished_at', 'hyperparameters', 'model', 'organization_id', 'result_files', 'status',
  'trained_tokens', 'training_file', 'validation_file', 'seed', 'integrations', 'estimated_finish',
].sort();
const CHECKPOINT_FIELDS = ['id', 'object', 'created_at', 'fine_tuned_model_checkpoint', 'step_number', 'metrics', 'fine_tuning_job_id'].sort();
const METRICS = ['step', 'train_loss', 'train_mean_token_accuracy', 'valid_loss', 'valid_mean_token_accuracy', 'full_valid_loss', 'full_valid_mean_token_accuracy'].sort();
const STATUSES = ['validating_files', 'queued', 'running', 'succeeded', 'failed', 'cancelled'];

let openai: ResourcesMock;
let azure: ResourcesMock;
let mistral: MistralMock;
let gw: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  [openai, azure, mistral] = await Promise.all([startResourcesMock('openai'), startResourcesMock('azure'), startMistralMock()]);
  gw = await startTestServer({
    config: {
      ...DEFAULT_CONFIG,
      // Virtual keys (slugs) for the cancel route, as the spec shows it: x-gateway-api-key and x-gateway-virtual-key.
      providers: {
        'ft-openai': { provider: 'openai', api_key: 'sk-openai-test', custom_host: `${openai.url}/v1` },
        'ft-azure': { provider: 'azure-openai', api_key: 'azure-test-key', custom_host: azure.url, api_version: '2024-10-21' },
        'ft-mistral': { provider: 'mistral-ai', api_key: 'mistral-test-key', custom_host: `${mistral.url}/v1` },
      },
    },
  });
});
afterAll(async () => {
  await gw.close();
  await Promise.all([openai.close(), azure.close(), mistral.close()]);
});

async function call(method: string, path: string, headers: Record<string, string>, body?: unknown, status = 200): Promise<Json> {
  const res = await fetch(`${gw.url}/v1${path}`, {
    method,
    headers: { 'x-gateway-api-key': GATEWAY_KEY, ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  expect(res.status, text).toBe(status);
  return JSON.parse(text) as Json;
}

const providers = [
  { name: 'OpenAI', slug: 'ft-openai', created: 'validating_files' },
  { name: 'Azure OpenAI', slug: 'ft-azure', created: 'queued' },
  { name: 'Mistral', slug: 'ft-mistral', created: 'queued' },
] as const;

for (const p of providers) {
  describe(`fine-tuning on ${p.name}`, () => {
    const h = { 'x-gateway-virtual-key': p.slug };
    const jobs: Json[] = [];

    test('create: the spec’s job shape, status on the spec’s enum; bad bodies are 400s naming the field', async () => {
      for (let i = 0; i < 3; i++) {
        const job = await call('POST', '/fine_tuning/jobs', h, {
          model: 'base-model',
          training_file: `file-train-${i}`,
          validation_file: 'file-valid',
          suffix: 'custom',
          seed: 7,
          hyperparameters: { n_epochs: 3 },
          integrations: [{ type: 'wandb', wandb: { project: 'p', name: 'run' } }],
        });
        expect(Object.keys(job).sort()).toEqual(JOB_FIELDS);
        expect(job).toMatchObject({ object: 'fine_tuning.job', model: 'base-model', training_file: `file-train-${i}`, validation_file: 'file-valid', status: p.created });
        expect(job).toMatchObject({ fine_tuned_model: null, finished_at: null, trained_tokens: null, error: null });
        expect(job.created_at).toEqual(expect.any(Number));
        expect(job.hyperparameters.n_epochs).toBe(3);
        jobs.push(job);
      }
      if (p.slug === 'ft-mistral') {
        // Translated to Mistral's terms.
        expect(mistral.calls.find((c) => c.method === 'POST')!.body).toMatchObject({
          model: 'base-model',
          training_files: [{ file_id: 'file-train-0', weight: 1 }],
          validation_files: ['file-valid'],
          hyperparameters: { epochs: 3 },
          integrations: [{ type: 'wandb', project: 'p', name: 'run' }],
        });
      }
      const six = Array.from({ length: 6 }, () => ({ type: 'wandb', wandb: { project: 'p' } }));
      const bad: Array<[Json, string]> = [
        [{ training_file: 'f' }, 'model'],
        [{ model: 'm' }, 'training_file'],
        [{ model: 'm', training_file: 'f', integrations: six }, 'integrations'],
        [{ model: 'm', training_file: 'f', hyperparameters: { n_epochs: 0 } }, 'hyperparameters.n_epochs'],
        [{ model: 'm', training_file: 'f', seed: 1.5 }, 'seed'],
      ];
      for (const [body, param] of bad) expect((await call('POST', '/fine_tuning/jobs', h, body, 400)).error).toMatchObject({ param, type: 'invalid_request_error' });
    });

    test('retrieve and list, with the limit and after cursor', async () => {
      expect(await call('GET', `/fine_tuning/jobs/${jobs[0]!.id}`, h)).toMatchObject({ id: jobs[0]!.id, object: 'fine_tuning.job' });
      const page1 = await call('GET', '/fine_tuning/jobs?limit=2', h);
      expect(page1).toMatchObject({ object: 'list', has_more: true });
      expect(page1.data.map((j: Json) => j.id)).toEqual([jobs[2]!.id, jobs[1]!.id]);
      const page2 = await call('GET', `/fine_tuning/jobs?limit=2&after=${jobs[1]!.id}`, h);
      expect(page2).toMatchObject({ has_more: false });
      expect(page2.data.map((j: Json) => j.id)).toEqual([jobs[0]!.id]);
      expect((await call('GET', '/fine_tuning/jobs?limit=0', h, undefined, 400)).error).toMatchObject({ param: 'limit' });
      expect((await call('GET', '/fine_tuning/jobs?page=2', h, undefined, 400)).error).toMatchObject({ param: 'page' });
      expect((await call('GET', '/fine_tuning/jobs/unknown-job', h, undefined, 404)).error.message).toMatch(/not found|No such job/i);
    });

    test('checkpoints (limit 10 by default) and events, paged with after', async () => {
      const id = jobs[0]!.id;
      if (p.slug === 'ft-mistral') {
        Object.assign(mistral.jobs.get(id)!, {
          checkpoints: Array.from({ length: 12 }, (_, i) => ({ metrics: { train_loss: 1 / (i + 1), valid_loss: null, valid_mean_token_accuracy: 0.5 }, step_number: (i + 1) * 10, created_at: 1_700_000_100 + i })),
          events: [
            { name: 'status-updated', data: { status: 'QUEUED' }, created_at: 1_700_000_001 },
            { name: 'status-updated', data: { status: 'RUNNING' }, created_at: 1_700_000_002 },
            { name: 'status-updated', data: { status: 'SUCCESS' }, created_at: 1_700_000_003 },
          ],
        });
      } else {
        const mock = p.slug === 'ft-openai' ? openai : azure;
        mock.checkpoints.set(
          id,
          Array.from({ length: 12 }, (_, i) => ({
            object: 'fine_tuning.job.checkpoint',
            id: `ftckpt_${i}`,
            created_at: 1_700_000_100 + i,
            fine_tuned_model_checkpoint: `ft:base:ckpt-step-${(i + 1) * 10}`,
            fine_tuning_job_id: id,
            step_number: (i + 1) * 10,
            metrics: { step: (i + 1) * 10, train_loss: 0.5 },
          })),
        );
        mock.events.set(id, [1, 2, 3].map((i) => ({ object: 'fine_tuning.job.event', id: `ftevent-${i}`, created_at: 1_700_000_000 + i, level: 'info', message: `Step ${i}`, type: 'metrics', data: {} })));
      }
      const cps = await call('GET', `/fine_tuning/jobs/${id}/checkpoints`, h);
      expect(cps).toMatchObject({ object: 'list', has_more: true });
      expect(cps.data).toHaveLength(10);
      expect(Object.keys(cps.data[0]).sort()).toEqual(CHECKPOINT_FIELDS);
      expect(Object.keys(cps.data[0].metrics).sort()).toEqual(METRICS);
      expect(cps.data[0]).toMatchObject({ object: 'fine_tuning.job.checkpoint', fine_tuning_job_id: id, step_number: 120 });
      expect(cps.first_id).toBe(cps.data[0].id);
      expect(cps.last_id).toBe(cps.data[9].id);
      const rest = await call('GET', `/fine_tuning/jobs/${id}/checkpoints?after=${cps.last_id}&limit=5`, h);
      expect(rest).toMatchObject({ has_more: false });
      expect(rest.data.map((c: Json) => c.step_number)).toEqual([20, 10]);

      const ev = await call('GET', `/fine_tuning/jobs/${id}/events?limit=2`, h);
      expect(ev).toMatchObject({ object: 'list', has_more: true });
      expect(ev.data).toHaveLength(2);
      expect(Object.keys(ev.data[0]).sort()).toEqual(['created_at', 'id', 'level', 'message', 'object']);
      expect(ev.data[0]).toMatchObject({ object: 'fine_tuning.job.event', level: 'info' });
      expect(ev.data[0].created_at).toBeGreaterThanOrEqual(ev.data[1].created_at);
      const more = await call('GET', `/fine_tuning/jobs/${id}/events?after=${ev.data[1].id}`, h);
      expect(more.data).toHaveLength(1);
      expect(more.has_more).toBe(false);
    });

    test('cancel with x-gateway-api-key and x-gateway-virtual-key', async () => {
      const job = await call('POST', `/fine_tuning/jobs/${jobs[1]!.id}/cancel`, h);
      expect(job).toMatchObject({ id: jobs[1]!.id, object: 'fine_tuning.job' });
      // Mistral takes a while to stop: CANCELLATION_REQUESTED is still running.
      expect(job.status).toBe(p.slug === 'ft-mistral' ? 'running' : 'cancelled');
    });
  });
}

describe('job states mapped onto the spec’s enum', () => {
  test('OpenAI and Azure OpenAI (their older and extra statuses), Mistral (all ten), unknown ones a 502', async () => {
    const cases: Array<[string, Json, Record<string, string>]> = [
      ['ft-openai', openai.jobs as unknown as Json, { validating_files: 'validating_files', queued: 'queued', running: 'running', succeeded: 'succeeded', failed: 'failed', cancelled: 'cancelled', paused: 'queued' }],
      ['ft-azure', azure.jobs as unknown as Json, { created: 'validating_files', pending: 'queued', notRunning: 'queued', running: 'running', succeeded: 'succeeded', failed: 'failed', cancelled: 'cancelled' }],
      [
        'ft-mistral',
        mistral.jobs as unknown as Json,
        {
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
        },
      ],
    ];
    for (const [slug, store, map] of cases) {
      const h = { 'x-gateway-virtual-key': slug };
      const job = (store as Map<string, Json>).values().next().value!;
      for (const [native, expected] of Object.entries(map)) {
        job.status = native;
        const got = await call('GET', `/fine_tuning/jobs/${job.id}`, h);
        expect(got.status, `${slug} ${native}`).toBe(expected);
        expect(STATUSES).toContain(got.status);
        if (expected === 'failed') expect(got.error).toMatchObject({ code: expect.any(String), message: expect.any(String) });
        if (['succeeded', 'failed', 'cancelled'].includes(expected) && slug === 'ft-mistral') expect(got.finished_at).toEqual(expect.any(Number));
        if (!['succeeded', 'failed', 'cancelled'].includes(expected)) expect(got.finished_at).toBeNull();
      }
      job.status = 'EXPLODED';
      expect((await call('GET', `/fine_tuning/jobs/${job.id}`, h, undefined, 502)).error.code).toBe('upstream_invalid_response');
    }
  });

  test('a provider without a fine-tuning API, or none selected, is a 400', async () => {
    const none = await call('GET', '/fine_tuning/jobs', {}, undefined, 400);
    expect(none.error).toMatchObject({ code: 'provider_required', param: 'x-gateway-provider' });
    const anthropic = await call('GET', '/fine_tuning/jobs', { 'x-gateway-provider': 'anthropic', authorization: 'Bearer k' }, undefined, 400);
    expect(anthropic.error).toMatchObject({ code: 'route_not_supported' });
    expect(anthropic.error.message).toMatch(/openai.*azure-openai.*mistral-ai|openai, .*mistral-ai/);
  });
});
