import busboy from 'busboy';
import { GatewayError, type RequestContext } from '../../sdk/index.js';

/** The bounds of a multipart body (docs/media.md#uploads). */
export interface MultipartLimits {
  /** Bytes of the whole body. */
  maxBytes: number;
  /** Parts, files and fields together. */
  maxParts: number;
  /** Bytes of one text field's value. */
  maxFieldBytes: number;
}

const tooLarge = (limit: number) =>
  new GatewayError('payload_too_large', `The upload is larger than the limit of ${limit} bytes (maxUploadBytes).`, { param: 'file', headers: { connection: 'close' } });

/**
 * Reads a multipart body as it arrives, within its bounds: the bytes are kept to be sent on (a retry or a fallback
 * sends them again), never past `maxBytes` (a 413, and the rest is not read); busboy checks the framing and counts
 * the parts as they pass (a 400 past `maxParts`, or for a field longer than `maxFieldBytes`). The text fields
 * become `ctx.body` (`model`, `prompt`, `stream`, …), so routing, limits and the log read them as a JSON body's.
 */
export async function readMultipart(ctx: RequestContext, limits: MultipartLimits): Promise<void> {
  const type = ctx.header('content-type');
  if (type === undefined || !type.toLowerCase().startsWith('multipart/form-data')) {
    throw new GatewayError('unsupported_media_type', `${ctx.method} ${ctx.path} takes multipart/form-data (a file and its fields).`, { param: 'content-type' });
  }
  const declared = Number(ctx.header('content-length'));
  // A declared length past the limit is refused before a byte is read.
  if (Number.isFinite(declared) && declared > limits.maxBytes) throw tooLarge(limits.maxBytes);
  const req = ctx.bodyStream;
  if (req === null) throw new GatewayError('invalid_request', 'The request has no body.', { param: 'file' });
  let bb: busboy.Busboy;
  try {
    bb = busboy({ headers: ctx.headers, limits: { parts: limits.maxParts, fieldSize: limits.maxFieldBytes, fileSize: limits.maxBytes } });
  } catch {
    throw new GatewayError('invalid_request', 'The multipart body has no boundary.', { param: 'content-type' });
  }
  const chunks: Buffer[] = [];
  let size = 0;
  const fields: Record<string, unknown> = {};
  const done = new Promise<void>((resolve, reject) => {
    const fail = (err: GatewayError) => {
      req.unpipe(bb);
      req.off('data', keep);
      reject(err);
    };
    const keep = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limits.maxBytes) {
        fail(tooLarge(limits.maxBytes));
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', keep);
    bb.on('field', (name, value, info) => {
      if (info.valueTruncated) fail(new GatewayError('invalid_request', `The field "${name.slice(0, 64)}" is longer than ${limits.maxFieldBytes} bytes.`, { param: name.slice(0, 64) }));
      else if (fields[name] === undefined) fields[name] = value;
    });
    // File parts go on as bytes; the gateway only needs to count them past.
    bb.on('file', (_name, stream) => stream.resume());
    bb.once('partsLimit', () => fail(new GatewayError('invalid_request', `The multipart body has more than ${limits.maxParts} parts.`, { param: 'file', headers: { connection: 'close' } })));
    bb.once('close', () => resolve());
    bb.once('error', (err) => fail(new GatewayError('invalid_request', `The multipart body is malformed: ${(err as Error).message}.`, { param: 'file', headers: { connection: 'close' } })));
    req.once('aborted', () => fail(new GatewayError('client_closed_request', 'The client closed the connection during the upload.')));
  });
  req.pipe(bb);
  await done;
  ctx.rawBody = Buffer.concat(chunks, size);
  ctx.bodyStream = null;
  ctx.body = fields;
  if (typeof fields.model === 'string' && fields.model !== '') ctx.model = fields.model;
  ctx.stream = fields.stream === 'true';
}
