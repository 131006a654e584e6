import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SeenNativeRequest } from './provider-contract.js';

/** What a mock answers to a Messages `count_tokens` request, where the provider counts tokens itself. */
export const COUNTED_TOKENS = 12;

/** A mock upstream on an ephemeral port that records each request (JSON bodies parsed) before handing it on. */
export async function startRecordingServer(
  handle: (req: IncomingMessage, res: ServerResponse, seen: SeenNativeRequest) => void,
): Promise<{ url: string; requests: SeenNativeRequest[]; server: Server; close(): Promise<void> }> {
  const requests: SeenNativeRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: unknown = raw;
      try {
        body = raw === '' ? null : JSON.parse(raw);
      } catch {
        /* keep the text */
      }
      const seen = { method: req.method!, path: req.url!, headers: req.headers, body };
      requests.push(seen);
      handle(req, res, seen);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    server,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** Writes SSE events one by one (separate writes, as a real upstream flushes them), then ends. */
export function writeEvents(res: ServerResponse, events: string[], contentType = 'text/event-stream; charset=utf-8'): void {
  res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-cache' });
  for (const e of events) res.write(e);
  res.end();
}

export function sendJson(res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** A minimal OpenAI chat completions origin (see {@link startChatMock}). */
export interface ChatMock {
  /** What to put in a target's `custom_host`: `<url>/v1`. */
  baseURL: string;
  requests: SeenNativeRequest[];
  /** The answer text of the following requests (until set again). */
  answer(text: string): void;
  close(): Promise<void>;
}

/**
 * An OpenAI-format chat origin on 127.0.0.1 answering every chat completion with one text (JSON, or a
 * stream of two chunks and `[DONE]` when asked), with usage. For tests of plugins that are not providers
 * (checks, hooks), where any upstream will do.
 */
export async function startChatMock(initial = 'Hello!'): Promise<ChatMock> {
  let text = initial;
  const server = await startRecordingServer((_req, res, seen) => {
    const body = (seen.body ?? {}) as { model?: string; stream?: boolean };
    const base = { id: 'chatcmpl-mock', created: 1_700_000_000, model: body.model ?? 'mock-model' };
    const usage = { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 };
    if (body.stream !== true) {
      return sendJson(res, 200, { ...base, object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop', logprobs: null }], usage });
    }
    const half = Math.ceil(text.length / 2);
    const chunk = (delta: Record<string, unknown>, finish: string | null) => `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }] })}\n\n`;
    writeEvents(res, [chunk({ role: 'assistant', content: text.slice(0, half) }, null), chunk({ content: text.slice(half) }, null), chunk({}, 'stop'), 'data: [DONE]\n\n']);
  });
  return {
    baseURL: `${server.url}/v1`,
    requests: server.requests,
    answer: (next) => void (text = next),
    close: server.close,
  };
}
