import type { Probe } from '../probe.js';

const viaMain = { 'x-gateway-config': JSON.stringify({ provider: '@main' }) };

/** Stored responses are the workspace's the request acted in: another's id is unknown, and so is its conversation. */
export const RESPONSES_PROBES: readonly Probe[] = [
  {
    title: "A stores a response: B cannot read it, delete it, list its input or continue A's conversation",
    covers: ['responses:stored-responses'],
    async dirty(world, a) {
      const r = await world.call(a, 'POST', '/v1/responses', { model: 'responses-probe', input: 'remember the word teal' }, viaMain);
      if (r.status !== 200 || typeof r.body?.id !== 'string') throw new Error(`responses probe: A's request answered ${r.status} ${r.text}`);
      return { id: r.body.id };
    },
    async observe(world, who, clue) {
      const get = await world.call(who, 'GET', `/v1/responses/${clue.id}`);
      const items = await world.call(who, 'GET', `/v1/responses/${clue.id}/input_items`);
      const next = await world.call(who, 'POST', '/v1/responses', { model: 'responses-probe', input: 'which word?', previous_response_id: clue.id }, viaMain);
      return { get: get.status, items: items.status, next: [next.status, next.body?.error?.param ?? null] };
    },
  },
];
