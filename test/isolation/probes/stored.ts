import type { Probe } from '../probe.js';
import { chat, origin, perTenant, type Answer, type Caller, type Tenant, type World } from '../world.js';

/** A request to `@main` named the two ways a request names a slug: in a config, and in `x-gateway-provider`. */
async function viaMain(world: World, who: Caller) {
  const byConfig = await chat(world, who, { provider: '@main' }, 'hello', { body: { model: 'slugs-probe' } });
  const byHeader = await world.call(who, 'POST', '/v1/chat/completions', { model: 'slugs-probe', messages: [{ role: 'user', content: 'hello' }] }, { 'x-gateway-provider': '@main' });
  return { byConfig, byHeader };
}

/** What a chat answer says, without anything of one world: who answered it, and with which model. */
const answered = (r: Answer) => ({ status: r.status, answer: origin(r), model: r.body?.model ?? null });

/** Each tenant's own words: what its saved config, prompt and guardrail hold under the shared names. */
const WORD: Record<Tenant, string> = { A: 'teal', B: 'plum' };

/** A saved config `probe-config` in each workspace: A's goes to the shared deployment, B's to its own, each with its own model. */
const savedConfig = perTenant((world, who) =>
  world.admin('POST', '/v1/configs', {
    workspace_id: who.workspaceId,
    name: 'probe config',
    slug: 'probe-config',
    config: { provider: who.tenant === 'A' ? '@shared' : '@main', override_params: { model: `config-${WORD[who.tenant]}` } },
  }),
);

/** A prompt `probe-prompt` in each workspace, to its own `@main`, whose template has the tenant's word and model. */
const storedPrompt = perTenant((world, who) =>
  world.admin('POST', '/v1/prompts', {
    workspace_id: who.workspaceId,
    name: 'probe prompt',
    slug: 'probe-prompt',
    provider: '@main',
    template: { model: `prompt-${WORD[who.tenant]}`, messages: [{ role: 'user', content: `Say ${WORD[who.tenant]} to {{name}}` }] },
  }),
);

/** `probe-prompt` called both ways: on its own route, and as a chat request's `prompt_id`. */
async function prompted(world: World, who: Caller) {
  const r = await world.call(who, 'POST', '/v1/prompts/probe-prompt/completions', { variables: { name: 'Ann' } });
  // The route answers an envelope: the chat completion is its `body`.
  const route = answered({ ...r, body: r.body?.body ?? r.body });
  // No `model` in the body, which would override the template's (so not through `chat`, which sends one).
  const byConfig = await world.call(who, 'POST', '/v1/chat/completions', { messages: [], variables: { name: 'Ann' } }, { 'x-gateway-config': JSON.stringify({ prompt_id: 'probe-prompt' }) });
  return { route, byConfig: answered(byConfig) };
}

/** A guardrail `probe-guard` in each workspace that denies the tenant's own word. */
const storedGuardrail = perTenant((world, who) =>
  world.admin('POST', '/v1/guardrails', { workspace_id: who.workspaceId, name: 'probe guard', slug: 'probe-guard', deny: true, 'default.contains': { words: [WORD[who.tenant]], operator: 'none' } }),
);

/** One config text for both workspaces (so its parsed form is one cache entry), naming the guardrail by slug. */
const guarded = { provider: '@main', input_guardrails: ['probe-guard'] };

/** A guardrail's verdict on one text, without the guardrail's id (the hook's id in `hook_results`). */
async function verdict(world: World, who: Caller, text: string) {
  const r = await chat(world, who, guarded, text, { body: { model: 'guardrails-probe' } });
  const checks = r.body?.hook_results?.before_request_hooks?.[0]?.checks ?? [];
  return { status: r.status, code: r.body?.error?.code ?? null, checks: checks.map((c: { id: string; verdict: boolean }) => [c.id, c.verdict]) };
}

/**
 * What a workspace stores and the request path reads by the name the workspace chose (a provider
 * slug, a saved config's slug, a prompt's, a guardrail's) resolves in the workspace the request acts
 * in: two workspaces with the same names each get their own, though A's use of a name cached it.
 */
export const STORED_PROBES: readonly Probe[] = [
  {
    title: "A's traffic through @main caches A's slug: B's @main, by config and by header, still reaches B's deployment",
    covers: ['provider-registry:slugs'],
    async dirty(world, a) {
      const seen = await viaMain(world, a);
      if (seen.byConfig.status !== 200 || seen.byHeader.status !== 200) throw new Error(`slugs probe: A's requests answered ${seen.byConfig.text} ${seen.byHeader.text}`);
      return {};
    },
    async observe(world, who) {
      const { byConfig, byHeader } = await viaMain(world, who);
      return { byConfig: origin(byConfig), byHeader: origin(byHeader) };
    },
  },
  {
    title: "both workspaces save `probe-config`, and A uses its own: B's `x-gateway-config: probe-config` is still B's",
    covers: ['config:saved-configs'],
    async dirty(world, a) {
      await savedConfig(world, world.caller('B'));
      await savedConfig(world, a);
      const r = await world.call(a, 'POST', '/v1/chat/completions', { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }] }, { 'x-gateway-config': 'probe-config' });
      if (r.status !== 200) throw new Error(`saved configs probe: A's request answered ${r.status} ${r.text}`);
      return {};
    },
    async observe(world, who) {
      await savedConfig(world, who);
      return answered(await world.call(who, 'POST', '/v1/chat/completions', { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }] }, { 'x-gateway-config': 'probe-config' }));
    },
  },
  {
    title: "both workspaces store `probe-prompt`, and A calls its own: B calling `probe-prompt` (its route, or `prompt_id`) renders B's template",
    covers: ['prompts:releases'],
    async dirty(world, a) {
      await storedPrompt(world, world.caller('B'));
      await storedPrompt(world, a);
      const seen = await prompted(world, a);
      if (seen.route.status !== 200 || seen.byConfig.status !== 200) throw new Error(`prompts probe: A's requests answered ${JSON.stringify(seen)}`);
      return {};
    },
    async observe(world, who) {
      await storedPrompt(world, who);
      return prompted(world, who);
    },
  },
  {
    title: "both workspaces store `probe-guard`, A's denying `teal`: B's config naming `probe-guard` gets B's verdicts",
    covers: ['guardrails:stored-guardrails'],
    async dirty(world, a) {
      await storedGuardrail(world, world.caller('B'));
      await storedGuardrail(world, a);
      const r = await chat(world, a, guarded, `say ${WORD.A}`, { body: { model: 'guardrails-probe' } });
      if (r.status !== 446) throw new Error(`guardrails probe: A's request answered ${r.status} ${r.text}`);
      return {};
    },
    async observe(world, who) {
      await storedGuardrail(world, who);
      return { teal: await verdict(world, who, `say ${WORD.A}`), plum: await verdict(world, who, `say ${WORD.B}`) };
    },
  },
];
