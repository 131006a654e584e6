import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One scripted answer for model `queued`: a status (with an error body unless 2xx), extra headers, a delay. */
export interface ScriptedAnswer {
  status: number;
  headers?: Record<string, string>;
  delayMs?: number;
}

/** A request as the mock saw it. */
export interface SeenRequest {
  method: string;
  path: string;
  query: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface MockUpstream {
  url: string;
  /** Base URL to use as a custom host: `${url}/v1`. */
  baseURL: string;
  requests: SeenRequest[];
  /** Answers for requests whose model is `queued`, taken in order; a normal answer once empty. */
  script: ScriptedAnswer[];
  /** TCP connections accepted so far (keep-alive reuse keeps this low). */
  connections: () => number;
  /** Set to true to send streams without a usage chunk even when asked (a provider that reports none). */
  withholdUsage: boolean;
  server: Server;
  close(): Promise<void>;
}

/**
 * A mock OpenAI API speaking the real wire format (see shared/providers/openai.md).
 * The `model` in the body picks a behaviour, since shaped routes do not forward client headers:
 * - any ordinary name: a normal answer (JSON, or SSE when `stream: true`, with a usage chunk when
 *   `stream_options.include_usage` is set);
 * - `error-<status>`: that status with an OpenAI error envelope; 429 and 503 carry `retry-after` and `retry-after-ms`;
 * - `slow-<ms>`: the normal answer after `ms` milliseconds;
 * - `reset`: for a stream, two chunks and then a connection reset; otherwise a reset before any byte;
 * - `garbled`: bytes that are not HTTP;
 * - `queued`: the next answer from `script` (status, headers, delay), a normal answer when it is empty;
 * - `long-<n>`: a stream of `n` text chunks of a few words each (a realistic answer's length, for the
 *   bench of checked streams).
 * Other paths echo the request as JSON (for the generic proxy), with `x-echo` response headers.
 */
export async function startMockOpenAI(options: { record?: boolean } = {}): Promise<MockUpstream> {
  const record = options.record ?? true;
  const requests: SeenRequest[] = [];
  const script: ScriptedAnswer[] = [];
  // Filled in once the server listens; `withholdUsage` is read per request.
  const mock = { withholdUsage: false } as MockUpstream;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const q = (req.url ?? '/').indexOf('?');
      const path = q === -1 ? req.url! : req.url!.slice(0, q);
      const query = q === -1 ? '' : req.url!.slice(q + 1);
      if (record) requests.push({ method: req.method!, path, query, headers: req.headers, body: raw });
      const shaped = req.method === 'POST' && (path === '/v1/chat/completions' || path === '/v1/completions' || path === '/v1/embeddings');
      if (!shaped) return echo(res, req.method!, path, query, req.headers, raw);
      let body: Record<string, any>;
      try {
        body = JSON.parse(raw);
      } catch {
        return sendError(res, 400, 'We could not parse the JSON body of your request.', 'invalid_request_error', null);
      }
      const model = String(body.model ?? '');
      const scripted = model === 'queued' ? script.shift() : undefined;
      if (scripted !== undefined && (scripted.status < 200 || scripted.status >= 300)) {
        const reply = () => sendError(res, scripted.status, `Scripted error ${scripted.status}`, 'server_error', null, scripted.headers);
        if (scripted.delayMs) setTimeout(reply, scripted.delayMs);
        else reply();
        return;
      }
      if (model.startsWith('error-')) {
        const status = Number(model.slice(6));
        const headers: Record<string, string> = {};
        if (status === 429 || status === 503) {
          headers['retry-after'] = '1';
          headers['retry-after-ms'] = '1000';
        }
        const type = status === 429 ? 'requests' : status === 401 ? 'invalid_request_error' : status >= 500 ? 'server_error' : 'invalid_request_error';
        const code = status === 429 ? 'rate_limit_exceeded' : status === 401 ? 'invalid_api_key' : null;
        return sendError(res, status, `Mock error ${status}`, type, code, headers);
      }
      if (model === 'garbled') {
        res.socket!.end('this is not http\r\n\r\n');
        return;
      }
      if (model === 'reset' && body.stream !== true) {
        res.socket!.destroy();
        return;
      }
      const delayMs = model.startsWith('slow-') ? Number(model.slice(5)) : (scripted?.delayMs ?? 0);
      const answer = () => {
        if (path === '/v1/embeddings') return sendJson(res, embedding(body));
        if (path === '/v1/completions') return body.stream === true ? streamCompletion(res, body) : sendJson(res, completion(body));
        if (body.stream === true && model.startsWith('long-')) return streamLong(res, body, Number(model.slice(5)));
        if (body.stream === true) return streamChat(res, mock.withholdUsage ? { ...body, stream_options: undefined } : body, model === 'reset');
        sendJson(res, chat(body));
      };
      if (delayMs > 0) setTimeout(answer, delayMs);
      else answer();
    });
  });
  server.keepAliveTimeout = 60_000;
  let connections = 0;
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  Object.assign(mock, {
    url,
    baseURL: `${url}/v1`,
    requests,
    script,
    connections: () => connections,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
  return mock;
}

const USAGE = { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11, prompt_tokens_details: { cached_tokens: 3 }, completion_tokens_details: { reasoning_tokens: 1 } };

function chat(body: Record<string, any>) {
  return {
    id: 'chatcmpl-mock123',
    object: 'chat.completion',
    created: 1694268190,
    model: body.model,
    system_fingerprint: 'fp_mock',
    choices: [{ index: 0, message: { role: 'assistant', content: 'Hello from the mock!', refusal: null }, logprobs: null, finish_reason: 'stop' }],
    usage: USAGE,
  };
}

function completion(body: Record<string, any>) {
  return {
    id: 'cmpl-mock123',
    object: 'text_completion',
    created: 1589478378,
    model: body.model,
    choices: [{ text: '\n\nThis is a test', index: 0, logprobs: null, finish_reason: 'length' }],
    usage: { prompt_tokens: 5, completion_tokens: 7, total_tokens: 12 },
  };
}

function embedding(body: Record<string, any>) {
  const inputs = Array.isArray(body.input) ? body.input : [body.input];
  const vector = [0.0023064255, -0.009327292, 0.015797347];
  const data = inputs.map((_: unknown, index: number) => ({
    object: 'embedding',
    index,
    embedding: body.encoding_format === 'base64' ? Buffer.from(new Float32Array(vector).buffer).toString('base64') : vector,
  }));
  return { object: 'list', data, model: body.model, usage: { prompt_tokens: 8, total_tokens: 8 } };
}

function sendJson(res: import('node:http').ServerResponse, value: unknown, status = 200, headers: Record<string, string> = {}) {
  const text = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'x-request-id': 'req_mock', ...headers });
  res.end(text);
}

function sendError(res: import('node:http').ServerResponse, status: number, message: string, type: string, code: string | null, headers: Record<string, string> = {}) {
  sendJson(res, { error: { message, type, param: null, code } }, status, headers);
}

function echo(res: import('node:http').ServerResponse, method: string, path: string, query: string, headers: IncomingHttpHeaders, body: string) {
  const text = JSON.stringify({ method, path, query, headers, body });
  res.writeHead(path.endsWith('/teapot') ? 418 : 200, { 'content-type': 'application/json', 'x-echo': 'yes', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function streamChat(res: import('node:http').ServerResponse, body: Record<string, any>, reset: boolean) {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-request-id': 'req_mock' });
  const includeUsage = body.stream_options?.include_usage === true;
  const base = { id: 'chatcmpl-mock123', object: 'chat.completion.chunk', created: 1694268190, model: body.model, system_fingerprint: 'fp_mock' };
  const usageField = includeUsage ? { usage: null } : {};
  const events = [
    { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '', refusal: null }, logprobs: null, finish_reason: null }], ...usageField },
    { ...base, choices: [{ index: 0, delta: { content: 'Hello' }, logprobs: null, finish_reason: null }], ...usageField },
    { ...base, choices: [{ index: 0, delta: { content: '!' }, logprobs: null, finish_reason: null }], ...usageField },
    { ...base, choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }], ...usageField },
  ];
  if (reset) {
    res.write(`data: ${JSON.stringify(events[0])}\n\n`);
    res.write(`data: ${JSON.stringify(events[1])}\n\n`, () => setTimeout(() => res.socket?.destroy(), 20));
    return;
  }
  let text = '';
  for (const e of events) text += `data: ${JSON.stringify(e)}\n\n`;
  if (includeUsage) text += `data: ${JSON.stringify({ ...base, choices: [], usage: USAGE })}\n\n`;
  // Written as separate chunks, the way a real upstream flushes events.
  const parts = text.split(/(?<=\n\n)/);
  for (const p of parts) res.write(p);
  res.end('data: [DONE]\n\n');
}

/** Words a long answer is made of: ordinary prose, nothing any bench check denies. */
const LONG_WORDS = ['the', 'gateway', 'streams', 'each', 'answer', 'as', 'it', 'comes', 'and', 'checks', 'what', 'goes', 'out'];

function streamLong(res: import('node:http').ServerResponse, body: Record<string, any>, n: number) {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  const base = { id: 'chatcmpl-long', object: 'chat.completion.chunk', created: 1694268190, model: body.model };
  res.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }] })}\n\n`);
  let chars = 0;
  for (let i = 0; i < n; i++) {
    const content = `${LONG_WORDS[i % LONG_WORDS.length]} ${LONG_WORDS[(i * 7) % LONG_WORDS.length]} `;
    chars += content.length;
    res.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { content }, logprobs: null, finish_reason: null }] })}\n\n`);
  }
  res.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }] })}\n\n`);
  const completion = Math.ceil(chars / 4);
  if (body.stream_options?.include_usage === true) res.write(`data: ${JSON.stringify({ ...base, choices: [], usage: { prompt_tokens: 9, completion_tokens: completion, total_tokens: 9 + completion } })}\n\n`);
  res.end('data: [DONE]\n\n');
}

function streamCompletion(res: import('node:http').ServerResponse, body: Record<string, any>) {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' });
  const base = { id: 'cmpl-mock123', object: 'text_completion', created: 1589478378, model: body.model };
  res.write(`data: ${JSON.stringify({ ...base, choices: [{ text: 'Hi', index: 0, logprobs: null, finish_reason: null }] })}\n\n`);
  res.write(`data: ${JSON.stringify({ ...base, choices: [{ text: '!', index: 0, logprobs: null, finish_reason: 'stop' }] })}\n\n`);
  res.end('data: [DONE]\n\n');
}
