import type { Probe } from '../probe.js';
import { chat, origin } from '../world.js';

/** A request counted by one of the world's organisation-wide policies (world.ts, ORGANISATION_POLICIES). */
const counted = (probe: string, user?: string) => ({ body: { model: 'limits-probe', ...(user === undefined ? {} : { user }) }, headers: { 'x-gateway-metadata': JSON.stringify({ probe }) } });

/**
 * Organisation-wide policies over what each workspace names (an end user, a slug): each workspace
 * spends its own allowance. (A workspace's own policies are its own by id: the authorization
 * matrix shows another workspace cannot reach them.)
 */
export const LIMITS_PROBES: readonly Probe[] = [
  {
    title: "two a day per end user, org-wide: A's `alice` spends hers, B's `alice` still has two",
    covers: ['limits:counters'],
    async dirty(world, a) {
      for (let i = 0; i < 2; i++) {
        const r = await chat(world, a, { provider: '@main' }, 'hello', counted('org-per-user', 'alice'));
        if (r.status !== 200) throw new Error(`limits probe: A's request answered ${r.status} ${r.text}`);
      }
      return {};
    },
    async observe(world, who) {
      const r = await chat(world, who, { provider: '@main' }, 'hello', counted('org-per-user', 'alice'));
      return { answer: origin(r), remaining: r.headers.get('x-ratelimit-remaining-requests') };
    },
  },
  {
    title: "two a day on @main, org-wide: A's @main spends its own, B's @main still has two",
    covers: ['limits:counters'],
    async dirty(world, a) {
      for (let i = 0; i < 2; i++) {
        const r = await chat(world, a, { provider: '@main' }, 'hello', counted('org-main-slug'));
        if (r.status !== 200) throw new Error(`limits probe: A's request answered ${r.status} ${r.text}`);
      }
      return {};
    },
    async observe(world, who) {
      const r = await chat(world, who, { provider: '@main' }, 'hello', counted('org-main-slug'));
      return { answer: origin(r), remaining: r.headers.get('x-ratelimit-remaining-requests') };
    },
  },
];
