import * as v from 'valibot';
import { GatewayError, type RequestContext } from '../../../sdk/index.js';
import { ENTRY_KINDS } from '../entry.js';
import { GROUP_COLUMNS, GROUP_KEYS, type Cursor, type GroupBy, type GroupColumn, type LogFilters } from '../store/repository.js';

const param = (description: string) => v.optional(v.pipe(v.string(), v.description(description)));

/**
 * The query parameters, as the OpenAPI document shows them. The routes parse the query by hand (repeated
 * names, `metadata.<key>`, cursors), but take the names they accept from these schemas, so the two agree.
 */
const FILTER_ENTRIES = {
  from: param('Earliest created_at, inclusive: ISO 8601 or epoch milliseconds.'),
  to: param('Latest created_at, exclusive: ISO 8601 or epoch milliseconds.'),
  status: param('HTTP statuses, comma-separated (`500,502`).'),
  provider: param('The provider that answered, or the one requested (`openai`, `@slug`).'),
  model: param('The model answered, or the one requested.'),
  trace_id: param('The trace id.'),
  api_key: param('The API key id.'),
  config: param('The saved config id.'),
  cache_status: param('`HIT`, `SEMANTIC HIT`, `MISS`, `REFRESH`, `DISABLED`.'),
  route: param('The route name (`chat.completions`).'),
  limit_policy_id: param('The rate limit or budget that refused the request.'),
  front_door: param('The API format the client spoke: `chat`, `responses`, `messages`.'),
  prompt_id: param('The stored prompt.'),
  prompt_version: param('The stored prompt\'s version (with prompt_id).'),
  rpc_method: param('The JSON-RPC method of an MCP or A2A call.'),
  tool_name: param('The tool of an MCP tools/call.'),
  kind: param(
    '`api` (traffic through the API), `housekeeping` (the gateway serving itself: dashboard, API reference, sign-in probes, health, metrics, reads of the log) or `all`. ' +
      'The list shows all by default; the groups and the time series count `api` only unless asked.',
  ),
  workspace_id: param('The workspace (a workspace key is confined to its own). Also `metadata.<key>=<value>` filters on a metadata value.'),
  metadata_key: param('A metadata key, with metadata_value.'),
  metadata_value: param('The value of metadata_key.'),
};
export const LogListQuery = v.strictObject({ ...FILTER_ENTRIES, limit: param('Entries per page, 1 to 500 (default 50).'), cursor: param('The next_cursor of the previous page.') });
export const LogGroupsQuery = v.strictObject({
  ...FILTER_ENTRIES,
  columns: param(`Columns to compute, comma-separated: ${GROUP_COLUMNS.join(', ')}.`),
  limit: param('Groups per page, 1 to 1000 (default 100).'),
  offset: param('Groups to skip.'),
});
export const TimeseriesQuerySchema = v.strictObject({ ...FILTER_ENTRIES, interval: param('Bucket width: minute, 5m, 15m, hour, 6h, day (default: the narrowest within 240 buckets).') });

const names = (schema: { entries: Record<string, unknown> }) => new Set(Object.keys(schema.entries));
const LIST_PARAMS = names(LogListQuery);
const GROUP_PARAMS = names(LogGroupsQuery);
const TIMESERIES_PARAMS = names(TimeseriesQuerySchema);

const bad = (param: string, message: string) => new GatewayError('invalid_request', message, { param });

/** The workspace a caller is confined to, or undefined for an organisation-wide (or static) key. */
export function callerWorkspace(ctx: RequestContext): string | undefined {
  return ctx.auth?.workspaceId ?? undefined;
}

/** How the log routes look a workspace up by id or slug: the control plane's identity, when loaded. */
export type WorkspaceLookup = (idOrSlug: string) => { id: string } | null | Promise<{ id: string } | null>;

/**
 * The filters' `workspace_id` made the id of the workspace it names (an id or a slug, as everywhere
 * else) and confined to the caller's: a workspace key reads its own workspace only (naming it by id
 * or slug is the same; naming another is a 403); an organisation-wide key reads the one it names (a
 * name no workspace has is kept as it is: the logs of a workspace whose id it is, or none).
 */
export async function confineWorkspace(ctx: RequestContext, f: LogFilters, lookup: WorkspaceLookup | null): Promise<void> {
  const own = callerWorkspace(ctx);
  const asked = f.workspace;
  if (own !== undefined) {
    if (asked !== undefined && asked !== own) {
      const named = lookup === null ? null : await lookup(asked);
      if (named === null || named.id !== own) throw new GatewayError('forbidden', 'This API key can only read the logs of its own workspace.', { param: 'workspace_id' });
    }
    f.workspace = own;
    return;
  }
  if (asked === undefined || lookup === null) return;
  const named = await lookup(asked);
  if (named !== null) f.workspace = named.id;
}

/** An instant: ISO 8601, or epoch milliseconds as digits. */
export function parseTime(param: string, raw: string): number {
  const text = raw.trim();
  const ms = /^\d{1,16}$/.test(text) ? Number(text) : Date.parse(text);
  if (!Number.isFinite(ms)) throw bad(param, `Invalid ${param}: expected an ISO 8601 time or epoch milliseconds, got "${text.slice(0, 64)}".`);
  return ms;
}

function single(params: URLSearchParams, name: string): string | undefined {
  const all = params.getAll(name);
  if (all.length > 1) throw bad(name, `Query parameter ${name} is given more than once.`);
  const value = all[0];
  if (value === undefined) return undefined;
  if (value === '') throw bad(name, `Query parameter ${name} is empty.`);
  return value;
}

function integer(params: URLSearchParams, name: string, min: number, max: number, fallback: number): number {
  const raw = single(params, name);
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(n) || n < min || n > max) throw bad(name, `Invalid ${name}: expected an integer from ${min} to ${max}, got "${raw.slice(0, 32)}".`);
  return n;
}

function checkKnown(params: URLSearchParams, known: Set<string>): void {
  for (const name of params.keys()) {
    if (known.has(name) || (name.startsWith('metadata.') && name.length > 9)) continue;
    throw bad(name, `Unknown query parameter "${name.slice(0, 64)}". Known: ${[...known].join(', ')}, metadata.<key>.`);
  }
}

/** What `kind` a route shows without the parameter: the list everything, analytics the API's traffic. */
type DefaultKind = 'api' | 'all';

/** The `kind` filter: one of the kinds, or `all` (no filter). */
function kindOf(raw: string | undefined, fallback: DefaultKind): string | undefined {
  const kind = raw ?? fallback;
  if (kind === 'all') return undefined;
  if (!(ENTRY_KINDS as readonly string[]).includes(kind)) throw bad('kind', `Invalid kind "${kind.slice(0, 32)}": expected ${ENTRY_KINDS.join(', ')} or all.`);
  return kind;
}

/** The filters of a list or groups request, confined to the caller's workspace. */
function filtersOf(ctx: RequestContext, params: URLSearchParams, defaultKind: DefaultKind): LogFilters {
  const f: LogFilters = {};
  const from = single(params, 'from');
  const to = single(params, 'to');
  if (from !== undefined) f.from = parseTime('from', from);
  if (to !== undefined) f.to = parseTime('to', to);
  if (f.from !== undefined && f.to !== undefined && f.from > f.to) throw bad('from', 'from must not be later than to.');
  const status = single(params, 'status');
  if (status !== undefined) {
    f.status = status.split(',').map((s) => {
      const code = Number(s.trim());
      if (!/^\d{1,3}$/.test(s.trim())) throw bad('status', `Invalid status "${s.slice(0, 16)}": expected HTTP status codes, comma-separated.`);
      return code;
    });
  }
  const text = (name: string) => single(params, name);
  f.provider = text('provider');
  f.model = text('model');
  f.traceId = text('trace_id');
  f.apiKey = text('api_key');
  f.config = text('config');
  f.cacheStatus = text('cache_status');
  f.route = text('route');
  f.limitPolicy = text('limit_policy_id');
  f.frontDoor = text('front_door');
  f.prompt = text('prompt_id');
  const promptVersion = text('prompt_version');
  if (promptVersion !== undefined) {
    if (!/^[1-9]\d{0,9}$/.test(promptVersion)) throw bad('prompt_version', `Invalid prompt_version "${promptVersion.slice(0, 16)}": expected a version number.`);
    f.promptVersion = Number(promptVersion);
  }
  f.rpcMethod = text('rpc_method');
  f.toolName = text('tool_name');
  f.kind = kindOf(text('kind'), defaultKind);
  // As named (an id or a slug) until confineWorkspace makes it an id and confines it to the caller's.
  f.workspace = text('workspace_id');
  const metadata: Array<[string, string]> = [];
  for (const [name, value] of params) if (name.startsWith('metadata.') && name.length > 9) metadata.push([name.slice(9), value]);
  const mk = text('metadata_key');
  const mv = params.get('metadata_value');
  if ((mk === undefined) !== (mv === null)) throw bad(mk === undefined ? 'metadata_key' : 'metadata_value', 'metadata_key and metadata_value go together.');
  if (mk !== undefined && mv !== null) metadata.push([mk, mv]);
  if (metadata.length > 0) f.metadata = metadata;
  for (const key of Object.keys(f) as (keyof LogFilters)[]) if (f[key] === undefined) delete f[key];
  return f;
}

export const DEFAULT_PAGE = 50;
export const MAX_PAGE = 500;

export interface ListQuery {
  filters: LogFilters;
  limit: number;
  cursor: Cursor | null;
}

export function listQuery(ctx: RequestContext): ListQuery {
  const params = new URLSearchParams(ctx.query);
  checkKnown(params, LIST_PARAMS);
  const raw = single(params, 'cursor');
  return { filters: filtersOf(ctx, params, 'all'), limit: integer(params, 'limit', 1, MAX_PAGE, DEFAULT_PAGE), cursor: raw === undefined ? null : decodeCursor(raw) };
}

export function encodeCursor(c: Cursor): string {
  return Buffer.from(JSON.stringify([c.createdAt, c.id])).toString('base64url');
}

function decodeCursor(raw: string): Cursor {
  try {
    const value = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(value) && value.length === 2 && Number.isSafeInteger(value[0]) && typeof value[1] === 'string') return { createdAt: value[0] as number, id: value[1] };
  } catch {
    /* fall through */
  }
  throw bad('cursor', 'Invalid cursor: pass the next_cursor of a previous page as it was given.');
}

export const DEFAULT_GROUPS = 100;
export const MAX_GROUPS = 1000;

export interface GroupQuery {
  groupBy: GroupBy;
  columns: GroupColumn[];
  filters: LogFilters;
  limit: number;
  offset: number;
}

export function groupQuery(ctx: RequestContext): GroupQuery {
  const groupBy = ctx.params?.groupBy ?? '';
  if (!Object.hasOwn(GROUP_KEYS, groupBy)) {
    throw bad('groupBy', `Unknown groupBy "${groupBy.slice(0, 64)}". One of: ${Object.keys(GROUP_KEYS).join(', ')}.`);
  }
  const params = new URLSearchParams(ctx.query);
  checkKnown(params, GROUP_PARAMS);
  const columns: GroupColumn[] = [];
  const raw = single(params, 'columns');
  if (raw !== undefined) {
    for (const part of raw.split(',')) {
      const c = part.trim();
      if (c === '') continue;
      if (!(GROUP_COLUMNS as readonly string[]).includes(c)) throw bad('columns', `Unknown column "${c.slice(0, 64)}". Columns: ${GROUP_COLUMNS.join(', ')}.`);
      if (!columns.includes(c as GroupColumn)) columns.push(c as GroupColumn);
    }
  }
  return {
    groupBy: groupBy as GroupBy,
    columns,
    // Analytics: the gateway's own traffic is left out unless asked for (docs/logs.md, "Housekeeping traffic").
    filters: filtersOf(ctx, params, 'api'),
    limit: integer(params, 'limit', 1, MAX_GROUPS, DEFAULT_GROUPS),
    offset: integer(params, 'offset', 0, 1_000_000, 0),
  };
}

/** Bucket widths of the time series, by the name `interval` takes. */
export const INTERVALS = { minute: 60_000, '5m': 300_000, '15m': 900_000, hour: 3_600_000, '6h': 21_600_000, day: 86_400_000 } as const;
export type Interval = keyof typeof INTERVALS;
/** Buckets the automatic interval aims to stay under, and the most an explicit one may ask for. */
const AUTO_BUCKETS = 240;
export const MAX_BUCKETS = 2000;
const DAY_MS = 86_400_000;

export interface TimeseriesQuery {
  filters: LogFilters & { from: number; to: number };
  /** Where the buckets are laid from: `from` rounded down to the interval (UTC), so buckets are on the clock. */
  origin: number;
  interval: Interval;
  bucketMs: number;
}

/**
 * The query of the time series: the list's filters, with `from` defaulting to a day before `to` and
 * `to` to now; `interval` one of {@link INTERVALS}, else the narrowest that keeps the range within
 * 240 buckets. Buckets lie on the clock (multiples of the interval since the epoch, UTC), so charts
 * line up with it and whole buckets come from the rollups: a `from` between two boundaries makes the
 * first bucket count from `from` only (its `time` is the boundary before). A default range starts on a boundary.
 */
export function timeseriesQuery(ctx: RequestContext, now = Date.now()): TimeseriesQuery {
  const params = new URLSearchParams(ctx.query);
  checkKnown(params, TIMESERIES_PARAMS);
  const filters = filtersOf(ctx, params, 'api');
  const to = filters.to ?? now;
  let from = filters.from ?? to - DAY_MS;
  if (from >= to) throw bad('from', 'from must be earlier than to.');
  const asked = single(params, 'interval');
  if (asked !== undefined && !Object.hasOwn(INTERVALS, asked)) throw bad('interval', `Unknown interval "${asked.slice(0, 32)}". One of: ${Object.keys(INTERVALS).join(', ')}.`);
  const interval = (asked as Interval | undefined) ?? (Object.keys(INTERVALS) as Interval[]).find((i) => (to - from) / INTERVALS[i] <= AUTO_BUCKETS) ?? 'day';
  const bucketMs = INTERVALS[interval];
  if (filters.from === undefined) from -= from % bucketMs;
  const origin = from - (((from % bucketMs) + bucketMs) % bucketMs);
  if (Math.ceil((to - origin) / bucketMs) > MAX_BUCKETS) throw bad('interval', `The range holds more than ${MAX_BUCKETS} buckets of ${interval}: choose a wider interval or a shorter range.`);
  return { filters: { ...filters, from, to }, origin, interval, bucketMs };
}
