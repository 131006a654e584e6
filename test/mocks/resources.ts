import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import busboy from 'busboy';

/** A request the mock received: method, path with query, headers. */
export interface SeenCall {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: unknown;
}

type Json = Record<string, any>;

/**
 * A mock of the OpenAI-format resource APIs (files, batches, fine-tuning jobs
 * with their checkpoints and events), as OpenAI serves them under `/v1` with a
 * bearer key, or as Azure OpenAI serves them under `/openai` with `api-key`
 * and a required `api-version` (shared/providers/openai.md §9–11, azure.md §1).
 * Lists page with `after` and `limit`, newest first. Tests set the state of
 * batches and jobs directly.
 */
export interface ResourcesMock {
  url: string;
  calls: SeenCall[];
  files: Map<string, Json & { content: string }>;
  batches: Map<string, Json>;
  jobs: Map<string, Json>;
  checkpoints: Map<string, Json[]>;
  events: Map<string, Json[]>;
  close(): Promise<void>;
}

export async function startResourcesMock(flavour: 'openai' | 'azure'): Promise<ResourcesMock> {
  const prefix = flavour === 'openai' ? '/v1' : '/openai';
  const calls: SeenCall[] = [];
  const files = new Map<string, Json & { content: string }>();
  const batches = new Map<string, Json>();
  const jobs = new Map<string, Json>();
  const checkpoints = new Map<string, Json[]>();
  const events = new Map<string, Json[]>();
  let n = 0;
  const now = () => Math.floor(Date.now() / 1000);

  const send = (res: ServerResponse, status: number, value: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json', 'x-request-id': 'req_mock' }).end(JSON.stringify(value));
  };
  const error = (res: ServerResponse, status: number, message: string) =>
    flavour === 'openai' ? send(res, status, { error: { message, type: 'invalid_request_error', param: null, code: status === 404 ? 'not_found' : null } }) : send(res, status, { error: { code: String(status), message } });
  /** Newest first, after the `after` id, `limit` items (default 20). */
  const page = (items: Json[], q: URLSearchParams) => {
    const sorted = [...items].reverse();
    const after = q.get('after');
    const start = after === null ? 0 : sorted.findIndex((i) => i.id === after) + 1;
    const limit = Number(q.get('limit') ?? 20);
    const data = sorted.slice(start, start + limit);
    return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: start + limit < sorted.length };
  };

  const server: Server = createServer((req, res) => {
    const url = new URL(req.url!, 'http://mock');
    const seen: SeenCall = { method: req.method!, url: req.url!, headers: req.headers, body: null };
    calls.push(seen);
    const authorised = flavour === 'openai' ? req.headers.authorization === 'Bearer sk-openai-test' : req.headers['api-key'] === 'azure-test-key';
    if (!authorised) return error(res, 401, 'Incorrect API key provided.');
    if (flavour === 'azure' && url.searchParams.get('api-version') !== '2024-10-21') return error(res, 404, 'Resource not found');
    if (!url.pathname.startsWith(prefix + '/')) return error(res, 404, 'Unknown path');
    const path = url.pathname.slice(prefix.length);
    const q = url.searchParams;

    if (req.method === 'POST' && path === '/files') {
      const bb = busboy({ headers: req.headers });
      let purpose = '';
      let filename = '';
      const chunks: Buffer[] = [];
      bb.on('field', (name, value) => name === 'purpose' && (purpose = value));
      bb.on('file', (_name, stream, info) => {
        filename = info.filename ?? '';
        stream.on('data', (c: Buffer) => chunks.push(c));
      });
      bb.on('close', () => {
        const content = Buffer.concat(chunks).toString('utf8');
        const id = `file-mock${++n}`;
        const file = { id, object: 'file', bytes: Buffer.byteLength(content), created_at: now(), filename, purpose, status: 'processed', status_details: null, content };
        files.set(id, file);
        const { content: _c, ...shown } = file;
        send(res, 200, flavour === 'azure' ? { ...shown, status: 'pending' } : shown);
      });
      req.pipe(bb);
      return;
    }

    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const body = text === '' ? null : (JSON.parse(text) as Json);
      seen.body = body;
      let m: RegExpExecArray | null;
      if (req.method === 'GET' && path === '/files') return send(res, 200, page([...files.values()].map(({ content: _c, ...f }) => f), q));
      if ((m = /^\/files\/([^/]+)(\/content)?$/.exec(path))) {
        const file = files.get(decodeURIComponent(m[1]!));
        if (file === undefined) return error(res, 404, 'No such file');
        if (m[2] !== undefined) return void res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(file.content);
        if (req.method === 'DELETE') {
          files.delete(file.id);
          return send(res, 200, { id: file.id, object: 'file', deleted: true });
        }
        const { content: _c, ...shown } = file;
        return send(res, 200, shown);
      }
      if (req.method === 'POST' && path === '/batches') {
        const id = `batch_mock${++n}`;
        const batch = {
          id,
          object: 'batch',
          endpoint: body!.endpoint,
          errors: null,
          input_file_id: body!.input_file_id,
          completion_window: body!.completion_window,
          status: 'validating',
          output_file_id: null,
          error_file_id: null,
          created_at: now(),
          in_progress_at: null,
          expires_at: now() + 86400,
          finalizing_at: null,
          completed_at: null,
          failed_at: null,
          expired_at: null,
          cancelling_at: null,
          cancelled_at: null,
          request_counts: { total: 0, completed: 0, failed: 0 },
          usage: { input_tokens: 0, output_tokens: 0, total_tokens: 0 },
          metadata: body!.metadata ?? null,
        };
        batches.set(id, batch);
        return send(res, 200, batch);
      }
      if (req.method === 'GET' && path === '/batches') return send(res, 200, page([...batches.values()], q));
      if ((m = /^\/batches\/([^/]+)(\/cancel)?$/.exec(path))) {
        const batch = batches.get(decodeURIComponent(m[1]!));
        if (batch === undefined) return error(res, 404, 'No such batch');
        if (m[2] !== undefined) Object.assign(batch, { status: 'cancelling', cancelling_at: now() });
        return send(res, 200, batch);
      }
      if (req.method === 'POST' && path === '/fine_tuning/jobs') {
        const id = `ftjob-mock${++n}`;
        const job = {
          id,
          object: 'fine_tuning.job',
          model: body!.model,
          created_at: now() + n,
          finished_at: null,
          fine_tuned_model: null,
          organization_id: 'org-mock',
          result_files: [],
          status: flavour === 'azure' ? 'pending' : 'validating_files',
          trained_tokens: null,
          training_file: body!.training_file,
          validation_file: body!.validation_file ?? null,
          hyperparameters: { n_epochs: body!.hyperparameters?.n_epochs ?? 'auto', batch_size: 'auto', learning_rate_multiplier: 'auto' },
          seed: body!.seed ?? 42,
          estimated_finish: null,
          integrations: body!.integrations ?? null,
          error: null,
          method: { type: 'supervised' },
        };
        jobs.set(id, job);
        checkpoints.set(id, []);
        events.set(id, [{ object: 'fine_tuning.job.event', id: `ftevent-${id}-0`, created_at: now(), level: 'info', message: 'Created fine-tuning job', type: 'message', data: {} }]);
        return send(res, 200, job);
      }
      if (req.method === 'GET' && path === '/fine_tuning/jobs') return send(res, 200, page([...jobs.values()], q));
      if ((m = /^\/fine_tuning\/jobs\/([^/]+)(\/cancel|\/checkpoints|\/events)?$/.exec(path))) {
        const id = decodeURIComponent(m[1]!);
        const job = jobs.get(id);
        if (job === undefined) return error(res, 404, 'No such job');
        if (m[2] === '/cancel') Object.assign(job, { status: 'cancelled', finished_at: now() });
        if (m[2] === '/checkpoints') return send(res, 200, page(checkpoints.get(id)!, q));
        if (m[2] === '/events') return send(res, 200, page(events.get(id)!, q));
        return send(res, 200, job);
      }
      error(res, 404, 'Unknown path');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    files,
    batches,
    jobs,
    checkpoints,
    events,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
