import { describe, expect, test } from 'vitest';
import { fieldSchema, RequestContext, TargetFields, type Target } from '../../../core/index.js';
import { cache } from '../../../plugins/cache/index.js';
import { canonicalBody, canonicalJson, createTargetIdentity, exactKey, identityFields, partitionOf, resolvedTree } from '../../../plugins/cache/key.js';
import { cacheSemantic } from '../../../plugins/cache/semantic/index.js';
import { cacheMemory, memoryCacheStore } from '../../../plugins/cache/stores/memory/index.js';
import { cacheRedis } from '../../../plugins/cache/stores/redis/index.js';
import type { CachedAnswer } from '../../../plugins/cache/types.js';
import { rateLimitedWarning } from '../../../plugins/cache/warn.js';
import { bundledTargetFields } from '../../helpers/fields.js';
import { memoryLogger } from '../../helpers/gateway.js';

const targetIdentity = createTargetIdentity(identityFields(bundledTargetFields()));

function context(headers: Record<string, string> = {}, workspaceId: string | null = null, route = 'chat.completions'): RequestContext {
  const ctx = new RequestContext('POST', '/v1/chat/completions', headers, new AbortController().signal, memoryLogger().logger);
  ctx.route = { name: route, method: 'POST', path: '/v1/chat/completions', kind: 'provider' };
  ctx.auth = { keyId: 'k', workspaceId, scopes: ['*'] };
  return ctx;
}

describe('cache key', () => {
  test('canonical JSON sorts keys at every depth and drops undefined', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { y: 2, x: 1 }], c: undefined } })).toBe('{"a":{"d":[1,{"x":1,"y":2}]},"b":1}');
    expect(canonicalBody({ stream: true, stream_options: { include_usage: true }, model: 'm' })).toBe('{"model":"m"}');
    // Nested fields named stream are part of the request.
    expect(canonicalBody({ model: 'm', metadata: { stream: 1 } })).toBe('{"metadata":{"stream":1},"model":"m"}');
  });

  test('the target identity holds digests of credentials, never the secrets, and leaves call settings out', () => {
    const target: Target = {
      provider: 'openai',
      api_key: 'sk-very-secret',
      custom_host: 'http://h/v1',
      retry: { attempts: 3 },
      cache: { mode: 'simple' },
      strategy: { mode: 'fallback' },
      targets: [{ provider: 'bedrock', aws_secret_access_key: 'aws-secret', aws_session_token: 'tok-secret', vertex_service_account_json: { private_key: 'pk-secret' } }],
    };
    const id = targetIdentity(target);
    for (const secret of ['sk-very-secret', 'aws-secret', 'tok-secret', 'pk-secret']) expect(id).not.toContain(secret);
    expect(id).toContain('http://h/v1');
    expect(id).not.toContain('retry');
    expect(id).not.toContain('"cache"');
    const other = targetIdentity({ ...target, api_key: 'sk-other' });
    expect(other).not.toBe(id);
    expect(targetIdentity({ ...target, retry: { attempts: 1 }, cache: { mode: 'semantic' } })).toBe(id);
  });

  test("a plugin's declared fields: its credential enters as a digest, a field that does not affect the answer stays out", () => {
    const fields = new TargetFields();
    fields.declare('acme', { acme_token: { schema: fieldSchema.string(), credential: true }, acme_hedge: { schema: fieldSchema.integer(), affectsAnswer: false }, acme_region: { schema: fieldSchema.string() } });
    const identity = createTargetIdentity(identityFields(fields));
    const id = identity({ provider: 'acme', acme_token: 'acme-secret-token', acme_hedge: 2, acme_region: 'eu' });
    expect(id).not.toContain('acme-secret-token');
    expect(id).toContain('"acme_token":{"digest":');
    expect(id).not.toContain('acme_hedge');
    expect(id).toContain('"acme_region":"eu"');
    expect(identity({ provider: 'acme', acme_token: 'other', acme_hedge: 2, acme_region: 'eu' })).not.toBe(id);
  });

  test('the partition separates routes, tenants and namespaces; an empty namespace is the default', () => {
    const t: Target = { provider: 'openai', api_key: 'k' };
    const base = partitionOf(context(), t, targetIdentity, '');
    expect(partitionOf(context({ 'x-gateway-metadata': '{"a":1}', 'x-other': 'y' }), t, targetIdentity, '')).toBe(base);
    expect(partitionOf(context({ 'x-gateway-cache-namespace': '' }), t, targetIdentity, '')).toBe(base);
    expect(partitionOf(context({ 'x-gateway-cache-namespace': 'n' }), t, targetIdentity, '')).not.toBe(base);
    expect(partitionOf(context({}, 'ws-1'), t, targetIdentity, 'ws-1')).not.toBe(base);
    // The tenant decides, not the key's own workspace: an organisation key acting in ws-1 shares ws-1's cache.
    expect(partitionOf(context({}, null), t, targetIdentity, 'ws-1')).toBe(partitionOf(context({}, 'ws-1'), t, targetIdentity, 'ws-1'));
    expect(partitionOf(context({}, null, 'embeddings'), t, targetIdentity, '')).not.toBe(base);
    // A namespace that spells a workspace id is still not that workspace.
    expect(partitionOf(context({ 'x-gateway-cache-namespace': 'ws-1' }), t, targetIdentity, '')).not.toBe(partitionOf(context({}, 'ws-1'), t, targetIdentity, 'ws-1'));
    expect(exactKey(base, { model: 'm', a: 1 })).toBe(exactKey(base, { a: 1, model: 'm', stream: true }));
    expect(exactKey(base, { model: 'm' })).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('the target as called', () => {
  test('each leaf resolved (a slug to its integration), a leaf that does not resolve kept as named, a tree with nothing resolved kept as it is', async () => {
    const resolve = async (leaf: Target): Promise<Target> => {
      if (leaf.provider === '@gone') throw new Error('unknown slug');
      return leaf.provider === '@main' ? { provider: 'openai', api_key: 'sk-a', custom_host: 'http://127.0.0.1:1/a' } : leaf;
    };
    const tree: Target = { strategy: { mode: 'fallback' }, targets: [{ provider: '@main' }, { provider: '@gone' }, { provider: 'openai', api_key: 'k' }] };
    const called = await resolvedTree(tree, resolve);
    expect(called.targets).toEqual([{ provider: 'openai', api_key: 'sk-a', custom_host: 'http://127.0.0.1:1/a' }, { provider: '@gone' }, { provider: 'openai', api_key: 'k' }]);
    expect(targetIdentity(called)).not.toBe(targetIdentity(tree));
    const plain: Target = { strategy: { mode: 'loadbalance' }, targets: [{ provider: 'openai', api_key: 'k' }] };
    expect(await resolvedTree(plain, resolve)).toBe(plain);
  });
});

describe('memory store', () => {
  const answer = (body: string, createdAt = 0): CachedAnswer => ({ v: 1, route: 'chat.completions', status: 200, body, usage: null, fromStream: false, createdAt, expiresAt: createdAt + 1000 });

  test('entries expire by TTL (on its clock)', async () => {
    let clock = 1_000_000;
    const store = memoryCacheStore({ now: () => clock });
    await store.set('k', answer('{}'), 1000);
    expect(await store.get('k')).not.toBeNull();
    clock += 999;
    expect(await store.get('k')).not.toBeNull();
    clock += 2;
    expect(await store.get('k')).toBeNull();
  });

  test('bounded by bytes: the least recently used go first', async () => {
    const store = memoryCacheStore({ maxBytes: 10_000 });
    const big = '{' + 'x'.repeat(3000) + '}';
    for (const k of ['a', 'b', 'c']) await store.set(k, answer(big), 60_000);
    await store.get('a');
    await store.set('d', answer(big), 60_000);
    expect(await store.get('b')).toBeNull();
    expect(await store.get('a')).not.toBeNull();
    expect(await store.get('d')).not.toBeNull();
    // Larger than the whole store: not kept.
    await store.set('huge', answer('{' + 'x'.repeat(20_000) + '}'), 60_000);
    expect(await store.get('huge')).toBeNull();
  });

  test('candidate lists are capped, newest first, without duplicates or expired members', async () => {
    let clock = 0;
    const store = memoryCacheStore({ now: () => clock });
    const c = (key: string, expiresAt = 10_000) => ({ key, vector: new Float32Array([1, 0]), createdAt: clock, expiresAt });
    await store.addCandidate('s', c('k1', 50), 3, 10_000);
    await store.addCandidate('s', c('k2'), 3, 10_000);
    await store.addCandidate('s', c('k3'), 3, 10_000);
    await store.addCandidate('s', c('k2'), 3, 10_000);
    expect((await store.candidates('s', 10)).map((x) => x.key)).toEqual(['k2', 'k3', 'k1']);
    clock = 100;
    await store.addCandidate('s', c('k4'), 3, 10_000);
    expect((await store.candidates('s', 10)).map((x) => x.key)).toEqual(['k4', 'k2', 'k3']);
    expect((await store.candidates('s', 2)).map((x) => x.key)).toEqual(['k4', 'k2']);
    expect(await store.candidates('other', 2)).toEqual([]);
  });
});

describe('options are checked at start-up', () => {
  test('bad options name the plugin and the field', () => {
    expect(() => cache({ store: 'disk' as 'memory' })).toThrow(/Invalid options for cache: store/);
    expect(() => cache({ defaultMaxAge: 10, maxAgeCap: 5 })).toThrow(/defaultMaxAge must not exceed maxAgeCap/);
    expect(() => cacheMemory({ maxBytes: 10 })).toThrow(/cache-memory: maxBytes/);
    expect(() => cacheRedis({ warnIntervalMs: -1 })).toThrow(/cache-redis: warnIntervalMs/);
    expect(() => cacheSemantic({ embedding: { target: { provider: 'openai' }, model: 'm' }, threshold: 1.5 })).toThrow(/cache-semantic: threshold/);
    expect(() => cacheSemantic({ embedding: { target: {}, model: 'm' } })).toThrow(/embedding.target/);
  });
});

describe('rate-limited warning', () => {
  test('one line per interval, with the count of the ones left out', () => {
    const logs = memoryLogger();
    let clock = 0;
    const warn = rateLimitedWarning(logs.logger, 'down', 1000, () => clock);
    warn(new Error('a'));
    warn(new Error('b'));
    clock = 500;
    warn(new Error('c'));
    clock = 1500;
    warn(new Error('d'));
    const lines = logs.lines().filter((l) => l.msg === 'down');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({ err: 'a' });
    expect(lines[1]).toMatchObject({ err: 'd', suppressed: 2 });
  });
});
