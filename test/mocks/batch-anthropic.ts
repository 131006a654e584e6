import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * An Anthropic Messages mock for batch tests. Each request's user text names
 * its line (`line-17`); it answers 200 with that text echoed, or 400 when the
 * text starts with `fail`. Every call is recorded with its text and the time
 * its answer went out, so tests can tell which lines ran, and how often.
 */
export interface BatchAnthropicMock {
  url: string;
  /** Texts of the requests answered, in order. */
  calls: string[];
  /** Texts of the requests received, in order (a request is here before its answer is in `calls`). */
  started: string[];
  /** How many calls are being answered now. */
  readonly active: number;
  /** The most that were answered at once. */
  readonly peak: number;
  /** Milliseconds each answer waits. */
  delayMs: number;
  close(): Promise<void>;
}

export async function startBatchAnthropicMock(delayMs = 0): Promise<BatchAnthropicMock> {
  const calls: string[] = [];
  const started: string[] = [];
  let active = 0;
  let peak = 0;
  const state = { delayMs };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url !== '/v1/messages' || !req.headers['x-api-key']) {
        res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ type: 'error', error: { type: 'authentication_error', message: 'no key' } }));
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { model: string; messages: Array<{ content: string }> };
      const text = String(body.messages[0]?.content ?? '');
      started.push(text);
      active++;
      peak = Math.max(peak, active);
      setTimeout(() => {
        active--;
        calls.push(text);
        if (text.startsWith('fail')) {
          res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: `refused ${text}` } }));
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            id: `msg_${text}`,
            type: 'message',
            role: 'assistant',
            model: body.model,
            content: [{ type: 'text', text: `echo ${text}` }],
            stop_reason: 'end_turn',
            stop_sequence: null,
            usage: { input_tokens: 5, output_tokens: 3 },
          }),
        );
      }, state.delayMs);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    started,
    get active() {
      return active;
    },
    get peak() {
      return peak;
    },
    get delayMs() {
      return state.delayMs;
    },
    set delayMs(ms: number) {
      state.delayMs = ms;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
