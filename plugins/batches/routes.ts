import * as v from 'valibot';
import { GatewayError, type GatewayResponse, invalidBody, jsonResponse, readNative, type RequestContext, resolveLeaf, selectedTarget, sendNative, nativeFormat, uuidv7 } from '../../sdk/index.js';
import { type Deps, LOCAL_FILE_PREFIX, nativeFor, visibleOwners } from './files.js';
import { cancelBatch, getBatch, getFile, insertBatch, listBatches, type BatchRow } from './repository.js';
import { keptHeaders } from './lines.js';
import type { BatchRequest } from './runner.js';
import { CreateBatchSchema, cursorPage, GATEWAY_ENDPOINTS, limitParam, normaliseBatch, parseQuery, presentBatch, windowMs } from './shapes.js';

/** Ids of gateway-run batches: `batch-gw-` and 32 hex digits that sort by creation time. */
export const LOCAL_BATCH_PREFIX = 'batch-gw-';

const notFound = (id: string) => new GatewayError('not_found', `No batch "${id.slice(0, 128)}".`, { param: 'batch_id' });

async function visibleBatch(deps: Deps, ctx: RequestContext, id: string): Promise<BatchRow> {
  const row = id.startsWith(LOCAL_BATCH_PREFIX) ? await getBatch(deps.db(), id) : undefined;
  if (row === undefined || !(await visibleOwners(deps, ctx)).includes(row.owner)) throw notFound(id);
  return row;
}

async function nativeBatch(deps: Deps, ctx: RequestContext, call: Parameters<typeof sendNative>[3], native: NonNullable<Awaited<ReturnType<typeof nativeFor>>>): Promise<GatewayResponse> {
  const answer = await readNative(await sendNative(deps.api, ctx, native, call));
  return answer.ok ? jsonResponse(200, normaliseBatch(answer.value)) : answer.response;
}

/**
 * `POST /v1/batches`. With a provider that runs batches itself (OpenAI, Azure
 * OpenAI) the call is passed through and its answer normalised. Otherwise the
 * gateway runs it: the target the call's headers or config select, its
 * headers and its caller are kept with the batch (sealed), the batch starts
 * `validating`, and the runner takes it from there.
 */
export async function createBatch(deps: Deps, ctx: RequestContext): Promise<GatewayResponse> {
  const parsed = v.safeParse(CreateBatchSchema, ctx.body ?? {});
  if (!parsed.success) throw invalidBody(parsed.issues);
  const body = parsed.output;
  const target = await selectedTarget(deps.api, ctx);
  if (target === null) {
    throw new GatewayError('provider_required', "Select the provider the batch's requests go to: x-gateway-provider (and Authorization), a slug, or x-gateway-config.", {
      param: 'x-gateway-provider',
    });
  }
  const leaf = await resolveLeaf(deps.api, ctx, target);
  if (leaf !== null && nativeFormat(leaf.provider, 'batches') !== null) {
    return nativeBatch(deps, ctx, { method: 'POST', path: '/batches', headers: { 'content-type': 'application/json' }, body: ctx.rawBody }, leaf);
  }

  if (!(GATEWAY_ENDPOINTS as readonly string[]).includes(body.endpoint) || !deps.api.routes.has('POST', body.endpoint)) {
    const served = GATEWAY_ENDPOINTS.filter((e) => deps.api.routes.has('POST', e));
    throw new GatewayError('invalid_request', `The gateway runs batches for ${served.join(', ')}; ${body.endpoint} needs a provider that runs batches itself.`, { param: 'endpoint' });
  }
  const file = body.input_file_id.startsWith(LOCAL_FILE_PREFIX) ? await getFile(deps.db(), body.input_file_id) : undefined;
  if (file === undefined || !(await visibleOwners(deps, ctx)).includes(file.owner)) {
    throw new GatewayError('not_found', `No file "${body.input_file_id.slice(0, 128)}" (upload it with POST /v1/files, without a provider that keeps files itself).`, {
      param: 'input_file_id',
    });
  }
  if (file.purpose !== 'batch') throw new GatewayError('invalid_request', `File "${file.id}" has purpose "${file.purpose}"; a batch needs a file uploaded with purpose "batch".`, { param: 'input_file_id' });

  const now = deps.now();
  const id = LOCAL_BATCH_PREFIX + uuidv7(now).replace(/-/g, '');
  const request: BatchRequest = { target, headers: keptHeaders(ctx.headers), auth: ctx.auth };
  const row: BatchRow = {
    id,
    owner: await deps.tenant(ctx),
    endpoint: body.endpoint,
    input_file_id: file.id,
    completion_window: body.completion_window,
    status: 'validating',
    created_at: now,
    in_progress_at: null,
    expires_at: now + windowMs(body.completion_window),
    finalizing_at: null,
    completed_at: null,
    failed_at: null,
    expired_at: null,
    cancelling_at: null,
    cancelled_at: null,
    errors: null,
    output_file_id: null,
    error_file_id: null,
    total: 0,
    completed: 0,
    failed: 0,
    metadata: body.metadata === null || body.metadata === undefined ? null : JSON.stringify(body.metadata),
    // Sealed with the batch id as associated data: it holds the provider key, and cannot be moved to another batch.
    request: deps.box().seal(JSON.stringify(request), id),
    lease_owner: null,
    lease_until: null,
  };
  await insertBatch(deps.db(), row);
  deps.runner()?.wake();
  return jsonResponse(200, presentBatch(row));
}

/** `GET /v1/batches/{batch_id}` (the spec's route). */
export async function getBatchRoute(deps: Deps, ctx: RequestContext): Promise<GatewayResponse> {
  const id = ctx.params!.batch_id!;
  if (!id.startsWith(LOCAL_BATCH_PREFIX)) {
    const native = await nativeFor(deps, ctx, 'batches');
    if (native !== null) return nativeBatch(deps, ctx, { method: 'GET', path: `/batches/${encodeURIComponent(id)}` }, native);
  }
  return jsonResponse(200, presentBatch(await visibleBatch(deps, ctx, id)));
}

export const ListBatchesQuery = v.strictObject({ after: v.optional(v.string()), limit: v.optional(limitParam(100)) });

/** `GET /v1/batches`: the provider's when it runs batches, else the caller's workspace's gateway-run ones, newest first. */
export async function listBatchesRoute(deps: Deps, ctx: RequestContext): Promise<GatewayResponse> {
  const q = parseQuery(ctx, ListBatchesQuery);
  const native = await nativeFor(deps, ctx, 'batches');
  if (native !== null) {
    const answer = await readNative(await sendNative(deps.api, ctx, native, { method: 'GET', path: `/batches${ctx.query === '' ? '' : `?${ctx.query}`}` }));
    if (!answer.ok) return answer.response;
    const data = Array.isArray(answer.value.data) ? (answer.value.data as Record<string, unknown>[]).map(normaliseBatch) : [];
    return jsonResponse(200, { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: answer.value.has_more === true });
  }
  const limit = q.limit ?? 20;
  const rows = await listBatches(deps.db(), await visibleOwners(deps, ctx), { after: q.after, limit });
  return jsonResponse(200, cursorPage(rows.map(presentBatch), limit));
}

/** `POST /v1/batches/{batch_id}/cancel`: lines not started never start; those in flight finish; then `cancelled`. */
export async function cancelBatchRoute(deps: Deps, ctx: RequestContext): Promise<GatewayResponse> {
  const id = ctx.params!.batch_id!;
  if (!id.startsWith(LOCAL_BATCH_PREFIX)) {
    const native = await nativeFor(deps, ctx, 'batches');
    if (native !== null) return nativeBatch(deps, ctx, { method: 'POST', path: `/batches/${encodeURIComponent(id)}/cancel` }, native);
  }
  const row = await visibleBatch(deps, ctx, id);
  if (!(await cancelBatch(deps.db(), id, deps.now()))) {
    if (row.status !== 'cancelling' && row.status !== 'cancelled') {
      throw new GatewayError('conflict', `Batch "${id}" is ${row.status}; only a validating or in_progress batch can be cancelled.`, { param: 'batch_id' });
    }
  }
  deps.runner()?.wake();
  return jsonResponse(200, presentBatch((await getBatch(deps.db(), id))!));
}
