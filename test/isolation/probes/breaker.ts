import type { Probe } from '../probe.js';
import { chat, origin } from '../world.js';

const config = { provider: '@shared', cb_config: { failure_threshold: 2, cooldown_interval: 600_000 } };

/**
 * Both workspaces reach one deployment through an organisation-wide integration: A's failing
 * requests open A's circuit, never B's (a workspace cannot take another's traffic down).
 */
export const BREAKER_PROBES: readonly Probe[] = [
  {
    title: "A's requests fail on the shared deployment until A's circuit opens: B's circuit stays closed",
    covers: ['breaker:circuits'],
    async dirty(world, a) {
      for (let i = 0; i < 2; i++) {
        const r = await chat(world, a, config, 'fail', { body: { model: 'breaker-probe' } });
        if (r.status !== 503) throw new Error(`breaker probe: A's failing request answered ${r.status} ${r.text}`);
      }
      return {};
    },
    async observe(world, who) {
      return origin(await chat(world, who, config, 'hello', { body: { model: 'breaker-probe' } }));
    },
  },
];
