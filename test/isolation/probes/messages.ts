import type { Probe } from '../probe.js';

const viaMain = { 'x-gateway-config': JSON.stringify({ provider: '@main' }), 'anthropic-beta': 'message-threads-2026-08-12' };

/** Threads on the Messages door are the workspace's the request acted in: another's message id continues nothing. */
export const MESSAGES_PROBES: readonly Probe[] = [
  {
    title: "A starts a thread on the Messages door: B cannot continue it (A's message id is unknown to B)",
    covers: ['messages:message-threads'],
    async dirty(world, a) {
      const r = await world.call(a, 'POST', '/v1/messages', { model: 'threads-probe', max_tokens: 16, messages: [{ role: 'user', content: 'remember the word teal' }], thread: { type: 'create' } }, viaMain);
      if (r.status !== 200 || typeof r.body?.id !== 'string') throw new Error(`messages probe: A's request answered ${r.status} ${r.text}`);
      return { id: r.body.id };
    },
    async observe(world, who, clue) {
      const next = await world.call(who, 'POST', '/v1/messages', { model: 'threads-probe', max_tokens: 16, messages: [{ role: 'user', content: 'which word?' }], thread: { type: 'continue', previous_message_id: clue.id } }, viaMain);
      return { next: [next.status, next.body?.error?.details?.error_code ?? null] };
    },
  },
];
