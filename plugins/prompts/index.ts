import * as v from 'valibot';
import {
  addShapedRoutes,
  CONFIG_SOURCE,
  fieldSchema as f,
  GatewayError,
  jsonResponse,
  migrate,
  parseOptions,
  parsePromptRef,
  STAGES,
  type ConfigSource,
  type GatewayPlugin,
  type PromptRelease,
  type RequestContext,
  type RouteDefinition,
  type RouteDoc,
  type Target,
  type TargetField, stateKey } from '../../sdk/index.js';
import { IDENTITY, registerAdminRoutes, type Identity } from '../../sdk/admin/index.js';
import { chatBody, variablesOf } from './body.js';
import { compiledKey, compilePrompt, promptError, renderPrompt, type CompiledPrompt } from './engine.js';
import { envelope, wantsEnvelope } from './envelope.js';
import { STORED_PROMPTS_MIGRATIONS, STORED_PROMPTS_NAMESPACE } from './store/migrations.js';
import { partialRoutes } from './store/routes/partials.js';
import { promptRoutes } from './store/routes/prompts.js';
import { PromptStore } from './store/service.js';

export const PLUGIN_NAME = 'prompts';
export { checkTemplate, compilePrompt, formatValue, renderPrompt } from './engine.js';
export { chatBody } from './body.js';

/** The chat route's name: prompt completions are chat completions to every other plugin. */
const CHAT = 'chat.completions';

/**
 * `prompt_id`: a stored prompt for a chat request, read at the top level of a
 * config. It brings its own target (the prompt's provider, virtual key or
 * saved config) when the config names none.
 */
export const PROMPT_FIELDS: Readonly<Record<string, TargetField>> = Object.freeze({
  prompt_id: { schema: f.string(), combination: ['prompt_id'], providesTarget: true },
});

const OptionsSchema = v.strictObject({
  /** Prompt versions kept parsed (the least recently used is dropped first). Default 1000. */
  maxCompiled: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1)), 1000),
  /** Longest rendered prompt, in characters, all message texts together. Default: the gateway's `maxBodyBytes`. */
  maxRenderedChars: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
});

export type PromptsOptions = v.InferInput<typeof OptionsSchema>;

/**
 * The body of the prompt routes, for the API reference: `variables` and `messages` are checked by
 * hand where they are read (`variablesOf`, `chatBody`), every other field is a chat field laid over the
 * rendered template and checked with it (the `validation` plugin sees the rendered body).
 */
const PromptRequestSchema = v.looseObject({
  variables: v.pipe(v.record(v.string(), v.unknown()), v.description("The template's variables, by name.")),
  messages: v.optional(v.pipe(v.array(v.looseObject({ role: v.string() })), v.description("Messages added after the template's, never rendered."))),
});

const PROMPT_PARAMS = { promptId: 'The prompt\'s id or slug, optionally followed by `@latest` or `@<version>` (default: the published version).' };

const COMPLETIONS_DOC: RouteDoc = {
  summary: 'Run a stored prompt',
  description:
    'Renders the prompt with `variables` and sends it where it says (its provider, slug or saved config), with the body\'s other chat fields over the saved ones. ' +
    'The answer is `{status, headers, body}` around the provider\'s, or the chat stream with `stream: true`.',
  tags: ['Prompts'],
  scope: 'completions.write',
  params: PROMPT_PARAMS,
  body: PromptRequestSchema,
  responseTypes: ['application/json', 'text/event-stream'],
};

const RENDER_DOC: RouteDoc = {
  summary: 'Render a stored prompt',
  description: 'The chat body a completion of the prompt would send, with the versions it used; nothing is sent.',
  tags: ['Prompts'],
  scope: 'prompts.read',
  params: PROMPT_PARAMS,
  body: PromptRequestSchema,
};

/** What a request that uses a stored prompt carries, under {@link PREPARED}. */
interface Prepared {
  release: PromptRelease;
  compiled: CompiledPrompt;
  /** `route`: the prompt completions route (its answer gets the envelope); `config`: a chat request whose config names the prompt. */
  via: 'route' | 'config';
}
const PREPARED = stateKey<Prepared>(PLUGIN_NAME);

/**
 * Stored prompts (docs/prompts.md): their tables and admin routes (prompts,
 * partials, versions, publishing; `plugins/prompts/store/`), and on the request path:
 * - `POST /v1/prompts/{promptId}/completions` (`@latest`, `@N` or the
 *   published version): the prompt's template rendered with the body's
 *   `variables`, the body's other fields over it, sent where the prompt
 *   says; answered with `{status, headers, body}`, or streamed as chat;
 * - `POST /v1/prompts/{promptId}/render`: the chat body that would be sent;
 * - `prompt_id` in a chat request's config: the same rendering on the chat route.
 *
 * The rendering happens once per request, at `STAGES.beforeRequest.PREPARE`,
 * before validation, limits, guardrails and the cache, which all see the
 * rendered body; to every other plugin a prompt completion is a chat
 * completion (its route, `prompts.completions`, speaks the `chat.completions` API: `RouteDefinition.api`). The template language
 * is Mustache without HTML escaping. Prompts are kept per workspace on the
 * control plane's store (`IDENTITY`): without the control plane the admin
 * routes are not served and the prompt routes answer 503. A version may send
 * its requests through a saved config (`CONFIG_SOURCE`).
 */
export function prompts(options: PromptsOptions = {}): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, options);
  return {
    name: PLUGIN_NAME,
    uses: [IDENTITY, CONFIG_SOURCE],
    targetFields: PROMPT_FIELDS,
    errorCodes: promptError.codes,
    state: [
      { name: 'releases', scope: 'workspace', keyedBy: 'Stored prompts and partials as the request path reads them: keyed by the workspace the request acts in and the prompt or partial named.' },
      { name: 'compiled', scope: 'organisation', keyedBy: "Templates compiled by prompt id and version (ids are random and each a workspace's): the same text compiles the same for anyone." },
    ],
    apply(api) {
      const base = api.options.basePath;
      const maxChars = opts.maxRenderedChars ?? api.options.maxBodyBytes;
      addShapedRoutes(api, [CHAT]);
      let identity: Identity | undefined;
      let store: PromptStore | undefined;
      let configs: ConfigSource | undefined;
      // The partials' routes first: `/prompts/partials/:id` and `/prompts/:id/versions` have as many segments.
      registerAdminRoutes(api, [...partialRoutes, ...promptRoutes], () => store!, () => identity);
      // Its own name (route names are unique), speaking the chat API: providers, validation, limits, guardrails and the cache treat it as chat.
      const completions: RouteDefinition = { name: 'prompts.completions', api: CHAT, method: 'POST', path: `${base}/prompts/:promptId/completions`, kind: 'provider', body: 'json', doc: COMPLETIONS_DOC };
      api.routes.add(completions);

      api.onReady(async () => {
        configs = api.tryResolve(CONFIG_SOURCE);
        identity = api.tryResolve(IDENTITY);
        if (identity === undefined) return;
        // Before anything reads the tables. The control plane opens its store in its own onReady: it is listed first.
        const db = identity.sql();
        if (db == null) throw new Error(`${PLUGIN_NAME}: list it after control-plane, whose store keeps stored prompts`);
        await migrate(db, STORED_PROMPTS_NAMESPACE, STORED_PROMPTS_MIGRATIONS);
        store = new PromptStore(identity, () => configs);
      });

      // Versions never change once saved, so a version (with its partials' versions) is parsed once, whichever cache fill brought it.
      const compiledByKey = new Map<string, CompiledPrompt>();
      const compiledOf = (release: PromptRelease): CompiledPrompt => {
        const key = compiledKey(release);
        let compiled = compiledByKey.get(key);
        if (compiled !== undefined) {
          compiledByKey.delete(key);
          compiledByKey.set(key, compiled);
          return compiled;
        }
        compiled = compilePrompt(release, key);
        if (compiledByKey.size >= opts.maxCompiled) compiledByKey.delete(compiledByKey.keys().next().value!);
        compiledByKey.set(key, compiled);
        return compiled;
      };

      /** The prompt `raw` names (`id`, `id@latest`, `id@N`) in the request's workspace, parsed; `param` is where the reference came from. */
      const load = async (ctx: RequestContext, raw: string, param: string, via: Prepared['via']): Promise<Prepared> => {
        if (store === undefined) throw new GatewayError('service_unavailable', 'Stored prompts need the control plane, which is not loaded.');
        const parsed = parsePromptRef(raw);
        if (parsed === null) {
          throw new GatewayError('invalid_request', `"${raw.slice(0, 128)}" is not a prompt reference: use the prompt's id or slug, optionally followed by @latest or @<version number>.`, { param });
        }
        const found = await store.release(ctx, parsed.ref, parsed.selector);
        if ('missing' in found) {
          const ref = parsed.ref.slice(0, 128);
          throw found.missing === 'prompt'
            ? new GatewayError('not_found', `No prompt "${ref}" in this workspace.`, { param })
            : new GatewayError('not_found', `Prompt "${ref}" has no version ${String(parsed.selector)} (its latest is ${found.latestVersion}).`, { param });
        }
        // Known from here, whatever happens next: the log names the prompt and the version of a refused request too.
        ctx.logFields.prompt_id = found.id;
        ctx.logFields.prompt_version = found.version;
        return { release: found, compiled: compiledOf(found), via };
      };

      /** Where the version sends its requests; a saved config is the workspace's, through the control plane's cache. */
      const selectionTargets = new WeakMap<PromptRelease, Target>();
      const targetOf = async (ctx: RequestContext, release: PromptRelease): Promise<Target> => {
        const { provider, virtual_key, config } = release.selection;
        if (config === undefined) {
          let target = selectionTargets.get(release);
          if (target === undefined) {
            target = Object.freeze(provider !== undefined ? { provider } : { virtual_key });
            selectionTargets.set(release, target);
          }
          return target;
        }
        const saved = configs === undefined ? undefined : await configs.find(ctx, config);
        if (saved === undefined) {
          throw new GatewayError('not_found', `Prompt "${release.slug}" version ${release.version} sends its requests through the saved config "${config}", which this workspace no longer has.`, { param: 'config' });
        }
        return saved;
      };

      /** Renders the request's body into the chat body it stands for, once. */
      const render = (ctx: RequestContext, prepared: Prepared): Record<string, unknown> => {
        const body = ctx.body ?? {};
        const variables = variablesOf(body, prepared.via === 'route');
        return chatBody(renderPrompt(prepared.compiled, prepared.release.template, variables, maxChars), body);
      };
      const apply = (ctx: RequestContext, chat: Record<string, unknown>): void => {
        ctx.body = chat;
        ctx.bodyChanged = true;
        ctx.model = typeof chat.model === 'string' ? chat.model : null;
        ctx.stream = chat.stream === true;
      };

      // The prompt completions route names its target itself: the prompt's, whatever config or provider headers say.
      const completionsOnly = (route: RouteDefinition) => route === completions;
      api.hooks.resolveProvider.tapAsync({ name: PLUGIN_NAME, stage: STAGES.resolveProvider.ROUTE, routes: completionsOnly }, (ctx, done) => {
        load(ctx, ctx.params!.promptId!, 'promptId', 'route')
          .then((prepared) => {
            ctx.set(PREPARED, prepared);
            return targetOf(ctx, prepared.release);
          })
          .then((target) => done(null, target), done);
      });

      // A config's prompt_id at the top level; one deeper would mean one body per target, which a request does not have.
      const nested = new WeakMap<Target, boolean>();
      const hasNested = (target: Target): boolean => {
        let found = nested.get(target);
        if (found === undefined) {
          const walk = (t: Target): boolean => (t.targets ?? []).some((child) => child.prompt_id !== undefined || walk(child));
          found = walk(target);
          nested.set(target, found);
        }
        return found;
      };
      // A config that names no provider takes the prompt's target, with the config's settings over it (as a passthrough config over the headers' provider).
      const merged = new WeakMap<Target, WeakMap<Target, Target>>();
      const withPromptTarget = (config: Target, selection: Target): Target => {
        let bySelection = merged.get(config);
        if (bySelection === undefined) merged.set(config, (bySelection = new WeakMap()));
        let target = bySelection.get(selection);
        if (target === undefined) {
          const { prompt_id: _promptId, ...settings } = config;
          target = { ...selection, ...settings };
          bySelection.set(selection, target);
        }
        return target;
      };
      const namesNoTarget = (t: Target) => t.provider === undefined && t.virtual_key === undefined && t.strategy === undefined;

      const fromConfig = async (ctx: RequestContext, target: Target): Promise<void> => {
        const prepared = await load(ctx, target.prompt_id as string, 'prompt_id', 'config');
        ctx.set(PREPARED, prepared);
        apply(ctx, render(ctx, prepared));
        if (namesNoTarget(target)) ctx.target = withPromptTarget(target, await targetOf(ctx, prepared.release));
      };

      api.hooks.beforeRequest.tapAsync({ name: PLUGIN_NAME, stage: STAGES.beforeRequest.PREPARE }, (ctx, done) => {
        const prepared = ctx.get(PREPARED);
        if (prepared !== undefined) {
          // The prompt completions route: loaded with its target; only the rendering is left.
          try {
            apply(ctx, render(ctx, prepared));
          } catch (err) {
            return done(err as Error);
          }
          return done();
        }
        const target = ctx.target;
        // A request without prompt_id pays these few reads and nothing else.
        if (target === null || (target.prompt_id === undefined && target.targets === undefined)) return done();
        if (target.prompt_id === undefined && !hasNested(target)) return done();
        if (hasNested(target)) {
          return done(new GatewayError('invalid_request', 'prompt_id is read at the top level of a config only: one rendered body serves every target of a request.', { param: 'x-gateway-config' }));
        }
        // A route check inside the tap: a config's prompt_id can reach any provider route, and the others are refused here with a reason.
        if (ctx.route!.name !== CHAT) {
          if (!namesNoTarget(target)) return done();
          return done(new GatewayError('invalid_request', `A config with prompt_id and no provider serves ${base}/chat/completions only; it names no provider for ${ctx.method} ${ctx.path}.`, { param: 'x-gateway-config' }));
        }
        fromConfig(ctx, target).then(() => done(), done);
      });

      // The spec's envelope, on the prompt completions route only (the chat route keeps the chat shape); after the cache kept the plain answer.
      api.hooks.afterResponse.tap({ name: PLUGIN_NAME, stage: STAGES.afterResponse.SHAPE, routes: completionsOnly }, (response, ctx) => {
        const prepared = ctx.get(PREPARED);
        if (prepared?.via !== 'route' || !wantsEnvelope(response)) return response;
        return envelope(response);
      });

      api.routes.add({
        name: 'prompts.render',
        method: 'POST',
        path: `${base}/prompts/:promptId/render`,
        kind: 'handler',
        body: 'json',
        scope: 'prompts.read',
        doc: RENDER_DOC,
        async handler(ctx) {
          const prepared = await load(ctx, ctx.params!.promptId!, 'promptId', 'route');
          const { release } = prepared;
          const partials: Record<string, number> = {};
          for (const [name, partial] of release.partials) if (partial !== null) partials[name] = partial.version;
          return jsonResponse(200, {
            object: 'prompt.render',
            prompt_id: release.id,
            slug: release.slug,
            version: release.version,
            published_version: release.publishedVersion,
            latest_version: release.latestVersion,
            ...release.selection,
            partials,
            body: render(ctx, prepared),
          });
        },
      });
    },
  };
}

export default prompts;
