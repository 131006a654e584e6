import { createHash } from 'node:crypto';
import type { GatewayResponse, RequestContext } from '../core/index.js';

/**
 * A file a plugin serves from memory (the dashboard's bundle, the API viewer's files): its bytes, media
 * type, a strong ETag of its content, and, when worth it, the same bytes gzipped once ahead of time.
 */
export interface StaticFile {
  /** The file's bytes, as sent. */
  body: Buffer;
  /** Its media type (`content-type`), e.g. `text/html; charset=utf-8`. */
  type: string;
  /** The quoted content hash, `"…"`. */
  etag: string;
  /** The content hash alone, for a URL (`?v=`) that changes whenever the file does. */
  version: string;
  /** The body gzipped, or null to always send it as it is. */
  gzip: Buffer | null;
}

/** A file with the hash of its content as ETag and URL version. */
export function staticFile(body: Buffer, type: string, gzip: Buffer | null = null): StaticFile {
  const version = createHash('sha256').update(body).digest('base64url').slice(0, 16);
  return { body, type, etag: `"${version}"`, version, gzip };
}

const WEAK = /^W\//;
const ACCEPTS_GZIP = /\bgzip\b/;

/** Whether an `If-None-Match` value names this ETag: a list, `*`, weak tags compared weakly (RFC 9110). */
export function etagMatches(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  return header.split(',').some((tag) => {
    const t = tag.trim();
    return t === '*' || t.replace(WEAK, '') === etag;
  });
}

/**
 * The answer for a {@link StaticFile}: 304 when the client holds this version, else the file, gzipped when the
 * client accepts it and a gzipped copy exists. `headers` (security headers, say) go on both.
 */
export function staticAnswer(ctx: RequestContext, file: StaticFile, cacheControl: string, headers: Readonly<Record<string, string>> = {}): GatewayResponse {
  const out: Record<string, string> = { ...headers, etag: file.etag, 'cache-control': cacheControl };
  if (file.gzip !== null) out.vary = 'accept-encoding';
  if (etagMatches(ctx.header('if-none-match'), file.etag)) return { status: 304, headers: out, body: null, observers: null };
  out['content-type'] = file.type;
  if (file.gzip !== null && ACCEPTS_GZIP.test(ctx.header('accept-encoding') ?? '')) {
    out['content-encoding'] = 'gzip';
    return { status: 200, headers: out, body: file.gzip, observers: null };
  }
  return { status: 200, headers: out, body: file.body, observers: null };
}
