import { createWriteStream } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import busboy from 'busboy';
import { GatewayError, randomHex, type RequestContext } from '../../sdk/index.js';
import { batchLineProblem, fineTuneLineProblem, LineSplitter, lineText } from './jsonl.js';
import { batchesError } from './errors.js';

/** A received upload, validated, in a temp file. */
export interface Upload {
  tempPath: string;
  bytes: number;
  filename: string;
  purpose: string;
  /** Non-blank lines (0 for a purpose that is not JSONL). */
  lines: number;
}

export interface UploadLimits {
  tmpDir: string;
  maxBytes: number;
  maxLineBytes: number;
  /** Most lines in a `batch` file (OpenAI's limit is 50 000). */
  maxBatchLines: number;
  /** Purposes accepted. */
  purposes: ReadonlySet<string>;
}

/** Purposes whose files are JSONL, checked line by line. */
const JSONL_PURPOSES = new Set(['batch', 'fine-tune']);

interface Problem {
  line: number;
  message: string;
}

/**
 * Receives `POST /v1/files` (multipart: `file` and `purpose`, in either
 * order) into a temp file as it arrives: never held whole in memory, refused
 * with a 413 past `maxBytes`, and a `batch` or `fine-tune` file checked line
 * by line, a 400 naming the first bad line. When `purpose` comes before the
 * file, a bad line stops the upload at once; when it comes after, both checks
 * run and the purpose's decides at the end.
 */
export async function receiveUpload(ctx: RequestContext, limits: UploadLimits): Promise<Upload> {
  const type = ctx.header('content-type');
  if (type === undefined || !type.toLowerCase().startsWith('multipart/form-data')) {
    throw new GatewayError('unsupported_media_type', 'Upload the file as multipart/form-data with the fields "file" and "purpose".', { param: 'file' });
  }
  const declared = Number(ctx.header('content-length'));
  // Multipart framing adds a little; a declared length far past the limit is refused before a byte is read.
  if (Number.isFinite(declared) && declared > limits.maxBytes + 64 * 1024) throw tooLarge(limits.maxBytes);
  const req = ctx.bodyStream!;
  let bb: busboy.Busboy;
  try {
    bb = busboy({ headers: ctx.headers, limits: { files: 1, fileSize: limits.maxBytes, fields: 20, fieldSize: 64 * 1024, parts: 40 } });
  } catch {
    throw new GatewayError('invalid_request', 'The multipart body has no boundary.', { param: 'file' });
  }

  let purpose: string | undefined;
  // Held in an object: TypeScript does not see assignments made in the callbacks below.
  const part: { written: ReturnType<typeof writeChecked> | null; tempPath: string | null } = { written: null, tempPath: null };

  const fail = async (err: unknown): Promise<never> => {
    // The rest of the body is not read: the answer carries `connection: close`, so the server drops it.
    req.unpipe(bb);
    if (part.tempPath !== null) await unlink(part.tempPath).catch(() => undefined);
    throw err;
  };

  let stop: (err: unknown) => void = () => undefined;
  const stopped = new Promise<never>((_, reject) => (stop = reject));
  stopped.catch(() => undefined);
  const parsed = new Promise<void>((resolve, reject) => {
    bb.on('field', (name, value) => {
      if (name === 'purpose') purpose = value;
    });
    bb.on('file', (name, stream, info) => {
      if (name !== 'file' || part.written !== null) {
        stream.resume();
        return;
      }
      part.tempPath = join(limits.tmpDir, `upload-${randomHex(12)}`);
      part.written = writeChecked(stream, part.tempPath, info.filename || 'upload.jsonl', limits, () => purpose);
      // A bad line or the size limit answers at once, without waiting for the rest of the body.
      part.written.catch(stop);
    });
    bb.once('close', resolve);
    bb.once('error', (err) => reject(new GatewayError('invalid_request', `The multipart body is malformed: ${(err as Error).message}.`, { param: 'file', headers: { connection: 'close' } })));
    req.once('aborted', () => reject(new GatewayError('client_closed_request', 'The client closed the connection during the upload.')));
  });
  req.pipe(bb);

  try {
    await Promise.race([parsed, stopped]);
    if (part.written === null) throw new GatewayError('invalid_request', 'The upload has no "file" part.', { param: 'file' });
    const done = await part.written;
    if (purpose === undefined || purpose === '') throw new GatewayError('invalid_request', 'The upload has no "purpose" field.', { param: 'purpose' });
    if (!limits.purposes.has(purpose)) throw new GatewayError('invalid_request', `purpose must be one of ${[...limits.purposes].join(', ')}.`, { param: 'purpose' });
    const problem = purpose === 'batch' ? first(done.parse, done.batch) : purpose === 'fine-tune' ? first(done.parse, done.fineTune) : null;
    if (problem !== null) throw invalidLine(problem);
    return { tempPath: done.tempPath, bytes: done.bytes, filename: done.filename, purpose, lines: JSONL_PURPOSES.has(purpose) ? done.lines : 0 };
  } catch (err) {
    return fail(err);
  }
}

/** Streams the file part into `tempPath` through the line checks; rejects at once on a bad line of a purpose already known. */
async function writeChecked(
  stream: NodeJS.ReadableStream & { truncated?: boolean },
  tempPath: string,
  filename: string,
  limits: UploadLimits,
  purposeNow: () => string | undefined,
) {
  let bytes = 0;
  let lines = 0;
  let parse: Problem | null = null;
  let batch: Problem | null = null;
  let fineTune: Problem | null = null;
  const seen = new Set<string>();
  const splitter = new LineSplitter(
    limits.maxLineBytes,
    (line) => {
      if (parse !== null) return;
      const text = lineText(line.bytes);
      if (text === null) return;
      lines++;
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        parse = { line: line.number, message: 'not valid JSON' };
        return;
      }
      const purpose = purposeNow();
      if (batch === null && purpose !== 'fine-tune') {
        const p = lines > limits.maxBatchLines ? { message: `past the limit of ${limits.maxBatchLines} requests in a batch file` } : batchLineProblem(value, seen, null);
        if (p !== null) batch = { line: line.number, message: p.message };
      }
      if (fineTune === null && purpose !== 'batch') {
        const p = fineTuneLineProblem(value);
        if (p !== null) fineTune = { line: line.number, message: p.message };
      }
    },
    (number) => {
      parse ??= { line: number, message: `longer than ${limits.maxLineBytes} bytes` };
    },
  );
  let limited = false;
  const check = new Transform({
    transform(chunk: Buffer, _enc, done) {
      bytes += chunk.length;
      splitter.push(chunk);
      const purpose = purposeNow();
      const problem = purpose === 'batch' ? first(parse, batch) : purpose === 'fine-tune' ? first(parse, fineTune) : null;
      done(problem === null ? null : invalidLine(problem), chunk);
    },
    flush(done) {
      splitter.end();
      done();
    },
  });
  (stream as NodeJS.EventEmitter).once('limit', () => {
    limited = true;
    check.destroy(tooLarge(limits.maxBytes));
  });
  await pipeline(stream, check, createWriteStream(tempPath));
  if (limited || stream.truncated === true) throw tooLarge(limits.maxBytes);
  return { tempPath, bytes, filename: filename.slice(0, 255), lines, parse, batch, fineTune };
}

function first(a: Problem | null, b: Problem | null): Problem | null {
  if (a === null) return b;
  if (b === null) return a;
  return a.line <= b.line ? a : b;
}

function invalidLine(p: Problem): GatewayError {
  return batchesError('invalid_file', `Invalid JSONL file: line ${p.line}: ${p.message}.`, { param: 'file', headers: { connection: 'close' } });
}

function tooLarge(limit: number): GatewayError {
  return new GatewayError('payload_too_large', `The file is larger than the limit of ${limit} bytes (maxFileBytes).`, { param: 'file', headers: { connection: 'close' } });
}
