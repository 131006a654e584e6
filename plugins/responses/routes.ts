import { GatewayError, jsonResponse, type PluginAPI, type RequestContext, responses, type GatewayResponse, type RouteDoc, v } from '../../sdk/index.js';
import { INCLUDE_VALUES } from './schema.js';
import type { ResponseRepository } from './store.js';

type Json = Record<string, unknown>;

const INCLUDES: ReadonlySet<string> = new Set(INCLUDE_VALUES);
const bad = (param: string, message: string) => new GatewayError('invalid_request', message, { param });

/*
 * The query parameters of each route, for the API reference and as the names `query` accepts: the
 * values are read by hand below (a name may repeat, or come as `name[]`, as the SDKs send arrays).
 */
const text = (description: string) => v.optional(v.pipe(v.string(), v.description(description)));
const Include = text(`Extra output to include, repeated or comma-separated: ${INCLUDE_VALUES.join(', ')}.`);
const RetrieveQuery = v.strictObject({
  include: Include,
  stream: text('`true` replays the stored response as server-sent events.'),
  starting_after: text('With `stream=true`: the sequence number after which events are replayed.'),
  include_obfuscation: text('Accepted for compatibility; the replay has no obfuscation.'),
});
const DeleteQuery = v.strictObject({});
const InputItemsQuery = v.strictObject({
  limit: text('Items per page, 1 to 100 (default 20).'),
  order: text('`asc` or `desc` (default).'),
  after: text('An item id: list the items after it.'),
  before: text('An item id: list the items before it.'),
  include: Include,
});
const names = (schema: { entries: Record<string, unknown> }): readonly string[] => Object.keys(schema.entries);
const RETRIEVE_PARAMS = names(RetrieveQuery);
const DELETE_PARAMS = names(DeleteQuery);
const INPUT_ITEMS_PARAMS = names(InputItemsQuery);

const STORED =
  'A response the gateway does not hold is asked of the provider the request selects, if any; else it is a 404. ' +
  'An id the gateway made (`resp_gw_…`, a translated answer) is never asked of a provider: deleted or unknown, it is a 404.';
const ID = { response_id: 'The response id (`resp_…`).' };
const doc = (summary: string, more: Partial<RouteDoc>): RouteDoc => ({ summary, tags: ['Responses'], scope: 'completions.write', params: ID, selectsProvider: true, ...more });

/** Query parameters: repeated names (and `name[]`, as the SDKs send arrays) collected; unknown names are a 400. */
function query(ctx: RequestContext, known: readonly string[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const [raw, value] of new URLSearchParams(ctx.query)) {
    const name = raw.endsWith('[]') ? raw.slice(0, -2) : raw;
    if (!known.includes(name)) throw bad(name, `Unknown query parameter '${name}'; this route takes ${known.join(', ')}.`);
    out.set(name, [...(out.get(name) ?? []), value]);
  }
  return out;
}

/** `include` values, checked (a comma-separated value is split too). */
function includes(q: Map<string, string[]>): Set<string> {
  const out = new Set<string>();
  for (const value of (q.get('include') ?? []).flatMap((v) => v.split(','))) {
    if (value === '') continue;
    if (!INCLUDES.has(value)) throw bad('include', `'include' must name one of: ${INCLUDE_VALUES.join(', ')} (got '${value}').`);
    out.add(value);
  }
  return out;
}

/** Whether the request names a provider (then a response the gateway does not hold is asked of it). */
const selectsProvider = (ctx: RequestContext): boolean =>
  ctx.header('x-gateway-provider') !== undefined || ctx.header('x-gateway-virtual-key') !== undefined || ctx.header('x-gateway-config') !== undefined;

/**
 * Null (the generic proxy asks the selected provider) or a 404 naming the response: with no provider
 * selected, or for an id the gateway made, which no provider holds (asking one would hand it an id of
 * ours and answer its 404, in its own shape, for a response deleted here).
 */
function notHeld(ctx: RequestContext, id: string): null {
  if (selectsProvider(ctx) && !responses.isGatewayResponseId(id)) return null;
  throw new GatewayError('not_found', `No stored response with id '${id}' in this workspace.`, { param: 'response_id' });
}

const one = (q: Map<string, string[]>, name: string): string | undefined => q.get(name)?.at(-1);

/** An input item as listed: image URLs of input images only when `include` asks for them (as the Responses API does). */
function listedItem(item: Json, withImages: boolean): Json {
  if (withImages || item.type !== 'message' || !Array.isArray(item.content)) return item;
  return { ...item, content: (item.content as Json[]).map((part) => (part.type === 'input_image' && part.image_url !== undefined ? { ...part, image_url: null } : part)) };
}

/**
 * `GET /v1/responses/{id}` (`?stream=true` replays it as events),
 * `DELETE /v1/responses/{id}` and `GET /v1/responses/{id}/input_items`, from
 * the gateway's store, in the caller's workspace. A response the gateway does
 * not hold is handed to the generic proxy when the request selects a provider
 * (which may hold it: one created there directly, or in background mode);
 * with none selected, or when the gateway made the id, it is a 404.
 */
export function storedResponseRoutes(
  api: PluginAPI,
  path: string,
  repository: () => ResponseRepository | null,
  tenant: (ctx: RequestContext) => string | Promise<string>,
  pendingWrite: (workspaceId: string, id: string) => Promise<void> | undefined,
): void {
  /**
   * Where a caller's stored responses are: the workspace it acts in; an organisation-level key also
   * looks where its kind stored them before responses belonged to the workspace a key acts in ('').
   */
  const owners = async (ctx: RequestContext): Promise<string[]> => {
    const ws = await tenant(ctx);
    return ws !== '' && (ctx.auth?.workspaceId ?? null) === null ? [ws, ''] : [ws];
  };
  const find = async (ctx: RequestContext) => {
    const repo = repository();
    const id = ctx.params!.response_id!;
    if (repo === null) return null;
    for (const ws of await owners(ctx)) {
      await pendingWrite(ws, id);
      const stored = await repo.get(ws, id);
      if (stored !== null) return stored;
    }
    return null;
  };

  api.routes.add({
    name: 'responses.retrieve',
    method: 'GET',
    path: `${path}/:response_id`,
    kind: 'handler',
    // Checked by the core before the query is judged: a key without it gets the 403 whatever it sent.
    scope: 'completions.write',
    doc: doc('Get a stored response', { query: RetrieveQuery, description: `From the caller's workspace. ${STORED}`, responseTypes: ['application/json', 'text/event-stream'] }),
    async handler(ctx): Promise<GatewayResponse | null> {
      const q = query(ctx, RETRIEVE_PARAMS);
      includes(q);
      const stored = await find(ctx);
      if (stored === null) return notHeld(ctx, ctx.params!.response_id!);
      const stream = one(q, 'stream');
      if (stream !== undefined && stream !== 'true' && stream !== 'false') throw bad('stream', "'stream' must be true or false.");
      if (stream === 'true') {
        const after = one(q, 'starting_after');
        const from = after === undefined ? -1 : Number(after);
        if (!Number.isInteger(from)) throw bad('starting_after', "'starting_after' must be an integer (a sequence number).");
        const events = responses.replayResponse(stored.response).split('\n\n').filter((e) => e !== '' && sequenceOf(e) > from);
        return { status: 200, headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' }, body: events.map((e) => `${e}\n\n`).join(''), observers: null };
      }
      return jsonResponse(200, stored.response);
    },
  });

  api.routes.add({
    name: 'responses.delete',
    method: 'DELETE',
    path: `${path}/:response_id`,
    kind: 'handler',
    // Checked by the core before the query is judged: a key without it gets the 403 whatever it sent.
    scope: 'completions.write',
    doc: doc('Delete a stored response', { query: DeleteQuery, description: STORED }),
    async handler(ctx) {
      query(ctx, DELETE_PARAMS);
      const repo = repository();
      const id = ctx.params!.response_id!;
      if (repo === null) return notHeld(ctx, id);
      let deleted = false;
      for (const ws of await owners(ctx)) {
        await pendingWrite(ws, id);
        if ((deleted = await repo.delete(ws, id))) break;
      }
      if (!deleted) return notHeld(ctx, id);
      return jsonResponse(200, { id, object: 'response', deleted: true });
    },
  });

  api.routes.add({
    name: 'responses.input_items',
    method: 'GET',
    path: `${path}/:response_id/input_items`,
    kind: 'handler',
    // Checked by the core before the query is judged: a key without it gets the 403 whatever it sent.
    scope: 'completions.write',
    doc: doc("List a stored response's input items", { query: InputItemsQuery, description: STORED }),
    async handler(ctx) {
      const q = query(ctx, INPUT_ITEMS_PARAMS);
      const withImages = includes(q).has('message.input_image.image_url');
      const limitText = one(q, 'limit') ?? '20';
      const limit = Number(limitText);
      if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw bad('limit', "'limit' must be an integer from 1 to 100.");
      const order = one(q, 'order') ?? 'desc';
      if (order !== 'asc' && order !== 'desc') throw bad('order', "'order' must be asc or desc.");
      const stored = await find(ctx);
      if (stored === null) return notHeld(ctx, ctx.params!.response_id!);
      let items = order === 'asc' ? stored.inputItems : [...stored.inputItems].reverse();
      for (const [param, keepAfter] of [['after', true], ['before', false]] as const) {
        const id = one(q, param);
        if (id === undefined) continue;
        const at = items.findIndex((item) => item.id === id);
        if (at === -1) throw bad(param, `'${param}' names no input item of response '${stored.id}'.`);
        items = keepAfter ? items.slice(at + 1) : items.slice(0, at);
      }
      const page = items.slice(0, limit).map((item) => listedItem(item, withImages));
      return jsonResponse(200, {
        object: 'list',
        data: page,
        first_id: (page[0]?.id as string | undefined) ?? null,
        last_id: (page.at(-1)?.id as string | undefined) ?? null,
        has_more: items.length > limit,
      });
    },
  });
}

/** The `sequence_number` of one SSE event's data. */
function sequenceOf(event: string): number {
  const m = /"sequence_number":(\d+)/.exec(event);
  return m === null ? -1 : Number(m[1]);
}
