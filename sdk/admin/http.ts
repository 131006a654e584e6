import * as v from 'valibot';
import {
  GatewayError,
  type GatewayResponse,
  invalidBody,
  issuePath,
  jsonResponse,
  parseJsonObject,
  type RequestContext,
  type RouteDefinition,
  type RouteDoc,
} from '../../core/index.js';
import type { Page, Paged } from './table.js';

/** Largest `page_size`. */
export const MAX_PAGE_SIZE = 100;
/** The `page_size` of a list when the query gives none. */
export const DEFAULT_PAGE_SIZE = 50;

/**
 * An admin route of a stored resource: its scope is checked by the core before
 * the body is read; `handler` gets the request and the plugin's service `S`
 * (its repository, caches and collaborators).
 */
export interface AdminRoute<S = unknown> {
  /** Stable name; the route is registered as `admin.<name>`. */
  name: string;
  /** HTTP method. */
  method: RouteDefinition['method'];
  /** Path under the base path, e.g. `/workspaces/:id`. */
  path: string;
  /** Scope needed; null for routes every authenticated caller may use (`GET /models`). */
  scope: string | null;
  /** Let the generic proxy serve the request instead when this returns true. */
  deferToFallback?: (ctx: RequestContext) => boolean;
  /** `optional`: the body may be empty (read it with `optionalBody`). Default: GET/DELETE none, others a JSON object. */
  body?: 'optional';
  /**
   * What the API reference says of it. Give `body` and `query` the very schemas the handler parses
   * with (`parseBody`, `parseQuery`), so the reference and the checks cannot drift apart.
   */
  doc: AdminDoc;
  /** Answers the request with the plugin's service; throw a GatewayError to refuse (`notFound`, `conflict`, `forbidden`). */
  handler(ctx: RequestContext, service: S): Promise<GatewayResponse>;
}

/** A control-plane route's reference entry: its scope is the route's own (`AdminRoute.scope`), its credential a gateway key. */
export type AdminDoc = Omit<RouteDoc, 'scope' | 'public' | 'bearer'>;

/** The `:id` of a resource named by id only. */
export const BY_ID: Readonly<Record<string, string>> = Object.freeze({ id: 'Its id.' });
/** The `:id` of a resource named by id, or by slug within the workspace the key acts in. */
export const BY_REF: Readonly<Record<string, string>> = Object.freeze({ id: 'Its id, or its slug in the workspace the key acts in.' });

/** Reference entries for one resource's routes: each under `tag`, with its summary and the schemas it parses with. */
export function docsFor(tag: string): (summary: string, more?: Omit<AdminDoc, 'summary' | 'tags'>) => AdminDoc {
  return (summary, more = {}) => ({ summary, tags: [tag], ...more });
}

/** Parses the JSON body with a valibot schema; a failure is a 400 naming the field. */
export function parseBody<S extends v.GenericSchema>(ctx: RequestContext, schema: S): v.InferOutput<S> {
  return parseValue(schema, ctx.body ?? {});
}

/** Parses part of a body with a valibot schema; a failure is a 400 naming the field. */
export function parseValue<S extends v.GenericSchema>(schema: S, value: unknown): v.InferOutput<S> {
  const result = v.safeParse(schema, value);
  if (!result.success) throw invalidBody(result.issues);
  return result.output;
}

const intParam = (min: number, max: number, description: string) =>
  v.pipe(v.string(), v.description(description), v.regex(/^\d{1,9}$/, 'must be a non-negative integer'), v.transform(Number), v.minValue(min), v.maxValue(max));

/** Query schema fragment shared by every list. */
export const PAGE_QUERY = {
  current_page: v.optional(intParam(0, 1_000_000, 'The page to return, from 0.')),
  page_size: v.optional(intParam(0, MAX_PAGE_SIZE, `Items per page, at most ${MAX_PAGE_SIZE} (default ${DEFAULT_PAGE_SIZE}).`)),
};

/** Parses the query string with a strict valibot object (unknown parameters are a 400, so typos do not go unnoticed). */
export function parseQuery<S extends v.GenericSchema>(ctx: RequestContext, schema: S): v.InferOutput<S> {
  const params = new URLSearchParams(ctx.query);
  // No prototype: on a plain object `raw['__proto__'] = …` would set the prototype instead of adding a key, and the strict schema would never see the parameter.
  const raw: Record<string, string> = Object.create(null);
  for (const [k, value] of params) raw[k] = value;
  const result = v.safeParse(schema, raw);
  if (!result.success) {
    const issue = result.issues[0];
    const param = issuePath(issue) || null;
    // A strict object's unknown key comes as "Expected never": say what it means instead.
    if (issue.kind === 'schema' && issue.expected === 'never' && param !== null) {
      const known = Object.keys((schema as unknown as { entries?: Record<string, unknown> }).entries ?? {});
      throw new GatewayError('invalid_request', `Unknown query parameter '${param}'${known.length === 0 ? '; this route takes none' : `; known: ${known.join(', ')}`}.`, { param });
    }
    throw new GatewayError('invalid_request', `Invalid query parameter${param === null ? '' : ` '${param}'`}: ${issue.message}`, { param });
  }
  return result.output;
}

/** The page a list query asks for (`current_page` from 0, `page_size` default {@link DEFAULT_PAGE_SIZE}). */
export function pageOf(q: { current_page?: number; page_size?: number }): Page {
  return { current: q.current_page ?? 0, size: q.page_size ?? DEFAULT_PAGE_SIZE };
}

/** The list envelope of every control-plane list. */
export function listResponse<T, R>(paged: Paged<T>, present: (row: T) => R): GatewayResponse {
  return jsonResponse(200, { object: 'list', total_count: paged.total, data: paged.data.map(present) });
}

/** A 200 answer with `value` as JSON. */
export function ok(value: unknown): GatewayResponse {
  return jsonResponse(200, value);
}

/** The 404 for a resource that does not exist (or the caller may not see): `No <what> "<id>".`; throw it. */
export function notFound(what: string, id: string, param = 'id'): GatewayError {
  return new GatewayError('not_found', `No ${what} "${id.slice(0, 128)}".`, { param });
}

/** A 409 `conflict` naming the field at fault (a slug taken, an archived resource changed); throw it. */
export function conflict(message: string, param: string): GatewayError {
  return new GatewayError('conflict', message, { param });
}

/** A 403 `forbidden` for the caller's key; throw it. */
export function forbidden(message: string): GatewayError {
  return new GatewayError('forbidden', message, { param: 'x-gateway-api-key' });
}

/** True for a caller not bound to one workspace: organisation keys, static keys, auth off. */
export function isOrgLevel(ctx: RequestContext): boolean {
  return ctx.auth === null || ctx.auth.workspaceId === null;
}

/** Organisation owners and admins (and callers without auth info). */
export function isOrgAdmin(ctx: RequestContext): boolean {
  return isOrgLevel(ctx) && (ctx.auth === null || ctx.auth.role === undefined || ctx.auth.role === 'owner' || ctx.auth.role === 'admin');
}

/** Throws a 403 unless the caller is organisation-level (see {@link isOrgLevel}); `what` names the action in the message. */
export function requireOrgLevel(ctx: RequestContext, what: string): void {
  if (!isOrgLevel(ctx)) throw forbidden(`${what} needs an organisation-level API key; this key belongs to a workspace.`);
}

/** Whether the caller may see a resource of `workspaceId` (null: organisation-wide). */
export function canSee(ctx: RequestContext, workspaceId: string | null): boolean {
  const own = ctx.auth?.workspaceId ?? null;
  return own === null || workspaceId === null || workspaceId === own;
}

/** Whether the caller may change a resource of `workspaceId`: organisation-wide ones only from organisation keys. */
export function canWrite(ctx: RequestContext, workspaceId: string | null): boolean {
  const own = ctx.auth?.workspaceId ?? null;
  return own === null || workspaceId === own;
}

/** The columns an update sets: each listed field the body sent (null included), and `updated_at`. */
export function patchOf(body: Record<string, unknown>, fields: readonly string[], now: number): Record<string, unknown> {
  const patch: Record<string, unknown> = { updated_at: now };
  for (const f of fields) if (body[f] !== undefined) patch[f] = body[f];
  return patch;
}

/** Epoch ms as an ISO 8601 string, for answers; null stays null. */
export function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

/** Parses a JSON column; null stays null. */
export function json<T>(text: string | null): T | null {
  return text === null ? null : (JSON.parse(text) as T);
}

/**
 * Registers admin routes under the base path, each with its scope for the core to check first.
 * `served` is for a feature that registers its routes before it can know whether the admin API is
 * on (`Identity.adminRoutes`, read once ready): while it says false, each route answers as if it
 * were not there (the generic proxy when loaded, else the 404 of an unknown route, once the key
 * and scope are checked).
 */
export function toRouteDefinitions<S>(base: string, routes: readonly AdminRoute<S>[], service: () => S, served?: () => boolean): RouteDefinition[] {
  return routes.map((r) => ({
    name: `admin.${r.name}`,
    method: r.method,
    path: `${base}${r.path}`,
    kind: 'handler' as const,
    sensitive: true,
    deferToFallback: served === undefined ? r.deferToFallback : (ctx: RequestContext) => !served() || r.deferToFallback?.(ctx) === true,
    body: r.body === 'optional' ? ('raw' as const) : r.method === 'GET' || r.method === 'DELETE' ? ('none' as const) : ('json' as const),
    // Checked by the core before the body is read: a key without the scope gets the 403 whatever it sent.
    ...(r.scope === null ? {} : { scope: r.scope }),
    doc: r.doc,
    handler:
      served === undefined
        ? (ctx: RequestContext) => r.handler(ctx, service())
        : async (ctx: RequestContext) => {
            if (!served()) throw new GatewayError('not_found', `Unknown route ${ctx.method} ${ctx.path}.`);
            return r.handler(ctx, service());
          },
  }));
}

/** A resource's slug: 1 to 63 lower-case letters, digits, `.`, `_` or `-`, starting with a letter or digit. */
export const Slug = v.pipe(v.string(), v.regex(/^[a-z0-9][a-z0-9._-]{0,62}$/, 'must be 1 to 63 lower-case letters, digits, ".", "_" or "-", starting with a letter or digit'));
/** A resource's name: 1 to 200 characters, trimmed. */
export const Name = v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(200, 'must be at most 200 characters'));
/** A resource's optional description: at most 2000 characters. */
export const Description = v.nullish(v.pipe(v.string(), v.maxLength(2000, 'must be at most 2000 characters')));
/** A resource's optional metadata: at most 16 string pairs (keys up to 64 characters, values up to 512). */
export const Metadata = v.nullish(v.pipe(v.record(v.pipe(v.string(), v.maxLength(64)), v.pipe(v.string(), v.maxLength(512))), v.check((m) => Object.keys(m).length <= 16, 'holds at most 16 pairs')));

/** For routes whose body is optional (`POST …/rotate`): the JSON object sent, or `{}` when none. */
export function optionalBody(ctx: RequestContext): Record<string, unknown> {
  const raw = ctx.rawBody;
  if (raw === null || raw.length === 0) return {};
  return parseJsonObject(raw);
}
