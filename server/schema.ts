import * as v from 'valibot';
import { allowEntryProblem, plainObject } from '../core/index.js';

/**
 * One plugin to load: a bundled plugin's name, or a package name or a path
 * (relative to the config file) of an ES module exporting a plugin factory,
 * and the options the factory is called with.
 */
export const PluginEntrySchema = v.strictObject({
  name: v.pipe(v.string(), v.minLength(1)),
  /** The module's export to use instead of its default export (a module may hold several plugins). */
  export: v.optional(v.pipe(v.string(), v.minLength(1))),
  options: v.optional(plainObject()),
});

/** Defaults of the `server` timeouts. */
export const SERVER_TIMEOUTS = Object.freeze({ headersTimeoutMs: 30_000, requestTimeoutMs: 120_000, keepAliveTimeoutMs: 65_000, bodyIdleTimeoutMs: 60_000 });

/**
 * Time limits on receiving a client's request (Node's server timeouts). They
 * cover receiving the request only, never sending the answer, so a long
 * stream is not cut; see docs/configuration.md.
 */
const ServerTimeoutsSchema = v.strictObject({
  /** Time for the request's headers to arrive; then 408. Default 30 000 ms. */
  headersTimeoutMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
  /** Time for the whole request, headers and body, to arrive; then 408. Default 120 000 ms. */
  requestTimeoutMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
  /** How long an idle keep-alive connection stays open. Default 65 000 ms. */
  keepAliveTimeoutMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
  /** Longest pause while a request body arrives; then 408 and the connection closes. Default 60 000 ms. */
  bodyIdleTimeoutMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
});

/** The server config file (`--config FILE` or `GATEWAY_CONFIG`). */
export const ServerConfigSchema = v.strictObject({
  /** Listening port; `PORT` wins over it. Default 8787. */
  port: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(65535))),
  /** Listening address. Default `0.0.0.0`. Without an auth plugin, only a loopback address unless `auth` is `none`. */
  host: v.optional(v.string()),
  /**
   * `none`: serve requests without authentication on purpose. Without it, a
   * config whose plugins authenticate nobody starts only on a loopback
   * address (docs/security.md#authentication-at-start).
   */
  auth: v.optional(v.picklist(['none'])),
  /** Largest request body in bytes. Default 50 MiB. */
  maxBodyBytes: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
  /** Deepest nesting of objects and arrays in a JSON body, config or metadata. Default 100. */
  maxJsonDepth: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1000))),
  upstream: v.optional(
    v.strictObject({
      headersTimeoutMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
      bodyTimeoutMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
      connections: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
    }),
  ),
  /** Where upstream calls may connect (docs/security.md). GATEWAY_ALLOW_HOSTS adds to `allowHosts`; GATEWAY_ALLOW_PRIVATE_HOSTS wins over `allowPrivateHosts`. */
  outbound: v.optional(
    v.strictObject({
      /** Hosts allowed whatever their address: `localhost:11434`, `ollama.lan`, `*.internal.example`, `10.0.0.5:8000`, `10.0.0.0/8`. */
      allowHosts: v.optional(
        v.array(
          v.pipe(
            v.string(),
            v.rawCheck<string>(({ dataset, addIssue }) => {
              const problem = dataset.typed ? allowEntryProblem(dataset.value) : null;
              if (problem !== null) addIssue({ message: `"${dataset.value}" ${problem}` });
            }),
          ),
        ),
      ),
      /** Allow every address, loopback and private ones included. Default false. */
      allowPrivateHosts: v.optional(v.boolean()),
    }),
  ),
  /** Time limits on receiving a client's request (the timeouts above); the headers' limit at most the whole request's. */
  server: v.optional(
    v.pipe(
      ServerTimeoutsSchema,
      v.forward(
        v.check((s) => (s.headersTimeoutMs ?? SERVER_TIMEOUTS.headersTimeoutMs) <= (s.requestTimeoutMs ?? SERVER_TIMEOUTS.requestTimeoutMs), 'must not be more than requestTimeoutMs'),
        ['headersTimeoutMs'],
      ),
    ),
  ),
  /** How long a shutdown waits for in-flight requests and streams. Default 10 000 ms. */
  shutdownTimeoutMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0))),
  /**
   * On SIGTERM, how long the gateway stays in service with `GET /ready` answering 503 before its listener closes, so
   * an orchestrator takes it out of rotation first (Kubernetes: about its readiness probe's period times its failure
   * threshold). Default 0: the shutdown starts at once.
   */
  readinessDrainMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0))),
  /** Provider slugs and virtual keys: slug → `{ provider, api_key, … }` (read by the `provider-registry` plugin). */
  providers: v.optional(v.record(v.string(), plainObject())),
  /** Guardrails by id, for string items in `input_guardrails` / `output_guardrails` (read by the `guardrails` plugin). */
  guardrails: v.optional(v.record(v.string(), plainObject())),
  /** Saved configs by id, for `x-gateway-config: <id>` (read by the `config` plugin). */
  configs: v.optional(v.record(v.string(), plainObject())),
  /** Config for requests that send none: a saved config id or an inline config. */
  defaultConfig: v.optional(v.union([v.string(), plainObject()])),
  /** Plugins, applied in this order. */
  plugins: v.array(PluginEntrySchema),
});

export type ServerConfig = v.InferOutput<typeof ServerConfigSchema>;
export type PluginEntry = v.InferOutput<typeof PluginEntrySchema>;

/**
 * A `plugins` entry of a config that extends another: a change to the base's
 * list, the plugin known by `name` and `export`. Without `remove`, the entry
 * replaces the base's entry of that plugin, or adds the plugin; `before` /
 * `after` name the plugin to put it next to. See server/config-extends.ts.
 */
export const PluginChangeSchema = v.pipe(
  v.strictObject({
    ...PluginEntrySchema.entries,
    /** Take the plugin out of the base's list. */
    remove: v.optional(v.literal(true, 'must be true (leave the entry out to keep the plugin as the base has it)')),
    /** Put the plugin just before this one (its name, or `name#export`). */
    before: v.optional(v.pipe(v.string(), v.minLength(1))),
    /** Put the plugin just after this one (its name, or `name#export`). */
    after: v.optional(v.pipe(v.string(), v.minLength(1))),
  }),
  v.check((c) => c.before === undefined || c.after === undefined, 'give before or after, not both'),
  v.check((c) => c.remove === undefined || (c.options === undefined && c.before === undefined && c.after === undefined), 'an entry that removes a plugin takes only its name (and export)'),
);

/**
 * A server config file with `extends`: the fields of {@link ServerConfigSchema},
 * each optional (the base has the rest), and `plugins` as changes. Checked on
 * the file alone, so a mistake is named by its path in that file; the merged
 * config is then checked with {@link ServerConfigSchema}. `server` goes
 * without its cross-field check here: its other half may be in the base.
 */
export const ExtendingConfigSchema = v.strictObject({
  ...ServerConfigSchema.entries,
  /** `"default"` (the bundled default for the environment) or the path of another config file, relative to this one. */
  extends: v.pipe(v.string('must be "default" or the path of another config file'), v.minLength(1, 'must be "default" or the path of another config file')),
  server: v.optional(ServerTimeoutsSchema),
  plugins: v.optional(v.array(PluginChangeSchema)),
});

export type ExtendingConfig = v.InferOutput<typeof ExtendingConfigSchema>;
export type PluginChange = v.InferOutput<typeof PluginChangeSchema>;
