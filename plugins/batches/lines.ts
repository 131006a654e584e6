import { createWriteStream, type WriteStream } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { randomHex } from '../../sdk/index.js';

/*
 * What a gateway-run batch keeps and writes besides its queue: the ids of its
 * result files, the headers of its create call, and its output and error lines.
 */

/** The output file of a batch keeps the same id if its writing is redone after a crash. */
export const outputFileId = (batchId: string) => `file-gw-${batchId.slice('batch-gw-'.length)}-output`;
export const errorFileId = (batchId: string) => `file-gw-${batchId.slice('batch-gw-'.length)}-errors`;

/** Headers of the create call that are not kept: the gateway key, ids of that one request, framing. */
const DROPPED_HEADERS = new Set([
  'host',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'content-length',
  'content-type',
  'expect',
  'accept',
  'accept-encoding',
  'cookie',
  'upgrade',
  'te',
  'trailer',
  'x-gateway-api-key',
  'x-gateway-trace-id',
  'x-gateway-span-id',
  'x-gateway-parent-span-id',
  'x-gateway-span-name',
  'traceparent',
  'tracestate',
]);

/** The headers a batch keeps from its create call. */
export function keptHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || DROPPED_HEADERS.has(name)) continue;
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

/** One line of an output or error file, in OpenAI's batch output format. */
export function outputLine(customId: string, response: { status_code: number; request_id: string | null; body: unknown } | null, error: { code: string; message: string } | null): string {
  return JSON.stringify({ id: `batch_req_${randomHex(12)}`, custom_id: customId, response, error });
}

export function notRunLine(customId: string, state: string): string {
  if (state === 'cancelled') return outputLine(customId, null, { code: 'batch_cancelled', message: 'The batch was cancelled before this request started.' });
  if (state === 'expired') return outputLine(customId, null, { code: 'batch_expired', message: 'The batch expired before this request ran.' });
  return outputLine(customId, null, { code: 'batch_line_unfinished', message: 'The request did not finish.' });
}

export function metadataOf(headers: Record<string, string>): Record<string, unknown> {
  const raw = headers['x-gateway-metadata'];
  if (raw === undefined) return {};
  try {
    const value = JSON.parse(raw) as unknown;
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** The wait a refusal asks for (`retry-after` in seconds), at least 100 ms and at most a minute; a second when it gives none. */
export function retryAfterMs(header: string | string[] | undefined): number {
  const seconds = Number(Array.isArray(header) ? header[0] : header);
  if (!Number.isFinite(seconds)) return 1000;
  return Math.min(60_000, Math.max(100, seconds * 1000));
}

/** A JSONL file written line by line with backpressure. */
export class LineFile {
  readonly #stream: WriteStream;
  lines = 0;
  constructor(readonly path: string) {
    this.#stream = createWriteStream(path);
  }
  async write(line: string): Promise<void> {
    this.lines++;
    if (!this.#stream.write(line + '\n')) await new Promise<void>((resolve, reject) => this.#stream.once('drain', resolve).once('error', reject));
  }
  close(): Promise<void> {
    return new Promise((resolve, reject) => this.#stream.end((err?: Error | null) => (err ? reject(err) : resolve())));
  }
  async discard(): Promise<void> {
    this.#stream.destroy();
    await unlink(this.path).catch(() => undefined);
  }
}

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
