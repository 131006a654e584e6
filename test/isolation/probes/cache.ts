import type { Probe } from '../probe.js';
import { chat, origin, type Answer, type Caller, type World } from '../world.js';

const seen = (r: Answer) => ({ answer: origin(r), cache: r.headers.get('x-gateway-cache-status') });

/**
 * An answer is kept after it went out: A asks again until its own cache answers (`status`), so B
 * looks only once A's entry is there to be leaked. `again(i)` is the text of the i-th try (for the
 * semantic mode, always another text, so no try is answered by an earlier try's exact entry).
 */
async function kept(world: World, a: Caller, config: Record<string, unknown>, again: (i: number) => string, model: string, status: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if ((await chat(world, a, config, again(i), { body: { model } })).headers.get('x-gateway-cache-status') === status) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`cache probe: A's own ${status} never came`);
}

/** The i-th order (of 5,040) of the words of "what is the capital city of France"; B's text is the last one. */
function reordered(i: number): string {
  const left = ['what', 'is', 'the', 'capital', 'city', 'of', 'France'];
  const out: string[] = [];
  for (let n = left.length; n > 0; n--) {
    out.push(left.splice(i % n, 1)[0]!);
    i = Math.floor(i / n);
  }
  return out.join(' ');
}

/**
 * The same request body to a slug both workspaces named `@main`: each workspace's cache holds its
 * own deployment's answers, for an organisation-level key acting in each as for their own keys.
 */
export const CACHE_PROBES: readonly Probe[] = [
  {
    title: 'the same body to @main: B is never answered from what A cached',
    covers: ['cache:entries', 'cache-simple:entries', 'cache-memory:entries', 'cache-redis:entries'],
    async dirty(world, a) {
      const config = { provider: '@main', cache: { mode: 'simple' } };
      const r = await chat(world, a, config, 'cache probe: what is two and two?', { body: { model: 'cache-probe' } });
      if (r.status !== 200) throw new Error(`cache probe: A's request answered ${r.status} ${r.text}`);
      await kept(world, a, config, () => 'cache probe: what is two and two?', 'cache-probe', 'HIT');
      return {};
    },
    async observe(world, who) {
      return seen(await chat(world, who, { provider: '@main', cache: { mode: 'simple' } }, 'cache probe: what is two and two?', { body: { model: 'cache-probe' } }));
    },
  },
  {
    title: "a prompt with A's words in another order: B is never answered from A's semantic entries",
    covers: ['cache-semantic:vectors', 'cache-memory:entries', 'cache-redis:entries'],
    async dirty(world, a) {
      const config = { provider: '@main', cache: { mode: 'semantic' } };
      const r = await chat(world, a, config, 'What is the capital city of France?', { body: { model: 'semantic-probe' } });
      if (r.status !== 200) throw new Error(`semantic cache probe: A's request answered ${r.status} ${r.text}`);
      await kept(world, a, config, reordered, 'semantic-probe', 'SEMANTIC HIT');
      return {};
    },
    async observe(world, who) {
      // The same words, so the same vector, but another text: only the semantic step can match it.
      return seen(await chat(world, who, { provider: '@main', cache: { mode: 'semantic' } }, reordered(5039), { body: { model: 'semantic-probe' } }));
    },
  },
];
