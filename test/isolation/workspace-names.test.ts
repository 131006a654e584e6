import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { chat, startWorld, type World } from './world.js';

/*
 * One way to name a workspace: its id or its slug, wherever one is taken (docs/admin-api.md). The
 * log and analytics filters took only ids: a slug answered nothing to an organisation key and 403
 * to the workspace's own key.
 */
describe('workspace_id takes a slug as it takes an id, in the log and analytics filters', () => {
  let world: World;
  // A fixed range: without `to`, two time series asked a moment apart end at two moments.
  const now = Date.now();
  const routes = ['/v1/logs?', '/v1/analytics/groups/model?', '/v1/logs/groups/model?', `/v1/analytics/timeseries?from=${now - 3_600_000}&to=${now + 3_600_000}&`];
  beforeAll(async () => {
    world = await startWorld('workspace key', 'memory');
    const a = world.caller('A');
    expect((await chat(world, a, { provider: '@main' }, 'hello', { body: { model: 'names-probe' } })).status).toBe(200);
    // The log store writes in the background.
    for (let i = 0; i < 400; i++) {
      if ((await world.admin('GET', `/v1/logs?workspace_id=${a.workspaceId}`)).data.length > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }, 60_000);
  afterAll(() => world?.close());

  test("an organisation key: the slug answers what the id answers, and that is A's traffic", async () => {
    const a = world.caller('A');
    for (const route of routes) {
      const byId = await world.admin('GET', `${route}workspace_id=${a.workspaceId}`);
      const bySlug = await world.admin('GET', `${route}workspace_id=${a.workspaceSlug}`);
      expect(bySlug, route).toEqual(byId);
    }
    const listed = await world.admin('GET', `/v1/logs?workspace_id=${a.workspaceSlug}`);
    expect(listed.data.map((e: { model_requested: string; workspace_id: string }) => [e.model_requested, e.workspace_id])).toEqual([['names-probe', a.workspaceId]]);
  });

  test("a workspace key: its own slug is its own workspace; another's slug or id is a 403", async () => {
    const a = world.caller('A');
    const b = world.caller('B');
    for (const route of routes) {
      const own = await world.call(a, 'GET', `${route}workspace_id=${a.workspaceSlug}`);
      const plain = await world.call(a, 'GET', route);
      expect(own.status, route).toBe(200);
      expect(own.body, route).toEqual(plain.body);
      for (const other of [b.workspaceSlug, b.workspaceId, 'no-such-workspace']) {
        const refused = await world.call(a, 'GET', `${route}workspace_id=${other}`);
        expect([refused.status, refused.body?.error?.param], `${route} ${other}`).toEqual([403, 'workspace_id']);
      }
    }
  });
});
