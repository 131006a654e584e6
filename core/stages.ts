/**
 * Named stages: where a tap or an interceptor sits relative to the others.
 * Lower runs first (hooks) or wraps further out (interceptors); taps of one
 * stage run in the order their plugins were applied. Plugins pick a name
 * here instead of a bare number, so the order of the bundled plugins reads
 * as a sentence and a third-party plugin can place itself between two of
 * them (`STAGES.beforeRequest.GUARD + 1`).
 */
export const STAGES = Object.freeze({
  request: Object.freeze({
    /** Trace and span ids are set (or taken from the client) before anything else reads them. */
    TRACE: -100,
    /** W3C trace context, which builds on the trace ids. */
    TRACE_CONTEXT: -90,
    DEFAULT: 0,
  }),
  auth: Object.freeze({
    /** Keys held in memory answer first: no I/O. */
    MEMORY_KEYS: 0,
    /** Keys and tokens that need a lookup (stored keys, JWTs). */
    STORED_KEYS: 100,
    /** A signed-in person's session cookie, when the request carries no key at all. */
    SESSIONS: 200,
    /**
     * The core's refusal (401), after every source was tried and none accepted the request. Only on
     * routes some authenticator serves: a build without auth is open.
     */
    REFUSE: 1_000_000,
  }),
  resolveProvider: Object.freeze({
    /**
     * A route that names its own target (a stored prompt's provider, on the prompt completions
     * route): before any config or header, which that route does not read.
     */
    ROUTE: -200,
    /** A config (header or server default) wins over plain headers. */
    CONFIG: -100,
    /** `x-gateway-provider` and its companion headers. */
    HEADERS: 0,
    /**
     * The core's default, when no tap chose: the one provider of a build with one provider and no
     * resolver plugin, else a 400 `provider_required` (a 404 under the generic proxy's prefix).
     */
    DEFAULT_TARGET: 1_000_000,
  }),
  resolveTarget: Object.freeze({
    /** Provider slugs and virtual keys become a provider with its credentials. */
    REFERENCES: 0,
  }),
  beforeRequest: Object.freeze({
    /**
     * Build the body the rest of the request reads (a stored prompt rendered with the request's
     * variables): before validation, so the body checked, limited, guarded and cached is the one
     * sent. A tap here may also replace `ctx.target` (the pipeline runs `ctx.target` after this hook).
     */
    PREPARE: -125,
    /** Refuse a malformed body before anything reads it. */
    VALIDATE: -100,
    /**
     * Rate limits and budgets: after validation (an invalid request counts against nothing) and
     * before the input checks and the cache (a request refused by a guardrail, or answered from the
     * cache, still counts as a request).
     */
    LIMIT: -75,
    /** Input checks: a refused request is never answered, not even from a store. */
    GUARD: -50,
    DEFAULT: 0,
    /** Answer without calling upstream (a cache hit): last, once every check passed. */
    ANSWER: 100,
  }),
  afterResponse: Object.freeze({
    /** Output checks, on the answer as the provider gave it. */
    GUARD: 0,
    DEFAULT: 0,
    /** Keep the answer (a cache store), after the checks passed it. */
    STORE: 100,
    /**
     * Give the answer the shape its route promises (a stored prompt's `{status, headers, body}`
     * envelope): after the store kept the provider's answer, before the observers see the bytes.
     */
    SHAPE: 500,
    /**
     * Give an error answer the envelope its front door promises (Anthropic's on the Messages
     * route): after every tap that could still produce or replace an error, just before the observers.
     */
    ERROR_FORMAT: 900,
    /** See the bytes exactly as the client gets them: after every tap that could change them. */
    OBSERVE: 1000,
  }),
  log: Object.freeze({
    DEFAULT: 0,
    /** Settle what a request reserved (rate limits, budgets) to its real usage: after the log sinks computed its summary. */
    SETTLE: 100,
  }),
  /** Interceptors around each leaf call, outermost first. */
  interceptor: Object.freeze({
    /** Repeats the attempts inside it. */
    RETRY: -30,
    /** Counts each attempt and refuses while open; a timeout inside it counts as a failure. */
    BREAKER: -20,
    /** One clock per attempt. */
    TIMEOUT: -10,
    /** Anything else: inside the resilience chain, so it runs once per attempt. */
    DEFAULT: 0,
  }),
});

/** The hooks and the interceptor chain, as named in {@link STAGES}. */
export type StageGroup = keyof typeof STAGES;
