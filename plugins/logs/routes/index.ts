import * as v from 'valibot';
import { defineErrors, GatewayError, type GatewayPlugin, jsonResponse, parseOptions, type RequestContext } from '../../../sdk/index.js';
import type { TimeseriesAnswer } from '../../../sdk/analytics.js';
import { LOG_STORE_SERVICE, type LogStoreService } from '../index.js';
import { deadlineIn, QueryTimeoutError } from '../reader.js';
import { GROUP_KEYS } from '../store/repository.js';
import { IDENTITY } from '../../../sdk/admin/index.js';
import { callerWorkspace, confineWorkspace, encodeCursor, groupQuery, listQuery, LogGroupsQuery, LogListQuery, timeseriesQuery, TimeseriesQuerySchema, type WorkspaceLookup } from './query.js';

export const PLUGIN_NAME = 'log-api';

const OptionsSchema = v.strictObject({
  /** Scope a key needs (besides `*`) to read logs and analytics. */
  scope: v.optional(v.pipe(v.string(), v.minLength(1)), 'logs.read'),
});

export type LogApiOptions = v.InferInput<typeof OptionsSchema>;

/** An analytics query past the log store's `queryTimeoutMs`: the store is busy or the range too wide, not the request wrong. */
const logApiError = defineErrors({ query_timeout: { status: 503, type: 'timeout_error' } });

/** Runs an analytics query under the store's time limit; past it, the error says which limit and what to do. */
async function limited<T>(service: LogStoreService, run: (deadline: ReturnType<typeof deadlineIn>) => Promise<T>): Promise<T> {
  try {
    return await run(deadlineIn(service.queryTimeoutMs));
  } catch (err) {
    if (!(err instanceof QueryTimeoutError)) throw err;
    throw logApiError(
      'query_timeout',
      `The query ran longer than ${err.limitMs} ms (the log store's queryTimeoutMs). Narrow the range or the filters, or filter on columns the rollups keep (docs/logs.md, "Rollups").`,
    );
  }
}

/**
 * The log and analytics routes, under the base path (`/v1`):
 * `GET /logs` (filters, cursor pagination), `GET /logs/{id}`, and
 * `GET /logs/groups/{groupBy}` = `GET /analytics/groups/{groupBy}`, and
 * `GET /analytics/timeseries` (requests, errors, cost, tokens, latency percentiles and cache hit
 * rate per time bucket, with totals over the range).
 * Every query is confined to the caller's workspace when its key has one.
 * Needs the `log-store` plugin. See docs/logs.md.
 */
export function logApi(options: LogApiOptions = {}): GatewayPlugin {
  const { scope } = parseOptions(PLUGIN_NAME, OptionsSchema, options);
  return {
    name: PLUGIN_NAME,
    // Checked at boot: without the log store the boot stops, naming it.
    requires: [LOG_STORE_SERVICE],
    // Workspaces named by slug as by id, in `workspace_id`.
    uses: [IDENTITY],
    errorCodes: logApiError.codes,
    state: [],
    apply(api) {
      let service: LogStoreService | null = null;
      let lookup: WorkspaceLookup | null = null;
      api.onReady(() => {
        service = api.resolve(LOG_STORE_SERVICE);
        const identity = api.tryResolve(IDENTITY);
        if (identity !== undefined) lookup = (name) => identity.workspace(name);
      });
      const reader = () => service!.reader();
      /** Says how far behind the writes the answer may be, when it was read on a replica. */
      const lagged = async (ctx: RequestContext) => {
        const lag = await service!.readLagMs();
        if (lag !== null) ctx.responseHeaders['x-gateway-read-lag-ms'] = String(lag);
      };
      const base = api.options.basePath;

      api.routes.add({
        name: 'logs.list',
        method: 'GET',
        path: `${base}/logs`,
        kind: 'handler',
        scope,
        doc: { summary: 'List stored request logs', description: 'Newest first, without bodies and headers (GET /v1/logs/{id} has them); cursor pages.', tags: ['Logs'], scope, query: LogListQuery },
        handler: async (ctx) => {
          const q = listQuery(ctx);
          await confineWorkspace(ctx, q.filters, lookup);
          await lagged(ctx);
          const page = await reader().list(q.filters, q.limit, q.cursor);
          return jsonResponse(200, { object: 'list', data: page.data, has_more: page.next !== null, next_cursor: page.next === null ? null : encodeCursor(page.next) });
        },
      });

      api.routes.add({
        name: 'logs.get',
        method: 'GET',
        path: `${base}/logs/:id`,
        kind: 'handler',
        scope,
        doc: { summary: 'Get one stored request log', description: 'The whole entry: bodies as captured, request headers without secrets, attempts, hook results.', tags: ['Logs'], scope, params: { id: 'The log entry id (`log_…`).' } },
        handler: async (ctx) => {
          const id = ctx.params!.id!;
          await lagged(ctx);
          const entry = id.length > 128 ? null : await reader().get(id, callerWorkspace(ctx));
          if (entry === null) throw new GatewayError('not_found', `No log entry "${id.slice(0, 128)}".`, { param: 'id' });
          return jsonResponse(200, { object: 'log', ...entry });
        },
      });

      const groups = async (ctx: RequestContext) => {
        const q = groupQuery(ctx);
        await confineWorkspace(ctx, q.filters, lookup);
        await lagged(ctx);
        const result = await limited(service!, (deadline) => reader().groups(q.groupBy, q.columns, q.filters, q.limit, q.offset, deadline));
        return jsonResponse(200, { object: 'list', group_by: q.groupBy, columns: ['requests', ...q.columns], data: result.data, has_more: result.hasMore });
      };
      const groupsDoc = (tag: string) => ({
        summary: 'Requests grouped, with chosen columns',
        description: 'Most requests first. `GET /v1/logs/groups/{groupBy}` and `GET /v1/analytics/groups/{groupBy}` are the same route.',
        tags: [tag],
        scope,
        params: { groupBy: `One of ${Object.keys(GROUP_KEYS).join(', ')}.` },
        query: LogGroupsQuery,
      });
      api.routes.add({ name: 'logs.groups', method: 'GET', path: `${base}/logs/groups/:groupBy`, kind: 'handler', scope, handler: groups, doc: groupsDoc('Logs') });
      api.routes.add({ name: 'analytics.groups', method: 'GET', path: `${base}/analytics/groups/:groupBy`, kind: 'handler', scope, handler: groups, doc: groupsDoc('Analytics') });

      api.routes.add({
        name: 'analytics.timeseries',
        method: 'GET',
        path: `${base}/analytics/timeseries`,
        kind: 'handler',
        scope,
        doc: {
          summary: 'Requests, errors, cost, tokens, latency and cache hits over time',
          description: 'The range in equal buckets, every bucket present, with totals over the range (docs/logs.md).',
          tags: ['Analytics'],
          scope,
          query: TimeseriesQuerySchema,
        },
        handler: async (ctx) => {
          const q = timeseriesQuery(ctx);
          await confineWorkspace(ctx, q.filters, lookup);
          await lagged(ctx);
          const result = await limited(service!, (deadline) => reader().timeseries(q.filters, q.bucketMs, q.origin, deadline));
          const answer: TimeseriesAnswer = {
            object: 'analytics.timeseries',
            from: new Date(q.filters.from).toISOString(),
            to: new Date(q.filters.to).toISOString(),
            interval: q.interval,
            bucket_ms: q.bucketMs,
            totals: result.totals,
            data: result.buckets,
          };
          return jsonResponse(200, answer);
        },
      });
    },
  };
}

export default logApi;
