import * as v from 'valibot';
import { GatewayError, type GatewayPlugin, jsonResponse, parseOptions, type RequestContext, requireScope } from '../../../sdk/index.js';
import { LOG_STORE_SERVICE, type LogStoreService } from '../index.js';
import { callerWorkspace, encodeCursor, groupQuery, listQuery } from './query.js';

export const PLUGIN_NAME = 'log-api';

const OptionsSchema = v.strictObject({
  /** Scope a key needs (besides `*`) to read logs and analytics. */
  scope: v.optional(v.pipe(v.string(), v.minLength(1)), 'logs.read'),
});

export type LogApiOptions = v.InferInput<typeof OptionsSchema>;

/**
 * The log and analytics routes, under the base path (`/v1`):
 * `GET /logs` (filters, cursor pagination), `GET /logs/{id}`, and
 * `GET /logs/groups/{groupBy}` = `GET /analytics/groups/{groupBy}`.
 * Every query is confined to the caller's workspace when its key has one.
 * Needs the `log-store` plugin. See docs/logs.md.
 */
export function logApi(options: LogApiOptions = {}): GatewayPlugin {
  const { scope } = parseOptions(PLUGIN_NAME, OptionsSchema, options);
  return {
    name: PLUGIN_NAME,
    apply(api) {
      let service: LogStoreService | null = null;
      api.onReady(() => {
        try {
          service = api.resolve(LOG_STORE_SERVICE);
        } catch {
          throw new Error(`${PLUGIN_NAME}: needs the log-store plugin`);
        }
      });
      const repository = () => service!.repository();
      const base = api.options.basePath;

      api.routes.add({
        name: 'logs.list',
        method: 'GET',
        path: `${base}/logs`,
        kind: 'handler',
        handler: async (ctx) => {
          requireScope(ctx, scope);
          const q = listQuery(ctx);
          const page = await repository().list(q.filters, q.limit, q.cursor);
          return jsonResponse(200, { object: 'list', data: page.data, has_more: page.next !== null, next_cursor: page.next === null ? null : encodeCursor(page.next) });
        },
      });

      api.routes.add({
        name: 'logs.get',
        method: 'GET',
        path: `${base}/logs/:id`,
        kind: 'handler',
        handler: async (ctx) => {
          requireScope(ctx, scope);
          const id = ctx.params!.id!;
          const entry = id.length > 128 ? null : await repository().get(id, callerWorkspace(ctx));
          if (entry === null) throw new GatewayError('not_found', `No log entry "${id.slice(0, 128)}".`, { param: 'id' });
          return jsonResponse(200, { object: 'log', ...entry });
        },
      });

      const groups = async (ctx: RequestContext) => {
        requireScope(ctx, scope);
        const q = groupQuery(ctx);
        const result = await repository().groups(q.groupBy, q.columns, q.filters, q.limit, q.offset);
        return jsonResponse(200, { object: 'list', group_by: q.groupBy, columns: ['requests', ...q.columns], data: result.data, has_more: result.hasMore });
      };
      api.routes.add({ name: 'logs.groups', method: 'GET', path: `${base}/logs/groups/:groupBy`, kind: 'handler', handler: groups });
      api.routes.add({ name: 'analytics.groups', method: 'GET', path: `${base}/analytics/groups/:groupBy`, kind: 'handler', handler: groups });
    },
  };
}

export default logApi;
