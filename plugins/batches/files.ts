import { unlink } from 'node:fs/promises';
import { Readable } from 'node:stream';
import * as v from 'valibot';
import {
  GatewayError,
  type GatewayResponse,
  jsonResponse,
  type NativeTarget,
  nativeFormat,
  passThrough,
  type PluginAPI,
  randomHex,
  readNative,
  type RequestContext,
  resolveLeaf,
  type SecretBox,
  selectedTarget,
  sendNative,
  type SqlClient,
  uuidv7,
} from '../../sdk/index.js';
import type { ParsedOptions } from './options.js';
import { deleteFile, fileInUse, getFile, insertFile, listFiles, type FileRow } from './repository.js';
import type { BatchRunner } from './runner.js';
import { cursorPage, limitParam, normaliseFile, parseQuery, presentFile } from './shapes.js';
import { tempReadStream } from './stores/local.js';
import type { FileStore } from './stores/types.js';
import { receiveUpload } from './upload.js';

/** What the route handlers of the plugin share. */
export interface Deps {
  api: PluginAPI;
  db(): SqlClient;
  store(): FileStore;
  box(): SecretBox;
  runner(): BatchRunner | null;
  now(): number;
  opts: ParsedOptions;
  /** The workspace a request acts in (sdk/tenancy.ts), `''` for none: it owns what the request creates, so two workspaces' files never mix. */
  tenant(ctx: RequestContext): string | Promise<string>;
}

/** Ids of files the gateway keeps: `file-gw-` and 32 hex digits that sort by creation time (no provider's id has a dash there). */
export const LOCAL_FILE_PREFIX = 'file-gw-';
export const newFileId = (now: number) => LOCAL_FILE_PREFIX + uuidv7(now).replace(/-/g, '');

/** Purposes the gateway keeps files for; a provider with a files API takes its own list. */
const LOCAL_PURPOSES: ReadonlySet<string> = new Set(['batch', 'fine-tune']);
const NATIVE_PURPOSES: ReadonlySet<string> = new Set(['batch', 'fine-tune', 'assistants', 'vision', 'user_data', 'evals']);

/**
 * The owners whose files and batches a caller sees: its workspace's (what it creates is owned by
 * `deps.tenant`, the workspace it acts in); an organisation-level key also those its kind stored
 * before files belonged to the workspace a key acts in (owner '').
 */
export async function visibleOwners(deps: Deps, ctx: RequestContext): Promise<string[]> {
  const owner = await deps.tenant(ctx);
  return owner !== '' && (ctx.auth?.workspaceId ?? null) === null ? [owner, ''] : [owner];
}

/**
 * The provider the request selects when it serves `kind` natively; null when
 * the request selects none, a strategy tree, or a provider without that API
 * (the gateway then does the work itself).
 */
export async function nativeFor(deps: Deps, ctx: RequestContext, kind: 'files' | 'batches'): Promise<NativeTarget | null> {
  const target = await selectedTarget(deps.api, ctx);
  if (target === null) return null;
  const leaf = await resolveLeaf(deps.api, ctx, target);
  return leaf !== null && nativeFormat(leaf.provider, kind) !== null ? leaf : null;
}

const notFound = (id: string) => new GatewayError('not_found', `No file "${id.slice(0, 128)}".`, { param: 'file_id' });

/** A file the caller may see: the gateway's, in the caller's workspace. */
async function visibleFile(deps: Deps, ctx: RequestContext, id: string): Promise<FileRow> {
  const row = id.startsWith(LOCAL_FILE_PREFIX) ? await getFile(deps.db(), id) : undefined;
  if (row === undefined || !(await visibleOwners(deps, ctx)).includes(row.owner)) throw notFound(id);
  return row;
}

/** Answers a resource API call: the normalised value for a 2xx, the provider's error in the envelope otherwise. */
async function nativeJson(deps: Deps, ctx: RequestContext, native: NativeTarget, call: Parameters<typeof sendNative>[3], shape: (value: Record<string, unknown>) => unknown): Promise<GatewayResponse> {
  const answer = await readNative(await sendNative(deps.api, ctx, native, call));
  return answer.ok ? jsonResponse(200, shape(answer.value)) : answer.response;
}

/** `POST /v1/files`: streamed to a temp file and checked, then kept by the gateway or sent on to the provider. */
export async function uploadFile(deps: Deps, ctx: RequestContext): Promise<GatewayResponse> {
  const native = await nativeFor(deps, ctx, 'files');
  const store = deps.store();
  const upload = await receiveUpload(ctx, {
    tmpDir: store.tmpDir,
    maxBytes: deps.opts.maxFileBytes,
    maxLineBytes: deps.opts.maxLineBytes,
    maxBatchLines: deps.opts.maxBatchLines,
    purposes: native === null ? LOCAL_PURPOSES : NATIVE_PURPOSES,
  });
  if (native !== null) {
    try {
      const { body, length, type } = multipart(upload.tempPath, upload.bytes, upload.filename, upload.purpose);
      return await nativeJson(deps, ctx, native, { method: 'POST', path: '/files', headers: { 'content-type': type, 'content-length': String(length) }, body }, normaliseFile);
    } finally {
      await unlink(upload.tempPath).catch(() => undefined);
    }
  }
  const now = deps.now();
  const id = newFileId(now);
  try {
    await store.put(id, upload.tempPath, upload.bytes);
  } catch (err) {
    await unlink(upload.tempPath).catch(() => undefined);
    throw err;
  }
  const row: FileRow = { id, owner: await deps.tenant(ctx), purpose: upload.purpose, filename: upload.filename, bytes: upload.bytes, line_count: upload.lines, store: store.kind, location: id, created_at: now };
  await insertFile(deps.db(), row);
  return jsonResponse(200, presentFile(row));
}

/**
 * The upload form, for the API reference: the body is read as it streams in (`receiveUpload`), which
 * checks the same two fields (`purpose` before `file`) and, for JSONL purposes, each line.
 */
export const UploadForm = v.strictObject({
  purpose: v.pipe(v.string(), v.description(`What the file is for: ${[...LOCAL_PURPOSES].join(', ')} (a provider that keeps files itself takes ${[...NATIVE_PURPOSES].join(', ')}). Send it before \`file\`.`)),
  file: v.pipe(v.string(), v.metadata({ contentMediaType: 'application/octet-stream', description: 'The file: JSONL for batches and fine-tuning.' })),
});

export const ListFilesQuery = v.strictObject({
  purpose: v.optional(v.string()),
  limit: v.optional(limitParam(10_000)),
  order: v.optional(v.picklist(['asc', 'desc'], 'must be asc or desc')),
  after: v.optional(v.string()),
});

/** `GET /v1/files`: the provider's list when it keeps files, else the caller's workspace's, newest first. */
export async function listFilesRoute(deps: Deps, ctx: RequestContext): Promise<GatewayResponse> {
  const q = parseQuery(ctx, ListFilesQuery);
  const native = await nativeFor(deps, ctx, 'files');
  if (native !== null) {
    return nativeJson(deps, ctx, native, { method: 'GET', path: `/files${ctx.query === '' ? '' : `?${ctx.query}`}` }, (value) => {
      const data = Array.isArray(value.data) ? (value.data as Record<string, unknown>[]).map(normaliseFile) : [];
      return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: value.has_more === true };
    });
  }
  const limit = q.limit ?? 10_000;
  const rows = await listFiles(deps.db(), await visibleOwners(deps, ctx), { purpose: q.purpose, after: q.after, limit, order: q.order ?? 'desc' });
  return jsonResponse(200, cursorPage(rows.map(presentFile), limit));
}

/** `GET /v1/files/{id}`. */
export async function getFileRoute(deps: Deps, ctx: RequestContext): Promise<GatewayResponse> {
  const id = ctx.params!.file_id!;
  if (!id.startsWith(LOCAL_FILE_PREFIX)) {
    const native = await nativeFor(deps, ctx, 'files');
    if (native !== null) return nativeJson(deps, ctx, native, { method: 'GET', path: `/files/${encodeURIComponent(id)}` }, normaliseFile);
  }
  return jsonResponse(200, presentFile(await visibleFile(deps, ctx, id)));
}

/** `GET /v1/files/{id}/content`: the bytes, streamed from the store (or from the provider, as it sends them). */
export async function fileContentRoute(deps: Deps, ctx: RequestContext): Promise<GatewayResponse> {
  const id = ctx.params!.file_id!;
  if (!id.startsWith(LOCAL_FILE_PREFIX)) {
    const native = await nativeFor(deps, ctx, 'files');
    if (native !== null) {
      const upstream = await sendNative(deps.api, ctx, native, { method: 'GET', path: `/files/${encodeURIComponent(id)}/content` });
      if (upstream.status >= 200 && upstream.status < 300) return passThrough(upstream);
      const answer = await readNative(upstream);
      return answer.ok ? jsonResponse(upstream.status, answer.value) : answer.response;
    }
  }
  const row = await visibleFile(deps, ctx, id);
  const body = await deps.store().read(row.location);
  return { status: 200, headers: { 'content-type': 'application/octet-stream', 'content-length': String(row.bytes) }, body, observers: null };
}

/** `DELETE /v1/files/{id}`; refused while a batch still reads it. */
export async function deleteFileRoute(deps: Deps, ctx: RequestContext): Promise<GatewayResponse> {
  const id = ctx.params!.file_id!;
  if (!id.startsWith(LOCAL_FILE_PREFIX)) {
    const native = await nativeFor(deps, ctx, 'files');
    if (native !== null) {
      return nativeJson(deps, ctx, native, { method: 'DELETE', path: `/files/${encodeURIComponent(id)}` }, (value) => ({ id: String(value.id ?? id), object: 'file', deleted: value.deleted === true }));
    }
  }
  const row = await visibleFile(deps, ctx, id);
  if (await fileInUse(deps.db(), id)) throw new GatewayError('conflict', `File "${id}" is the input of a batch that is still running; cancel it first.`, { param: 'file_id' });
  await deleteFile(deps.db(), id);
  await deps.store().delete(row.location);
  return jsonResponse(200, { id, object: 'file', deleted: true });
}

/** A multipart body (`purpose`, then `file` from the temp file), streamed, with its length. */
function multipart(tempPath: string, bytes: number, filename: string, purpose: string): { body: Readable; length: number; type: string } {
  const boundary = `----gateway-${randomHex(12)}`;
  const safe = filename.replace(/["\r\n\\]/g, '_');
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\n${purpose}\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${safe}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  async function* parts() {
    yield head;
    yield* tempReadStream(tempPath);
    yield tail;
  }
  return { body: Readable.from(parts(), { objectMode: false }), length: head.length + bytes + tail.length, type: `multipart/form-data; boundary=${boundary}` };
}
