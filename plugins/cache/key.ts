import { createHash } from 'node:crypto';
import { routeApi, type RequestContext, type Target, type TargetFields } from '../../sdk/index.js';

/** Body fields left out of the key: how the answer is delivered, not what is asked. */
const DELIVERY_FIELDS: ReadonlySet<string> = new Set(['stream', 'stream_options']);

export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/**
 * JSON with object keys sorted at every depth, so two bodies that differ only
 * in key order give the same text. `undefined` members are left out, as
 * JSON.stringify does. `skipTop` names top-level keys to leave out.
 */
export function canonicalJson(value: unknown, skipTop: ReadonlySet<string> | null = null): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) out += (i === 0 ? '' : ',') + canonicalJson(value[i] === undefined ? null : value[i]);
    return out + ']';
  }
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj).sort();
  let out = '{';
  let first = true;
  for (const k of keys) {
    const member = obj[k];
    if (member === undefined || (skipTop !== null && skipTop.has(k))) continue;
    out += (first ? '' : ',') + JSON.stringify(k) + ':' + canonicalJson(member);
    first = false;
  }
  return out + '}';
}

/** The request body as keyed: canonical, without `stream` and `stream_options`. */
export function canonicalBody(body: Record<string, unknown> | null): string {
  return canonicalJson(body ?? {}, DELIVERY_FIELDS);
}

/**
 * Which target fields an identity treats specially, from the fields' declarations:
 * credentials enter only as a digest, and fields that do not change the answer
 * (`affectsAnswer: false`: retries, caching, breaker, timeout) are left out.
 */
export interface IdentityFields {
  secret: ReadonlySet<string>;
  skip: ReadonlySet<string>;
}

export function identityFields(fields: TargetFields): IdentityFields {
  return { secret: fields.credentials(), skip: new Set(fields.names((f) => f.affectsAnswer === false)) };
}

/** The identity of a target, see {@link createTargetIdentity}. */
export type TargetIdentity = (target: Target) => string;

/**
 * Identity of a target: its canonical tree (a strategy's children included),
 * with every credential replaced by a digest and the call settings left out.
 * Provider, custom host, overridden model, placement fields and the digests
 * of the credentials all take part; a secret itself never does. The same
 * target object (configs are parsed once and reused) keeps its identity.
 */
export function createTargetIdentity(fields: IdentityFields): TargetIdentity {
  const identities = new WeakMap<Target, string>();
  const scrub = (target: Target): Record<string, unknown> => {
    const out: Record<string, unknown> = {};
    for (const field of Object.keys(target)) {
      const value = target[field];
      if (value === undefined || fields.skip.has(field)) continue;
      if (field === 'targets' && Array.isArray(value)) out.targets = value.map((child) => scrub(child as Target));
      else if (fields.secret.has(field)) out[field] = { digest: sha256(canonicalJson(value)).slice(0, 32) };
      else out[field] = value;
    }
    return out;
  };
  return (target) => {
    let id = identities.get(target);
    if (id === undefined) {
      id = canonicalJson(scrub(target));
      identities.set(target, id);
    }
    return id;
  };
}

/** Namespace header; with it, the key ignores metadata and any other header. */
export const NAMESPACE_HEADER = 'x-gateway-cache-namespace';
export const REFRESH_HEADER = 'x-gateway-cache-force-refresh';
export const STATUS_HEADER = 'x-gateway-cache-status';

/**
 * The target tree a request will call, each leaf as `resolve` makes it (`api.resolveLeaf`: a `@slug`
 * becomes its integration's provider, host and credentials). A leaf that does not resolve stays as
 * named: its call answers the refusal, so nothing is stored under it. A tree with no leaf changed
 * is returned as it is (its identity stays memoised).
 */
export async function resolvedTree(target: Target, resolve: (leaf: Target) => Promise<Target>): Promise<Target> {
  if (!Array.isArray(target.targets)) {
    if (target.strategy !== undefined) return target;
    return resolve(target).catch(() => target);
  }
  const children = target.targets as Target[];
  const resolved = await Promise.all(children.map((child) => resolvedTree(child, resolve)));
  return resolved.every((child, i) => child === children[i]) ? target : { ...target, targets: resolved };
}

/**
 * Digest of everything that scopes a cache entry except the body: the route, the identity of the
 * target as called (give it {@link resolvedTree}'s), the tenant (the workspace the request acts in,
 * for every kind of key: an organisation key acting in two workspaces has two caches), and the
 * namespace (the header's value, or the default namespace when the header is absent or empty).
 */
export function partitionOf(ctx: RequestContext, target: Target, identity: TargetIdentity, tenant: string): string {
  const namespace = ctx.header(NAMESPACE_HEADER);
  const scope = namespace === undefined || namespace === '' ? ['default'] : ['ns', namespace];
  return sha256(JSON.stringify(['cache/v2', routeApi(ctx.route!), identity(target), tenant, scope]));
}

/** The exact-match key: partition + canonical body. */
export function exactKey(partition: string, body: Record<string, unknown> | null): string {
  return createHash('sha256').update(partition).update('\n').update(canonicalBody(body)).digest('hex');
}
