import { DEFAULT_CONFIG, defaultConfig } from '../../server/default-config.js';
import type { ServerConfig } from '../../server/schema.js';
import { BOOTSTRAP_KEY, startTestServer } from '../helpers/gateway.js';
import { clearRedisPrefix, REDIS_URL, uniquePrefix } from '../helpers/services.js';
import { startTenantUpstream, type TenantUpstream } from '../mocks/tenant-upstream.js';

/*
 * A world of the tenant-isolation matrix (test/isolation/matrix.test.ts): one real server with the
 * default plugins, two workspaces A and B that chose the same names (each has a provider slug
 * `@main`, to its own deployment, and `@shared`, to one organisation-wide integration both reach),
 * and a caller for each. Two kinds of caller: a workspace's own key, or one organisation-level key
 * acting in a workspace through `x-gateway-workspace`, the case where a partition by the key's own
 * workspace (none) would put both workspaces in one.
 */

export type CallerKind = 'workspace key' | 'organisation key';
export type StoreKind = 'memory' | 'redis';
export type Tenant = 'A' | 'B';

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  /** The JSON body, or null when it is not JSON. */
  body: any;
}

/** Whoever sends a probe's traffic: the key and the headers that make it act in its workspace. */
export interface Caller {
  tenant: Tenant;
  /** The workspace's id in this world. */
  workspaceId: string;
  /** Its slug (the same in every world). */
  workspaceSlug: string;
  key: string;
  headers: Record<string, string>;
}

export interface World {
  readonly url: string;
  readonly dataDir: string;
  readonly upstream: TenantUpstream;
  readonly kind: CallerKind;
  caller(tenant: Tenant): Caller;
  /** A request as `caller` (its key and workspace header, then `headers`); a JSON body is sent as JSON, FormData as a form. */
  call(caller: Caller, method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Answer>;
  /** An admin request with the organisation's key; a non-2xx answer throws, naming it. */
  admin(method: string, path: string, body?: unknown): Promise<any>;
  close(): Promise<void>;
}

/**
 * The organisation-wide policies of the world's server config (the `limits` plugin's options):
 * one counts per end user, one holds for the slug `@main`. Both count what a workspace names, so
 * each workspace must have its own counters (docs/limits.md, "Organisation-wide policies").
 */
export const ORGANISATION_POLICIES = {
  rateLimits: [
    { id: 'org-per-user', type: 'requests', unit: 'rpd', value: 2, conditions: [{ key: 'metadata.probe', value: 'org-per-user' }], group_by: [{ key: 'user' }] },
    { id: 'org-main-slug', type: 'requests', unit: 'rpd', value: 2, conditions: [{ key: 'metadata.probe', value: 'org-main-slug' }, { key: 'provider', value: '@main' }] },
  ],
};

/** The server config of a world: the default one (with Redis as its store when asked), and the organisation's policies. */
export function worldConfig(store: StoreKind): ServerConfig {
  const base = store === 'redis' ? defaultConfig({ redisUrl: REDIS_URL, databaseUrl: undefined }) : DEFAULT_CONFIG;
  return { ...base, plugins: base.plugins.map((p) => (p.name === 'limits' ? { ...p, options: { ...p.options, ...ORGANISATION_POLICIES } } : p)) };
}

/** A world with its own upstream deployments (so what one world's traffic did never shows in another's counts). */
export async function startWorld(kind: CallerKind, store: StoreKind): Promise<World> {
  const upstream = await startTenantUpstream();
  const prefix = uniquePrefix('isolation');
  const env: Record<string, string> = store === 'redis' ? { REDIS_URL, GATEWAY_REDIS_PREFIX: prefix } : {};
  const gw = await startTestServer({ config: worldConfig(store), env });
  const request = async (method: string, path: string, key: string, headers: Record<string, string>, body?: unknown): Promise<Answer> => {
    const h: Record<string, string> = { 'x-gateway-api-key': key, ...headers };
    let payload: BodyInit | undefined;
    if (body instanceof FormData) payload = body;
    else if (body !== undefined) {
      payload = JSON.stringify(body);
      h['content-type'] = 'application/json';
    }
    const res = await fetch(`${gw.url}${path}`, { method, headers: h, body: payload, signal: AbortSignal.timeout(20_000) });
    const text = await res.text();
    let parsed: unknown = null;
    try {
      parsed = JSON.parse(text);
    } catch {
      // An event stream or a page: the text says it.
    }
    return { status: res.status, headers: res.headers, text, body: parsed };
  };
  const admin = async (method: string, path: string, body?: unknown) => {
    const answer = await request(method, path, BOOTSTRAP_KEY, {}, body);
    if (answer.status < 200 || answer.status > 299) throw new Error(`world: ${method} ${path} answered ${answer.status}: ${answer.text}`);
    return answer.body;
  };

  const shared = await admin('POST', '/v1/integrations', { name: 'shared deployment', slug: 'int-shared', ai_provider_id: 'together-ai', key: 'sk-shared-deployment-0001', configurations: { custom_host: upstream.host('shared') } });
  const callers = {} as Record<Tenant, Caller>;
  for (const tenant of ['A', 'B'] as const) {
    const name = tenant.toLowerCase();
    const ws = await admin('POST', '/v1/workspaces', { name: `Tenant ${tenant}`, slug: `tenant-${name}` });
    const own = await admin('POST', '/v1/integrations', {
      workspace_id: ws.id,
      name: `${tenant}'s deployment`,
      slug: `int-${name}`,
      ai_provider_id: 'together-ai',
      key: `sk-tenant-${name}-0001`,
      configurations: { custom_host: upstream.host(name) },
    });
    // The same slugs in both workspaces: names each chose, pointing at what each means by them.
    await admin('POST', '/v1/providers', { workspace_id: ws.id, name: 'main', slug: 'main', integration_id: own.id });
    await admin('POST', '/v1/providers', { workspace_id: ws.id, name: 'shared', slug: 'shared', integration_id: shared.id });
    if (kind === 'workspace key') {
      const key = await admin('POST', '/v1/api-keys', {
        type: 'workspace-service',
        name: `${tenant} traffic`,
        workspace_id: ws.id,
        scopes: ['completions.write', 'logs.read', 'agents.invoke', 'configs.read', 'providers.read', 'workspaces.read'],
      });
      callers[tenant] = { tenant, workspaceId: ws.id, workspaceSlug: ws.slug, key: key.key, headers: {} };
    } else {
      callers[tenant] = { tenant, workspaceId: ws.id, workspaceSlug: ws.slug, key: BOOTSTRAP_KEY, headers: { 'x-gateway-workspace': ws.slug } };
    }
  }
  return {
    url: gw.url,
    dataDir: gw.dataDir,
    upstream,
    kind,
    caller: (tenant) => callers[tenant],
    call: (caller, method, path, body, headers = {}) => request(method, path, caller.key, { ...caller.headers, ...headers }, body),
    admin,
    async close() {
      await gw.close();
      await upstream.close();
      if (store === 'redis') await clearRedisPrefix(prefix);
    },
  };
}

/** A chat completion as `caller` through `config` (a target or a strategy tree), saying `content`. */
export function chat(world: World, caller: Caller, config: Record<string, unknown>, content: string, extra: { body?: Record<string, unknown>; headers?: Record<string, string> } = {}): Promise<Answer> {
  return world.call(caller, 'POST', '/v1/chat/completions', { model: 'gpt-4o-mini', messages: [{ role: 'user', content }], ...extra.body }, { 'x-gateway-config': JSON.stringify(config), ...extra.headers });
}

/** The deployment an answer came from (`from a`, `from shared`), or its status and error code. */
export function origin(answer: Answer): string {
  const text = answer.body?.choices?.[0]?.message?.content;
  if (typeof text === 'string') return text.replace(/ #\d+$/, '');
  return `${answer.status} ${answer.body?.error?.code ?? answer.text.slice(0, 80)}`;
}

/**
 * A workspace resource made once per world and tenant, on first use (the admin answer). Whatever makes B's
 * is called before A's traffic in `dirty` (and again, at no cost, in B's `observe`): every admin
 * write clears the request path's caches, so a write between A's traffic and B's look would wipe
 * the very entry a leak would come from. In a world where A did nothing, B's `observe` makes it.
 */
export function perTenant<T>(make: (world: World, who: Caller) => Promise<T>): (world: World, who: Caller) => Promise<T> {
  const made = new WeakMap<World, Map<Tenant, Promise<T>>>();
  return (world, who) => {
    let mine = made.get(world);
    if (mine === undefined) made.set(world, (mine = new Map()));
    let found = mine.get(who.tenant);
    if (found === undefined) mine.set(who.tenant, (found = make(world, who)));
    return found;
  };
}
