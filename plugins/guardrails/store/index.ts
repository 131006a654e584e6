import { GatewayError, type GuardrailValidator, type PluginAPI, type RequestContext } from '../../../sdk/index.js';
import { checkStoredUrls, DocumentStore, IDENTITY, toRouteDefinitions } from '../../../sdk/admin/index.js';
import { STORED_GUARDRAILS_MIGRATIONS, STORED_GUARDRAILS_NAMESPACE } from './migrations.js';
import { guardrailRoutes } from './routes.js';

/** A stored guardrail as the request path runs it. */
export interface StoredGuardrail {
  /** The stored id (`pg-…`); a config may name it by id or by slug. */
  id: string;
  /** The current version: each (id, version) is compiled once. */
  version: number;
  status: 'active' | 'archived';
  /** The guardrail entry: `deny`, `async`, `on_fail`, `on_success` and one property per check id (frozen). */
  entry: Readonly<Record<string, unknown>>;
}

/** Where the request path finds a guardrail a config names by id or slug when the server config does not define it. */
export interface GuardrailLookup {
  /** The guardrail `ref` names in the request's workspace; undefined when there is none. Synchronous when cached. */
  find(ctx: RequestContext, ref: string): StoredGuardrail | undefined | Promise<StoredGuardrail | undefined>;
}

/** Fields answers carry: an entry may not use them as check ids. */
const RESERVED = new Set(['id', 'object', 'slug', 'name', 'workspace_id', 'status', 'version', 'created_at', 'updated_at', 'archived_at']);

/** Validates an entry with every check's parameter schema; a bad one is a 400 naming the field. */
function checkEntry(validator: GuardrailValidator, entry: Record<string, unknown>): void {
  for (const key of Object.keys(entry)) {
    if (key === 'id') throw new GatewayError('invalid_request', "Invalid request body: 'id' is given by the gateway; a guardrail's body is a name and a guardrail entry.", { param: 'id' });
    if (RESERVED.has(key)) throw new GatewayError('invalid_request', `Invalid request body: '${key}' cannot be changed here.`, { param: key });
  }
  const issues = validator.check(entry);
  if (issues.length > 0) {
    const { path, message } = issues[0]!;
    throw new GatewayError('invalid_request', `Invalid request body: ${path === '' ? '' : `'${path}' `}${message}`, { param: path === '' ? null : path });
  }
}

/**
 * Stored guardrails of workspaces, kept beside identity's tables when the
 * control plane is loaded: their admin routes (`/guardrails`, with the
 * configs' scopes) and the lookup of one a config names, in the request's
 * workspace, through a cache that every admin write clears. Archived ones are
 * found too (a config naming one is refused, not silently let through). The
 * checks' credential parameters (a webhook's headers) and the target fields
 * declared `credential` are sealed at rest, masked in every answer.
 */
export function storedGuardrails(api: PluginAPI, validator: GuardrailValidator): GuardrailLookup {
  const store: DocumentStore<StoredGuardrail> = new DocumentStore<StoredGuardrail>(
    {
      kind: 'guardrail',
      title: 'Stored guardrail',
      idPrefix: 'pg-',
      table: 'cp_guardrails',
      counter: 'version',
      versions: 'cp_guardrail_versions',
      key: 'guardrail_id',
      archives: true,
      listBodies: true,
      namespace: STORED_GUARDRAILS_NAMESPACE,
      migrations: STORED_GUARDRAILS_MIGRATIONS,
    },
    {
      credentialKeys: () => new Set([...api.targetFields.credentials(), ...validator.credentialKeys()]),
      check(entry) {
        checkEntry(validator, entry);
        checkStoredUrls(api.upstream, entry, '', true);
      },
      build: (row) => Object.freeze({ id: row.id, version: row.version, status: row.status as StoredGuardrail['status'], entry: Object.freeze(store.open(row) as Record<string, unknown>) }),
    },
  );
  for (const route of toRouteDefinitions(api.options.basePath, guardrailRoutes, () => store, () => store.identity.adminRoutes)) api.routes.add(route);
  api.onReady(() => store.ready(api.resolve(IDENTITY), api.logger));
  const inWorkspace = (workspaceId: string, ref: string) => {
    const found = store.lookup(workspaceId, ref);
    return found instanceof Promise ? found.then((g) => g ?? undefined) : (found ?? undefined);
  };
  return {
    find(ctx, ref) {
      const own = ctx.auth?.workspaceId;
      if (own) return inWorkspace(own, ref);
      return store.identity.requestWorkspace(ctx).then((workspaceId) => (workspaceId === null ? undefined : inWorkspace(workspaceId, ref)));
    },
  };
}
