import * as v from 'valibot';
import { type GatewayPlugin, parseOptions, plainObject, type PluginAPI, type RequestContext, type Target, routeApi } from '../../../sdk/index.js';
import { sha256 } from '../key.js';
import type { CacheCandidate, CacheLookup, CacheMode } from '../types.js';
import { rateLimitedWarning } from '../warn.js';
import { cosine, semanticInput, unitVector, type SemanticInput } from './text.js';

export const PLUGIN_NAME = 'cache-semantic';

export const DEFAULT_THRESHOLD = 0.95;
export const DEFAULT_MAX_CANDIDATES = 32;
/** The embedding model when the options name none: OpenAI's small one, which OpenAI-compatible servers often serve too. */
export const DEFAULT_EMBEDDING_MODEL = 'text-embedding-3-small';

/** How many candidates above the threshold are tried, best first, when the best one's answer is gone. */
const MAX_TRIES = 3;

const OptionsSchema = v.strictObject({
  /**
   * Where embeddings come from: a target (any provider with an embeddings adapter, or a `@slug`) and the embedding
   * model. Without a target, each request's own target embeds its text (so the default server needs no settings).
   */
  embedding: v.optional(
    v.strictObject({
      target: v.optional(
        v.pipe(
          plainObject('must be a target object, e.g. {"provider":"openai","api_key":"sk-…"}'),
          v.check((t) => typeof t.provider === 'string' || typeof t.virtual_key === 'string', 'needs a provider (or a virtual_key)'),
        ),
      ),
      model: v.optional(v.pipe(v.string(), v.minLength(1, 'names the embedding model')), DEFAULT_EMBEDDING_MODEL),
    }),
    {},
  ),
  /** Cosine similarity at or above which a stored answer is a hit. */
  threshold: v.optional(v.pipe(v.number(), v.minValue(0, 'must be between 0 and 1'), v.maxValue(1, 'must be between 0 and 1')), DEFAULT_THRESHOLD),
  /** Candidates kept (and scanned) per scope: the newest N answers with the same exact-match parameters. */
  maxCandidates: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1000)), DEFAULT_MAX_CANDIDATES),
  /** Characters of text embedded at most. */
  maxInputChars: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1)), 8192),
  /** Longest wait for an embedding before the lookup is a miss, in ms. */
  timeoutMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1)), 10_000),
  /** At most one "embedding failed" warning per this many ms. */
  warnIntervalMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0)), 60_000),
});

export type SemanticCacheOptions = v.InferInput<typeof OptionsSchema>;

/** What the semantic mode keeps between lookup and save. */
interface Scratch {
  input: SemanticInput | null;
  scope: string | null;
  /** Embedding of the text; undefined when not computed yet (a force refresh skips the lookup). */
  vector: Float32Array | null | undefined;
}

/**
 * Registers cache mode `semantic` (`cache: { "mode": "semantic" }`). A
 * lookup is the exact match first; then the request's text (see
 * `semanticInput`) is embedded through the gateway's own transport (an
 * internal, logged `embeddings` request to the configured target, else to the
 * request's own target with its own credentials), and the
 * newest `maxCandidates` answers of the same scope (partition + exact-match
 * parameters) are compared by cosine similarity; the best at or above
 * `threshold` is a hit. An embedding that fails or times out is a miss.
 * Saving stores the answer by its exact key and its vector in the scope.
 */
export function cacheSemantic(options: SemanticCacheOptions = {}): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, options);
  const configured = opts.embedding.target;
  const target = configured === undefined ? null : (Object.freeze({ ...configured }) as Target);
  return {
    name: PLUGIN_NAME,
    state: [
      { name: 'vectors', scope: 'workspace', keyedBy: "Prompt embeddings and their answers, under the cache plugin's partition (workspace, resolved target, namespace)." },
    ],
    apply(api) {
      // Registering the mode is all it costs at boot; a request pays only when its config asks for `semantic`.
      const provider = target?.provider;
      if (typeof provider === 'string' && !provider.startsWith('@')) {
        api.onReady(() => {
          if (!api.providers.has(provider)) throw new Error(`${PLUGIN_NAME}: embedding.target names provider "${provider}", which is not loaded`);
        });
      }
      api.cacheModes.add('semantic', semanticMode(api, target, opts));
    },
  };
}

/**
 * A request's own target as an embedding target: the same provider, credentials, host and routing, without
 * `override_params` at any depth (they are laid over the chat body: an overridden chat model would replace the
 * embedding model). Kept per target object, since configs are parsed once and reused.
 */
const embeddingTargets = new WeakMap<Target, Target>();
export function embeddingTargetOf(target: Target): Target {
  let out = embeddingTargets.get(target);
  if (out === undefined) {
    const { override_params: _overrides, targets, ...rest } = target;
    out = Array.isArray(targets) ? { ...rest, targets: targets.map(embeddingTargetOf) } : rest;
    embeddingTargets.set(target, out);
  }
  return out;
}

function semanticMode(api: PluginAPI, configured: Target | null, opts: v.InferOutput<typeof OptionsSchema>): CacheMode {
  const warn = rateLimitedWarning(api.logger, 'semantic cache: embedding failed; the lookup is a miss', opts.warnIntervalMs, Date.now);

  const embed = async (ctx: RequestContext, text: string): Promise<Float32Array | null> => {
    const target = configured ?? (ctx.target === null ? null : embeddingTargetOf(ctx.target));
    if (target === null) return null;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), opts.timeoutMs);
      timer.unref();
    });
    try {
      const call = api.internalRequest({ route: 'embeddings', target, body: { model: opts.embedding.model, input: text }, parent: ctx }).then((res) => {
        if (res.status < 200 || res.status >= 300) throw new Error(`embedding target answered ${res.status}`);
        const data = (res.body as { data?: Array<{ embedding?: unknown }> } | null)?.data;
        const vector = unitVector(Array.isArray(data) ? data[0]?.embedding : undefined);
        if (vector === null) throw new Error('embedding answer has no usable vector');
        return vector;
      });
      const vector = await Promise.race([call, timeout]);
      if (vector === null) {
        call.catch(() => undefined);
        throw new Error(`no embedding within ${opts.timeoutMs} ms`);
      }
      return vector;
    } catch (err) {
      warn(err);
      return null;
    } finally {
      clearTimeout(timer);
    }
  };

  const scratchOf = (req: CacheLookup): Scratch => {
    if (req.scratch !== null && req.scratch !== undefined) return req.scratch as Scratch;
    const input = semanticInput(routeApi(req.ctx.route!), req.ctx.body, opts.maxInputChars);
    const scratch: Scratch = { input, scope: input === null ? null : sha256(`semantic\n${req.partition}\n${input.params}`), vector: undefined };
    req.scratch = scratch;
    return scratch;
  };

  return {
    async lookup(req) {
      const exact = await req.store.get(req.key);
      if (exact !== null) {
        const response = req.serve(exact);
        if (response !== null) return { response, answer: exact, status: 'HIT' };
      }
      const s = scratchOf(req);
      if (s.input === null || s.scope === null) return null;
      s.vector = await embed(req.ctx, s.input.text);
      if (s.vector === null) return null;
      const scored: Array<{ c: CacheCandidate; score: number }> = [];
      for (const c of await req.store.candidates(s.scope, opts.maxCandidates)) {
        if (c.expiresAt <= req.now || c.key === req.key) continue;
        const score = cosine(s.vector, c.vector);
        if (score >= opts.threshold) scored.push({ c, score });
      }
      scored.sort((a, b) => b.score - a.score);
      for (let i = 0; i < scored.length && i < MAX_TRIES; i++) {
        const answer = await req.store.get(scored[i]!.c.key);
        if (answer === null) continue;
        const response = req.serve(answer);
        if (response !== null) return { response, answer, status: 'SEMANTIC HIT' };
      }
      return null;
    },
    async save(req, answer, ttlMs) {
      await req.store.set(req.key, answer, ttlMs);
      const s = scratchOf(req);
      if (s.input === null || s.scope === null) return;
      if (s.vector === undefined) s.vector = await embed(req.ctx, s.input.text);
      if (s.vector === null) return;
      await req.store.addCandidate(s.scope, { key: req.key, vector: s.vector, createdAt: answer.createdAt, expiresAt: answer.expiresAt }, opts.maxCandidates, ttlMs);
    },
  };
}

export default cacheSemantic;
