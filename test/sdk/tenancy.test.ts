import { describe, expect, test } from 'vitest';
import { RequestContext, type PluginAPI } from '../../core/index.js';
import { knownTenant, tenantOf, type TenancyService } from '../../sdk/tenancy.js';
import { memoryLogger } from '../helpers/gateway.js';

/** Just enough of the plugin API for `tenantOf`: ready at once, with the tenancy given (or none). */
function apiWith(service: TenancyService | undefined): PluginAPI {
  return { onReady: (fn: () => void) => fn(), tryResolve: () => service } as unknown as PluginAPI;
}

function request(headers: Record<string, string> = {}, workspaceId: string | null = null): RequestContext {
  const ctx = new RequestContext('POST', '/v1/chat/completions', headers, null, memoryLogger().logger);
  ctx.auth = { keyId: 'k', workspaceId, scopes: ['*'] };
  return ctx;
}

describe('tenantOf', () => {
  test("without a control plane: the key's own workspace, else the one tenant", () => {
    const tenant = tenantOf(apiWith(undefined));
    expect(tenant(request({}, 'ws-1'))).toBe('ws-1');
    expect(tenant(request({ 'x-gateway-workspace': 'ws-2' }))).toBe('');
  });

  test('asks the control plane once per request, with or without a promise', async () => {
    let asked = 0;
    const tenant = tenantOf(
      apiWith({
        workspaceOf(ctx) {
          asked++;
          const named = ctx.header('x-gateway-workspace') ?? null;
          return named === 'slow' ? Promise.resolve('ws-slow') : named;
        },
      }),
    );
    const ctx = request({ 'x-gateway-workspace': 'ws-a' });
    expect([tenant(ctx), tenant(ctx), knownTenant(ctx)]).toEqual(['ws-a', 'ws-a', 'ws-a']);
    const slow = request({ 'x-gateway-workspace': 'slow' });
    expect(knownTenant(slow)).toBeUndefined();
    expect(await tenant(slow)).toBe('ws-slow');
    expect(tenant(slow)).toBe('ws-slow');
    expect(tenant(request())).toBe('');
    expect(asked).toBe(3);
  });

  test("an internal request belongs to the client's request it serves", () => {
    const tenant = tenantOf(apiWith({ workspaceOf: (ctx) => ctx.header('x-gateway-workspace') ?? null }));
    const parent = request({ 'x-gateway-workspace': 'ws-a' });
    const child = new RequestContext('POST', '/v1/embeddings', {}, null, memoryLogger().logger);
    child.internal = true;
    child.parent = parent;
    child.auth = parent.auth;
    expect(tenant(child)).toBe('ws-a');
    expect(knownTenant(parent)).toBe('ws-a');
  });

  test("a refusal of the lookup is the request's", () => {
    const tenant = tenantOf(
      apiWith({
        workspaceOf() {
          throw new Error('No workspace "gone".');
        },
      }),
    );
    expect(() => tenant(request({ 'x-gateway-workspace': 'gone' }))).toThrow('No workspace "gone".');
  });
});

describe('targetIdentity', () => {
  test('keys by the tenant, and refuses a call without one (a caller written before identities carried it)', async () => {
    const { credentialDigest, targetIdentity } = await import('../../sdk/target-identity.js');
    const credentials = credentialDigest(['api_key']);
    const ctx = request();
    const target = { provider: 'openai', api_key: 'sk-1' };
    expect(targetIdentity(ctx, target, credentials, 'ws-a')).not.toBe(targetIdentity(ctx, target, credentials, 'ws-b'));
    expect(() => (targetIdentity as (...args: unknown[]) => string)(ctx, target, credentials)).toThrow(/the tenant is required/);
  });
});
