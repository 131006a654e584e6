import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

type Json = Record<string, any>;

/**
 * A mock of Mistral's fine-tuning API (docs/fine-tuning-mistral.md):
 * `POST /v1/fine_tuning/jobs` (training_files as `{file_id, weight}`),
 * `GET /v1/fine_tuning/jobs?page=&page_size=` (`{data, object, total}`, newest
 * first), `GET /v1/fine_tuning/jobs/{id}` (the detailed job, with `events` and
 * `checkpoints`), `POST …/cancel`. Upper-case statuses; bearer key.
 */
export interface MistralMock {
  url: string;
  calls: Array<{ method: string; url: string; body: unknown; headers: IncomingMessage['headers'] }>;
  jobs: Map<string, Json>;
  close(): Promise<void>;
}

export async function startMistralMock(): Promise<MistralMock> {
  const calls: MistralMock['calls'] = [];
  const jobs = new Map<string, Json>();
  let n = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const body = text === '' ? null : (JSON.parse(text) as Json);
      calls.push({ method: req.method!, url: req.url!, body, headers: req.headers });
      const send = (status: number, value: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
      if (req.headers.authorization !== 'Bearer mistral-test-key') return send(401, { message: 'Unauthorized', request_id: 'r1' });
      const url = new URL(req.url!, 'http://mock');
      const shown = (job: Json, detailed: boolean) => {
        const { events, checkpoints, ...rest } = job;
        return detailed ? { ...rest, object: 'job', events, checkpoints } : { ...rest, object: 'job' };
      };
      if (req.method === 'POST' && url.pathname === '/v1/fine_tuning/jobs') {
        if (!Array.isArray(body?.training_files)) return send(422, { detail: [{ loc: ['body', 'training_files'], msg: 'Field required', type: 'missing' }] });
        n++;
        const id = `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
        const created = 1_700_000_000 + n;
        const job = {
          id,
          auto_start: body!.auto_start ?? false,
          model: body!.model,
          status: 'QUEUED',
          job_type: 'completion',
          created_at: created,
          modified_at: created,
          training_files: body!.training_files.map((f: Json) => f.file_id),
          validation_files: body!.validation_files ?? [],
          fine_tuned_model: null,
          suffix: body!.suffix ?? null,
          integrations: body!.integrations ?? [],
          trained_tokens: null,
          metadata: { expected_duration_seconds: 600, cost: 1.5 },
          hyperparameters: { training_steps: 10, learning_rate: 0.0001, ...body!.hyperparameters },
          events: [{ name: 'status-updated', data: { status: 'QUEUED' }, created_at: created }],
          checkpoints: [],
        };
        jobs.set(id, job);
        return send(200, shown(job, false));
      }
      if (req.method === 'GET' && url.pathname === '/v1/fine_tuning/jobs') {
        const page = Number(url.searchParams.get('page') ?? 0);
        const size = Number(url.searchParams.get('page_size') ?? 100);
        const all = [...jobs.values()].reverse();
        return send(200, { data: all.slice(page * size, (page + 1) * size).map((j) => shown(j, false)), object: 'list', total: all.length });
      }
      const m = /^\/v1\/fine_tuning\/jobs\/([^/]+)(\/cancel)?$/.exec(url.pathname);
      const job = m === null ? undefined : jobs.get(m[1]!);
      if (job === undefined) return send(404, { object: 'error', message: 'Job not found', type: 'invalid_request_error', code: '3001' });
      if (m![2] !== undefined && req.method === 'POST') {
        job.status = 'CANCELLATION_REQUESTED';
        job.events.push({ name: 'status-updated', data: { status: 'CANCELLATION_REQUESTED' }, created_at: job.modified_at + 1 });
      }
      return send(200, shown(job, true));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    jobs,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
