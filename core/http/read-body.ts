import type { IncomingMessage } from 'node:http';
import { GatewayError } from '../errors.js';
import { DEFAULT_MAX_JSON_DEPTH, exceedsJsonDepth } from '../json-limits.js';

/**
 * Reads the whole request body, refusing anything over `limit` bytes with a
 * 413 before or while reading. Bodies are buffered because retries and
 * fallbacks may send them more than once. A request that times out while its
 * body is read (the 'timeout' Node emits on an incomplete request when its
 * socket's inactivity timer, set with `req.setTimeout`, expires: the bundled
 * server's `server.bodyIdleTimeoutMs`) is a 408 that closes the connection.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) {
    return Promise.reject(tooLarge(limit));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        // Stop reading: the answer closes the connection (the bundled server drops what still comes, bounded: server/linger.ts).
        req.pause();
        reject(tooLarge(limit));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onError = (err: Error) => {
      cleanup();
      reject(new GatewayError('invalid_request', 'The request body could not be read.', { cause: err }));
    };
    const onClose = () => {
      if (!req.complete) onError(new Error('client closed the connection'));
    };
    const onTimeout = () => {
      cleanup();
      req.pause();
      reject(stalled(req.socket.timeout));
    };
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
      req.off('timeout', onTimeout);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
    req.on('timeout', onTimeout);
  });
}

function stalled(idleMs: number | undefined): GatewayError {
  const pause = idleMs === undefined ? '' : `: nothing of it came for ${idleMs} ms`;
  return new GatewayError('request_timeout', `The request body stopped arriving before it was complete${pause}.`, { headers: { connection: 'close' } });
}

function tooLarge(limit: number): GatewayError {
  return new GatewayError('payload_too_large', `The request body is larger than the limit of ${limit} bytes.`, {
    headers: { connection: 'close' },
  });
}

/**
 * Parses a JSON request body that must be an object; 400 otherwise. Nesting
 * deeper than `maxDepth` is refused before parsing, so nothing that walks the
 * body later (re-serialising it, keying a cache) can overflow the stack.
 */
export function parseJsonObject(raw: Buffer, maxDepth: number = DEFAULT_MAX_JSON_DEPTH): Record<string, unknown> {
  if (raw.length === 0) throw new GatewayError('invalid_json', 'The request body is empty; a JSON object is required.');
  if (exceedsJsonDepth(raw, maxDepth)) throw tooDeep('The request body', maxDepth);
  let value: unknown;
  try {
    value = JSON.parse(raw.toString('utf8'));
  } catch {
    // The parser's message quotes the body; say only what is wrong.
    throw new GatewayError('invalid_json', 'The request body is not valid JSON.');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new GatewayError('invalid_json', 'The request body must be a JSON object.');
  }
  return value as Record<string, unknown>;
}

/** The 400 for JSON nested deeper than the limit; `what` names it (`The request body`, `x-gateway-config`). */
export function tooDeep(what: string, maxDepth: number, param: string | null = null): GatewayError {
  return new GatewayError('json_too_deep', `${what} nests objects and arrays deeper than ${maxDepth} levels, the limit (maxJsonDepth).`, { param });
}
