import type { Probe } from '../probe.js';
import { chat, origin } from '../world.js';

const lb = (slug: string) => ({ strategy: { mode: 'loadbalance' }, targets: [{ provider: slug }] });

/** The request B (or A) makes: 5,000 tokens of output through a loadbalance over its own `@main`. */
const ask = (model: string) => ({ body: { model, max_tokens: 5000 } });

/** What the routing plugin learns of a target stays with the workspace whose traffic taught it. */
export const ROUTING_PROBES: readonly Probe[] = [
  {
    title: "A's deployment reports 1,000 tokens left: B's own @main still takes 5,000",
    covers: ['routing:target-state'],
    async dirty(world, a) {
      const r = await chat(world, a, lb('@main'), 'quota:1000', { body: { model: 'routing-headroom' } });
      if (r.status !== 200) throw new Error(`routing probe: A's request answered ${r.status} ${r.text}`);
      return {};
    },
    async observe(world, who) {
      const r = await chat(world, who, lb('@main'), 'hello', ask('routing-headroom'));
      return { answer: origin(r), retryAfter: r.headers.get('retry-after') };
    },
  },
  {
    title: "A's deployment answers 429 with retry-after: 3600: B's own @main is still called",
    covers: ['routing:target-state'],
    async dirty(world, a) {
      const r = await chat(world, a, lb('@main'), 'busy:3600', { body: { model: 'routing-retry-after' } });
      if (r.status !== 429) throw new Error(`routing probe: A's request answered ${r.status} ${r.text}`);
      return {};
    },
    async observe(world, who) {
      const r = await chat(world, who, lb('@main'), 'hello', { body: { model: 'routing-retry-after' } });
      return { answer: origin(r), retryAfter: r.headers.get('retry-after') };
    },
  },
];
