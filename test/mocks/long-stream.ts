import type { ServerResponse } from 'node:http';
import { startRecordingServer } from '../../server/testing/mock-http.js';

/** One stream the mock sent (or began to): how far it got and whether the gateway hung up first. */
export interface SentStream {
  path: string;
  /** Text pieces written so far. */
  written: number;
  total: number;
  /** The connection closed before the last piece was written. */
  cutShort: boolean;
  /** performance.now() when the connection closed; null while open. */
  closedAt: number | null;
  /** performance.now() when each piece was written (index = piece). */
  writtenAt: number[];
}

/**
 * An OpenAI-wire upstream (chat completions and text completions) that streams a long answer, one
 * text piece per chunk, one chunk per `paceMs`, and records how far it got before the gateway hung up:
 * the test of a stream cut early (the upstream must see its connection closed).
 */
export interface LongStreamMock {
  /** For a target's `custom_host`. */
  baseURL: string;
  streams: SentStream[];
  /** The pieces of the following answers, one per chunk. */
  setPieces(pieces: string[]): void;
  close(): Promise<void>;
}

export async function startLongStreamMock(options: { paceMs?: number } = {}): Promise<LongStreamMock> {
  const paceMs = options.paceMs ?? 1;
  let pieces: string[] = ['Hello'];
  const streams: SentStream[] = [];
  const server = await startRecordingServer((req, res, seen) => {
    const body = (seen.body ?? {}) as Record<string, unknown>;
    const text = req.url!.endsWith('/completions') && !req.url!.endsWith('/chat/completions');
    const model = typeof body.model === 'string' ? body.model : 'mock-model';
    const script = pieces;
    const sent: SentStream = { path: req.url!, written: 0, total: script.length, cutShort: false, closedAt: null, writtenAt: [] };
    streams.push(sent);
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
    res.on('close', () => {
      sent.closedAt = performance.now();
      if (sent.written < sent.total) sent.cutShort = true;
    });
    const chunk = (piece: string | null, finish: string | null) =>
      text
        ? { id: 'cmpl-long', object: 'text_completion', created: 1, model, choices: [{ index: 0, text: piece ?? '', logprobs: null, finish_reason: finish }] }
        : { id: 'chatcmpl-long', object: 'chat.completion.chunk', created: 1, model, choices: [{ index: 0, delta: piece === null ? {} : { content: piece }, logprobs: null, finish_reason: finish }] };
    if (!text) res.write(`data: ${JSON.stringify({ ...chunk(null, null), choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }] })}\n\n`);
    const next = () => {
      if (res.destroyed) return;
      if (sent.written === script.length) return finish(res, chunk(null, 'stop'), script.join('').length);
      res.write(`data: ${JSON.stringify(chunk(script[sent.written]!, null))}\n\n`);
      sent.writtenAt.push(performance.now());
      sent.written++;
      setTimeout(next, paceMs);
    };
    next();
  });
  return {
    baseURL: `${server.url}/v1`,
    streams,
    setPieces(p) {
      pieces = p;
    },
    close: server.close,
  };
}

function finish(res: ServerResponse, last: Record<string, unknown>, chars: number): void {
  const usage = { prompt_tokens: 10, completion_tokens: Math.ceil(chars / 4), total_tokens: 10 + Math.ceil(chars / 4) };
  res.write(`data: ${JSON.stringify(last)}\n\n`);
  res.write(`data: ${JSON.stringify({ ...last, choices: [], usage })}\n\n`);
  res.end('data: [DONE]\n\n');
}

/** `count` filler pieces of a few characters each, with `insert` (its pieces, split across chunks) placed from piece `at`. */
export function piecesWith(count: number, at: number, insert: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < count; i++) {
    if (i === at) out.push(...insert);
    else out.push(`w${i % 10} `);
  }
  return out;
}
