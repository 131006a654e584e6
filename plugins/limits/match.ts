import { createHash } from 'node:crypto';
import { ENDPOINT_TYPES, endpointTypesMatched, type LimitPolicy, type LimitPolicySet, type RequestContext, type Target, routeApi } from '../../sdk/index.js';

/** What a request is matched and grouped on; read from the context once per key and policy. */
type Getter = (ctx: RequestContext, workspaceId: string | null) => string | null;

/** A policy ready for the request path: its conditions as sets, its group_by as getters. */
export interface CompiledPolicy {
  readonly policy: LimitPolicy;
  /** The providers its `provider` conditions name; null when it has none (it holds whichever target answers). */
  readonly providers: ReadonlySet<string> | null;
  matches(ctx: RequestContext, workspaceId: string | null): boolean;
  /** The request's bucket within the policy: `*` without group_by, else its values as a JSON array. */
  groupOf(ctx: RequestContext, workspaceId: string | null): string;
}

/** Longer group values (a client's `user`, a metadata value) are kept as a digest, so a bucket name stays small. */
const MAX_GROUP_VALUE = 256;

/** `endpoint_type`: the route's name for people (`chat`, `embeddings`, …), else the route's own name. */
export function endpointType(ctx: RequestContext): string | null {
  // By the API the route speaks: a prompt completion counts as a chat call.
  const name = ctx.route === null ? undefined : routeApi(ctx.route);
  return name === undefined ? null : (ENDPOINT_TYPES[name] ?? name);
}

function text(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return null;
}

function getter(key: string): Getter {
  switch (key) {
    case 'workspace_id':
      return (_ctx, workspaceId) => workspaceId;
    case 'api_key':
      return (ctx) => ctx.auth?.keyId ?? null;
    case 'endpoint_type':
      return endpointType;
    case 'model':
      return (ctx) => ctx.model;
    case 'user':
      // The Messages API names its end user in metadata.user_id, not `user`: read it there on that door.
      return (ctx) => text(ctx.body?.user) ?? (ctx.route?.frontDoor === 'messages' ? text((ctx.body?.metadata as Record<string, unknown> | undefined)?.user_id) : null);
    default: {
      // metadata.<key>: the value the request's x-gateway-metadata gives it.
      const name = key.slice('metadata.'.length);
      return (ctx) => text(ctx.metadata?.[name]);
    }
  }
}

const targetProviders = new WeakMap<Target, ReadonlySet<string>>();

/**
 * The providers a request's target names, as named (`openai`, `@team-slug`):
 * every leaf of a strategy tree, since which one answers is known only later.
 * Computed once per target object (saved and server configs are reused).
 */
export function providersOf(target: Target | null): ReadonlySet<string> {
  if (target === null) return EMPTY;
  let known = targetProviders.get(target);
  if (known === undefined) {
    const out = new Set<string>();
    const walk = (t: Target) => {
      if (typeof t.provider === 'string' && t.provider !== '') out.add(t.provider);
      if (typeof t.virtual_key === 'string' && t.virtual_key !== '') out.add(`@${t.virtual_key}`);
      if (Array.isArray(t.targets)) for (const child of t.targets) if (child !== null && typeof child === 'object') walk(child as Target);
    };
    walk(target);
    known = out;
    targetProviders.set(target, known);
  }
  return known;
}
const EMPTY: ReadonlySet<string> = new Set();

const targetLeaves = new WeakMap<Target, readonly Target[]>();

/** The leaves of a target's strategy tree (itself when it has no children); once per target object. */
export function leavesOf(target: Target): readonly Target[] {
  let known = targetLeaves.get(target);
  if (known === undefined) {
    const out: Target[] = [];
    const walk = (t: Target) => {
      if (Array.isArray(t.targets)) {
        for (const child of t.targets) if (child !== null && typeof child === 'object') walk(child as Target);
      } else out.push(t);
    };
    walk(target);
    known = out;
    targetLeaves.set(target, known);
  }
  return known;
}

/** Whether a policy's provider conditions hold for a target (every policy without any does). */
export function namesProviderOf(policy: CompiledPolicy, target: Target): boolean {
  if (policy.providers === null) return true;
  for (const p of providersOf(target)) if (policy.providers.has(p)) return true;
  return false;
}

/**
 * Whether a policy holds for only some of the targets a request may be answered by: its provider
 * conditions name some leaves of the strategy tree and not others. Such a policy is checked when one
 * of its targets is called (docs/limits.md#provider-conditions), not for the whole request.
 */
export function holdsForSomeTargets(policy: CompiledPolicy, target: Target | null): boolean {
  if (policy.providers === null || target === null || !Array.isArray(target.targets)) return false;
  for (const leaf of leavesOf(target)) if (!namesProviderOf(policy, leaf)) return true;
  return false;
}

/** Compiles one policy: conditions on one key are alternatives (any value), different keys must all hold. */
export function compilePolicy(policy: LimitPolicy): CompiledPolicy {
  const byKey = new Map<string, Set<string>>();
  for (const c of policy.conditions) {
    let values = byKey.get(c.key);
    if (values === undefined) byKey.set(c.key, (values = new Set()));
    // `endpoint_type: chat` holds for every chat door (chat completions, Responses, Messages): see ENDPOINT_TYPE_MATCHES.
    if (c.key === 'endpoint_type') for (const t of endpointTypesMatched(c.value)) values.add(t);
    else values.add(c.value);
  }
  const tests: Array<(ctx: RequestContext, workspaceId: string | null) => boolean> = [];
  for (const [key, values] of byKey) {
    if (key === 'provider') {
      tests.push((ctx) => {
        for (const p of providersOf(ctx.target)) if (values.has(p)) return true;
        return false;
      });
    } else {
      const get = getter(key);
      tests.push((ctx, ws) => {
        const value = get(ctx, ws);
        return value !== null && values.has(value);
      });
    }
  }
  const groups = policy.group_by.map((g) => getter(g.key));
  // An organisation-wide policy (the server config's) counts per workspace what is a name each workspace chooses: an
  // end user, a metadata value, a provider slug. A's `alice` and B's `alice`, A's `@main` and B's, are not the same.
  const perTenant =
    policy.workspace_id === null &&
    !policy.group_by.some((g) => g.key === 'workspace_id') &&
    (policy.group_by.some((g) => g.key === 'user' || g.key.startsWith('metadata.')) || [...(byKey.get('provider') ?? [])].some((p) => p.startsWith('@')));
  return {
    policy,
    providers: byKey.get('provider') ?? null,
    matches(ctx, ws) {
      for (const t of tests) if (!t(ctx, ws)) return false;
      return true;
    },
    groupOf(ctx, ws) {
      if (perTenant) return JSON.stringify([...groups.map((get) => groupValue(get(ctx, ws) ?? '')), { workspace: ws ?? '' }]);
      if (groups.length === 0) return '*';
      // A request without the value (no `user`, no such metadata) shares the bucket of the empty value.
      return JSON.stringify(groups.map((get) => groupValue(get(ctx, ws) ?? '')));
    },
  };
}

function groupValue(value: string): string {
  return value.length <= MAX_GROUP_VALUE ? value : `sha256:${createHash('sha256').update(value).digest('hex')}`;
}

/** A group as an object of its group_by keys, for the admin API: `{ "user": "u-1" }`. */
export function groupObject(policy: LimitPolicy, group: string): Record<string, string> {
  if (group === '*' || policy.group_by.length === 0) return {};
  let values: unknown;
  try {
    values = JSON.parse(group);
  } catch {
    return {};
  }
  const out: Record<string, string> = {};
  policy.group_by.forEach((g, i) => {
    const value = Array.isArray(values) ? values[i] : undefined;
    out[g.key] = typeof value === 'string' ? value : '';
  });
  return out;
}

const compiled = new WeakMap<LimitPolicySet, readonly CompiledPolicy[]>();

/** The compiled policies of a set, built once per set object (a source hands out the same one while it is cached). */
export function compileSet(set: LimitPolicySet): readonly CompiledPolicy[] {
  let list = compiled.get(set);
  if (list === undefined) {
    list = set.policies.map(compilePolicy);
    compiled.set(set, list);
  }
  return list;
}
