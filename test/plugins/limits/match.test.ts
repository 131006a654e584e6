import { describe, expect, test } from 'vitest';
import { RequestContext, type RateLimitPolicy } from '../../../sdk/index.js';
import { compilePolicy, groupObject } from '../../../plugins/limits/match.js';
import { memoryLogger } from '../../helpers/gateway.js';

const policy = (over: Partial<RateLimitPolicy>): RateLimitPolicy => ({
  kind: 'rate',
  id: 'p',
  name: 'p',
  workspace_id: null,
  type: 'requests',
  unit: 'rpm',
  value: 10,
  conditions: [],
  group_by: [],
  fail_open: false,
  ...over,
});

function request(user: string): RequestContext {
  const ctx = new RequestContext('POST', '/v1/chat/completions', {}, null, memoryLogger().logger);
  ctx.body = { user };
  ctx.target = { provider: '@main' };
  return ctx;
}

describe('the bucket of an organisation-wide policy', () => {
  test('counts per workspace what a workspace names: an end user, a metadata value, a provider slug', () => {
    const perUser = compilePolicy(policy({ group_by: [{ key: 'user' }] }));
    expect(perUser.groupOf(request('alice'), 'ws-a')).not.toBe(perUser.groupOf(request('alice'), 'ws-b'));
    expect(perUser.groupOf(request('alice'), 'ws-a')).toBe(perUser.groupOf(request('alice'), 'ws-a'));
    // The bucket still reads as the policy's group_by (a refusal names the user, not the workspace).
    expect(groupObject(perUser.policy, perUser.groupOf(request('alice'), 'ws-a'))).toEqual({ user: 'alice' });
    const onSlug = compilePolicy(policy({ conditions: [{ key: 'provider', value: '@main' }] }));
    expect(onSlug.groupOf(request('x'), 'ws-a')).not.toBe(onSlug.groupOf(request('x'), 'ws-b'));
  });

  test('is one for the organisation over what no workspace names, and a workspace policy keeps its own buckets', () => {
    const whole = compilePolicy(policy({ conditions: [{ key: 'provider', value: 'openai' }] }));
    expect(whole.groupOf(request('x'), 'ws-a')).toBe('*');
    expect(whole.groupOf(request('x'), 'ws-b')).toBe('*');
    const byWorkspace = compilePolicy(policy({ group_by: [{ key: 'workspace_id' }, { key: 'user' }] }));
    expect(byWorkspace.groupOf(request('alice'), 'ws-a')).toBe(JSON.stringify(['ws-a', 'alice']));
    const workspaces = compilePolicy(policy({ workspace_id: 'ws-a', group_by: [{ key: 'user' }] }));
    expect(workspaces.groupOf(request('alice'), 'ws-a')).toBe(JSON.stringify(['alice']));
  });
});
