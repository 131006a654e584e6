import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import type { GenericSchema } from 'valibot';
import type { RequestContext } from './context.js';
import type { GatewayError } from './errors.js';
import type { BodySource, UpstreamBody } from './upstream/body.js';

/**
 * A resolved routing target: which provider to call and with what settings.
 * Field names follow the spec's config object (`provider`, `api_key`,
 * `custom_host`, `openai_organization`, …) so that a config target can be used
 * as is. Nested targets (`strategy` + `targets`) are run by a strategy plugin.
 */
export interface Target {
  /** Registered provider name, e.g. `openai`. */
  provider?: string;
  /** Provider credential. Never logged. */
  api_key?: string;
  /** Replaces the provider's default base URL, e.g. `http://127.0.0.1:9000/v1`. */
  custom_host?: string;
  /** Present on a target that routes to children; picks the strategy plugin by `mode`. */
  strategy?: { mode: string; [field: string]: unknown };
  /** The children a strategy routes between, in order; each is a leaf or another nested strategy. */
  targets?: Target[];
  /** Every other config field (provider-specific credentials, retry, cache, …). */
  [field: string]: unknown;
}

/** Who is calling, as established by the auth hook. */
export interface AuthInfo {
  /** Stable, non-secret identifier of the key (never the key itself). */
  keyId: string;
  /** The workspace the key belongs to; null for an organisation-wide key or a static key. */
  workspaceId: string | null;
  /** What the key may do (`logs.read`, `api_keys.create`, …): checked by `hasScope` and `requireScope`. */
  scopes: readonly string[];
  /**
   * The caller's role where a control plane defines one: `owner` or `admin` for organisation-wide
   * keys, the workspace role (`admin`, `manager`, `member`) otherwise. Absent for plain static keys.
   */
  role?: string;
  /** Kind of credential, e.g. `static`, `organisation-service`, `workspace-user`, `jwt`. */
  type?: string;
  /** The user a user key or token belongs to. */
  userId?: string | null;
}

/** Token counts in OpenAI terms. */
export interface Usage {
  /** Tokens in the prompt (the input), cached ones included. */
  prompt_tokens: number;
  /** Tokens generated (the output), reasoning ones included. */
  completion_tokens: number;
  /** Prompt plus completion tokens, as the provider counted them. */
  total_tokens: number;
  /** Prompt tokens served from the provider's prompt cache (billed below input), when it says. */
  cached_tokens?: number;
  /**
   * Prompt tokens written to the provider's prompt cache (billed above input: Anthropic's and
   * Bedrock's 5-minute writes at 1.25× and 1-hour writes at 2×), part of `prompt_tokens`; when it says.
   */
  cache_write_tokens?: number;
  /** Of `cache_write_tokens`, those written for an hour (Anthropic's `ephemeral_1h`); the rest are 5-minute writes. */
  cache_write_1h_tokens?: number;
  /** Completion tokens spent on reasoning, when the provider says. */
  reasoning_tokens?: number;
  /** Prompt tokens that were audio (billed at audio rates), part of `prompt_tokens`; when the provider says. */
  input_audio_tokens?: number;
  /** Prompt tokens that were images, part of `prompt_tokens`; when the provider says. */
  input_image_tokens?: number;
  /** Completion tokens that were audio, part of `completion_tokens`; when the provider says. */
  output_audio_tokens?: number;
  /** Images made, for a model billed per image (DALL·E), with the size and quality that set its price. */
  images?: number;
  /** The images' size (`1024x1024`), as the request asked. */
  image_size?: string;
  /** The images' quality (`standard`, `hd`), as the request asked. */
  image_quality?: string;
  /** Seconds of audio, for a model billed by the second (`whisper-1`), as its answer said. */
  audio_seconds?: number;
  /** Characters of text, for a model billed by the character (`tts-1`). */
  characters?: number;
}

/**
 * Body of a response the gateway sends: bytes, text, or a stream written with backpressure: a
 * {@link BodySource} pushing its chunks (an upstream's body, a translation of one), or a Node Readable
 * (a plugin's local answer).
 */
export type ResponseBody = Buffer | string | BodySource | Readable | null;

/** Watches the bytes of a response as they go out, without holding them up. */
export interface BodyObserver {
  /** Called with each chunk as it is written; keep it cheap, it runs on the response path. */
  onChunk(chunk: Buffer): void;
  /** Called once when the body ended (`error` set when it broke off). */
  onEnd?(error: Error | null): void;
}

/** A response on its way to the client. Built by a provider, a cache, a handler or the error path. */
export interface GatewayResponse {
  /** HTTP status code. */
  status: number;
  /** Response headers, by lower-case name. */
  headers: Record<string, string | string[]>;
  /** The body: bytes, text, a stream, or null for none. */
  body: ResponseBody;
  /** Observers fed each outgoing chunk (usage extraction, stream capture). */
  observers: BodyObserver[] | null;
}

/** One call to an upstream, recorded for the log (a retry or fallback makes several). */
export interface Attempt {
  /** The target's dotted path in the config (`0`, `0.1`, …), as `childPath` builds it. */
  target: string;
  /** The provider called; null when not known. */
  provider: string | null;
  /** The upstream's HTTP status; null when no answer came (a connection error or a timeout). */
  status: number | null;
  /** When the call was sent, in ms after the request arrived (for per-attempt spans and timelines). */
  startMs: number;
  /** Time from sending the call to its answer headers or its failure, in ms. */
  latencyMs: number;
  /** What went wrong: a GatewayError's code or an error's name; null when an answer came (whatever its status). */
  error: string | null;
  /**
   * The provider route that served the call when it differs from the request's route: a front
   * door translated to `chat.completions` for a provider without a native adapter. Absent otherwise.
   */
  via?: string;
  /** Its stream broke after it had started and another call continued it (stream recovery): how, and where. */
  streamBreak?: { reason: string; afterChars: number; error: string | null };
  /** It continued a broken stream: the characters of answer it was given, how it was asked, and the repeated characters trimmed at the seam. */
  continued?: { carriedChars: number; mode: string; trimmedChars: number };
}

/** A request to send upstream, built by a provider for a route. */
export interface UpstreamRequest {
  /** HTTP method, e.g. `POST`. */
  method: string;
  /** Absolute URL. */
  url: string;
  /** Headers to send, by lower-case name. */
  headers: Record<string, string>;
  /** The body to send; null for none. */
  body: Buffer | string | null;
}

/**
 * A request whose body may be a stream, sent as it is read (a file upload to a
 * provider): `UpstreamClient.send` takes it. A stream cannot be sent twice, so
 * only a call that is never retried uses one.
 */
export interface StreamingUpstreamRequest extends Omit<UpstreamRequest, 'body'> {
  /** The body to send, a stream read as it is sent; null for none. */
  body: Buffer | string | Readable | null;
}

/** What the HTTP client returns: status, headers, and a body stream not yet read. */
export interface UpstreamResponse {
  /** The upstream's HTTP status code. */
  status: number;
  /** Response headers, as Node parses them. */
  headers: IncomingHttpHeaders;
  /**
   * The body, unread (plugin API 2.0; it was a Readable before): read it once, whole with `bytes()`,
   * `text()` or `json()`, chunk by chunk with `start(sink)`, or let it go with `discard()` (or
   * `discardResponse` on the answer) so the connection is reused. Returning it as a `GatewayResponse`'s
   * body passes it to the client byte for byte. See docs/plugins.md, "Upstream bodies".
   */
  body: UpstreamBody;
}

/** How a provider serves one route (e.g. `chat.completions`). */
export interface ProviderRoute {
  /** Path appended to the base URL, or a function of the request. */
  path: string | ((ctx: RequestContext, target: Target) => string);
  /**
   * Upstream body. Default: the client's bytes, or the re-serialised body when a plugin changed it.
   * May resolve later, for a body that needs I/O first (images fetched and inlined).
   */
  body?(ctx: RequestContext, target: Target): Buffer | string | Promise<Buffer | string>;
  /** Extra upstream headers for this route. */
  headers?(ctx: RequestContext, target: Target): Record<string, string>;
  /**
   * Maps the upstream answer to the client's answer. Default: pass through status, headers and bytes.
   * May be async, for answers that must be read whole before translation (non-stream JSON).
   */
  response?(upstream: UpstreamResponse, ctx: RequestContext, target: Target): GatewayResponse | Promise<GatewayResponse>;
  /**
   * Whether this adapter serves this request. Default: every request. An adapter that serves only
   * some models natively (Claude on Vertex AI or Bedrock for the Messages API) answers false for the
   * others, which then take the route's translation (`RouteDefinition.via`), like a provider without one.
   */
  accepts?(ctx: RequestContext, target: Target): boolean;
}

/**
 * A provider adapter, registered by name in `api.providers`.
 * The core knows nothing of any provider beyond this shape.
 */
export interface Provider {
  /** The name it is registered and selected by (`x-gateway-provider`, a target's `provider`), e.g. `openai`. */
  name: string;
  /**
   * Where its routes' paths are appended. A string is the default base URL (no
   * trailing slash), which a target's `custom_host` replaces. A function builds
   * it from the target (a region, a resource name) and handles `custom_host`
   * itself; it may throw a GatewayError naming a missing or bad field.
   */
  baseURL: string | ((target: Target, ctx: RequestContext) => string);
  /** Credential and scoping headers for any call to this provider (shaped routes and proxy). */
  authHeaders(target: Target, ctx: RequestContext): Record<string, string>;
  /**
   * The last step before a call to this provider is sent, once per attempt
   * (a retry prepares again): sign the request, add a token fetched or cached
   * for the target. It receives the request as built (URL, headers, body of a
   * shaped route or of the generic proxy) and may change it in place. Only
   * this provider's calls pay for it; the core awaits it only when it is set.
   */
  prepare?(request: UpstreamRequest, target: Target, ctx: RequestContext): void | Promise<void>;
  /** Shaped routes this provider serves, keyed by route name. */
  routes: Partial<Record<string, ProviderRoute>>;
  /** OpenAI-style resource APIs it serves itself (files, batches, fine-tuning jobs); absent when none. */
  resources?: ProviderResources;
  /**
   * Which model name its bill follows, for pricing (docs/cost.md): `answered` (default), the one
   * its answer names (a dated snapshot of the alias asked for); `requested`, the id it was called
   * with (Bedrock: the inference profile, `global.` or a region, sets the price, and its answers
   * name the vendor's bare model).
   */
  billedModel?: 'answered' | 'requested';
  /**
   * True for a provider that bills by the service tier its answer names (OpenAI's and Azure
   * OpenAI's `service_tier`: `flex`, `priority`): the price of that tier applies. Another
   * provider's answer is priced at its standard prices whatever it names.
   */
  servesTiers?: boolean;
}

/**
 * The OpenAI-style resource APIs a provider serves natively, for the plugins
 * that shape them (`batches`, `fine-tuning`; docs/batches.md). Each value
 * names the wire format of that API, which the shaping plugin knows: `openai`
 * for OpenAI's own (OpenAI, Azure OpenAI), `mistral` for Mistral's
 * fine-tuning jobs. A provider without one of them has the gateway run it
 * (batches, files) or refuses it (fine-tuning).
 */
export interface ProviderResources {
  /** The wire format of its files API, e.g. `openai`. */
  files?: string;
  /** The wire format of its batches API, e.g. `openai`. */
  batches?: string;
  /** The wire format of its fine-tuning jobs API, e.g. `openai` or `mistral`. */
  fineTuning?: string;
  /** The wire format of its Realtime API over WebSocket (`openai`: OpenAI's events, which Azure OpenAI speaks too). */
  realtime?: string;
  /**
   * The http(s) URL of its realtime socket for a model, for a target. Default: the base URL and
   * `/realtime?model=<model>`. May throw a GatewayError naming a missing target field.
   */
  realtimeUrl?(model: string, target: Target, ctx: RequestContext): string;
  /**
   * The URL of an OpenAI-style path with its query (`/files?limit=2`,
   * `/batches/batch_1/cancel`), for a target. Default: the base URL and the path.
   * May throw a GatewayError naming a missing target field.
   */
  url?(path: string, target: Target, ctx: RequestContext): string;
}

/** Sends one request to one concrete target. Interceptors wrap it; strategies call it. */
export type Dispatch = (ctx: RequestContext, target: Target) => Promise<GatewayResponse>;

/** Runs a target, leaf or nested, at a dotted path (root: ''). Given to strategies; build child paths with `childPath`. */
export type RunTarget = (ctx: RequestContext, target: Target, path: string) => Promise<GatewayResponse>;

/** undici-style wrapper around a dispatch: retry, timeout, breaker. Composed once at boot. */
export type Interceptor = (next: Dispatch) => Dispatch;

/** A routing mode (`single`, `loadbalance`, `fallback`, `conditional`), registered by mode in `api.strategies`. */
export interface Strategy {
  /**
   * Runs `target.targets` under `target.strategy`. `run` sends a child (a leaf, or a nested strategy)
   * and takes the child's dotted path, e.g. `${path}.1`.
   */
  execute(ctx: RequestContext, target: Target, run: RunTarget, path: string): Promise<GatewayResponse>;
}

/** A route the gateway serves. Registered at boot with `api.routes.add`. */
export interface RouteDefinition {
  /** Stable name, unique in a gateway (a second route under a name is a boot error), used in logs and to find the route. */
  name: string;
  /**
   * The API this route speaks when it is another route's under another name and path (the prompt
   * completions route speaks `chat.completions`): providers serve it with their adapter for that
   * route, and plugins that read bodies and answers by route (validation, limits, guardrails, the
   * cache) treat it as that route. Absent: the route's own `name`. Read it with `routeApi(route)`.
   */
  api?: string;
  /** HTTP method it answers. */
  method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH';
  /** Full path, e.g. `/v1/chat/completions`; `:param` segments match one segment. */
  path: string;
  /**
   * Lets the fallback route (the generic proxy) serve a request this route matched,
   * e.g. `GET /models` with a provider selected goes to that provider. Checked before auth.
   */
  deferToFallback?: (ctx: RequestContext) => boolean;
  /** Bodies hold secrets (new API keys, provider credentials): log sinks must not store them. Default false. */
  sensitive?: boolean;
  /** Whether the auth hook runs. Default true. */
  auth?: boolean;
  /**
   * The scope an API key needs (`logs.read`), checked right after auth and before the body is read
   * or the handler runs, so a key without it gets the 403 whatever it sent. Absent: any caller the
   * auth hook accepted. The API reference shows it (as `doc.scope` when that is absent).
   */
  scope?: string;
  /**
   * `json` parses the body (400 on bad JSON); `raw` keeps the bytes; `none` ignores it; `stream` leaves it
   * unread in `ctx.bodyStream` for the handler to consume as it arrives (uploads). Default `json` for POST/PUT/PATCH.
   */
  body?: 'json' | 'raw' | 'none' | 'stream';
  /**
   * `provider`: runs resolve → before → strategy → transport → after.
   * `handler`: runs `handler` after auth (control plane, health).
   */
  kind: 'provider' | 'handler';
  /**
   * For `handler` routes. Returning null hands the request to the fallback route (the generic
   * proxy) when one serves its method and path, as if this route had not matched (a stored
   * response the gateway does not hold is asked of the selected provider); else it is a 404.
   */
  handler?: (ctx: RequestContext) => Promise<GatewayResponse | null> | GatewayResponse | null;
  /**
   * The route takes HTTP upgrades (WebSocket handshakes, through `Gateway.upgrade`). A `handler` route's handler
   * finds the socket on `ctx.upgrade` after auth and scope; a `provider` route's leaf (its `local`) finds it after
   * the whole request lifecycle up to the transport (provider resolved, before hooks run). Either takes it (setting
   * `taken`); an answer given without taking it goes out as a plain HTTP response. The answer given after taking it
   * (when the socket's session is over) is not sent: its body is what the log and the after hooks see of the
   * session. An upgrade to any other route is refused before auth, and nothing runs for it.
   */
  upgrade?: boolean;
  /** For `provider` routes: builds the upstream request when the provider has no adapter for this route (the generic proxy). */
  forward?: (ctx: RequestContext, target: Target, provider: Provider) => UpstreamRequest;
  /**
   * For `provider` routes: how a provider without an adapter for this route serves it anyway,
   * through its adapter for another route. Decided per leaf, so one fallback may go native to one
   * target and translated to the next. See {@link RouteTranslation}.
   */
  via?: RouteTranslation;
  /**
   * For `provider` routes: answers a leaf whose provider has no adapter for this route (nor
   * for `via.route`) without an upstream call, e.g. a token count estimated by the gateway.
   * Checked before `forward`.
   */
  local?: (ctx: RequestContext, target: Target) => GatewayResponse | Promise<GatewayResponse>;
  /**
   * The API format clients speak on this route (`chat`, `responses`, `messages`), recorded in
   * logs as the front door a request came through. Absent for routes that are not one.
   */
  frontDoor?: string;
  /**
   * How errors look to this route's clients when not the gateway envelope (the Anthropic
   * Messages door; a JSON-RPC endpoint answers JSON-RPC errors): the pipeline and the response
   * writer use it for errors the gateway raises (auth, a body too large, what a handler throws).
   */
  errorFormat?: ErrorFormat;
  /**
   * What the API reference (the `openapi` plugin's OpenAPI document) says about this route.
   * Optional: a route without one is still listed, under its name. Read once, never per request.
   */
  doc?: RouteDoc;
}

/**
 * A route's entry in the API reference. Give `body` and `query` the very
 * schema objects the route validates with, so the reference and the
 * validation cannot drift apart; schemas are converted to JSON Schema once,
 * when the document is first built (a kind JSON Schema cannot express, such
 * as a transform or a custom check, is documented as loosely as it must be).
 */
export interface RouteDoc {
  /** One line: what the route does, e.g. `Create an API key`. */
  summary: string;
  /** More detail, in CommonMark. */
  description?: string;
  /** The groups it is listed under, e.g. `['API keys']`. */
  tags?: readonly string[];
  /**
   * The scope an API key needs (`api_keys.create`), shown in the description
   * and as `x-gateway-scope`. Absent: any valid key (or none, when public).
   */
  scope?: string;
  /** Anyone may call it, without a credential (`/health`). Routes with `auth: false` and no `bearer` are documented as public too. */
  public?: boolean;
  /**
   * The route takes a bearer token it checks itself instead of a gateway key;
   * this names it, e.g. `a SCIM token`.
   */
  bearer?: string;
  /**
   * The request selects a provider as inference requests do (`x-gateway-provider` with the provider
   * key, `x-gateway-config`): files, batches, fine-tuning jobs. Default: true for `kind: 'provider'` routes.
   */
  selectsProvider?: boolean;
  /** Descriptions of the path's `:name` segments, by name. */
  params?: Readonly<Record<string, string>>;
  /** The schema of the query string: an object schema, one parameter per entry. */
  query?: GenericSchema;
  /** The schema of the request body. */
  body?: GenericSchema;
  /** The body's media type. Default `application/json`. */
  bodyType?: string;
  /** The schema of a successful answer. Absent: not described. */
  response?: GenericSchema;
  /** The media types a successful answer may have. Default `['application/json']`. */
  responseTypes?: readonly string[];
  /**
   * The schema of error bodies, for a route that answers errors in its own
   * shape (`errorFormat`). Default: the gateway's envelope
   * `{"error":{"message","type","param","code"}}`.
   */
  error?: GenericSchema;
}

/**
 * A front door served through another route's adapters (the Responses API translated to chat
 * completions). The transport calls `request` once per attempt on a leaf whose provider has no
 * adapter for the route itself (or one whose `accepts` says no), presents its result to the other
 * route's adapter as the body (`effectiveBody` / `requestBody` return it; `ctx.body` stays the
 * client's), and hands the adapter's answer to `response`. Retries, fallbacks, the breaker, caches,
 * guardrails and logs see the door's own request and answer, as for any other route.
 */
export interface RouteTranslation {
  /** The route whose adapters serve the translated request, e.g. `chat.completions`. */
  route: string;
  /**
   * The body, in `route`'s format, for this leaf (`override_params` already applied to the
   * client's body by `effectiveBody`). May throw a GatewayError (a 400 for input the target cannot take).
   */
  request(ctx: RequestContext, target: Target): Record<string, unknown>;
  /**
   * The adapter's answer (any status; JSON, text or a stream, with its observers) in this
   * route's format. A stream is translated as it flows, never read whole.
   */
  response(answer: GatewayResponse, ctx: RequestContext, target: Target): GatewayResponse | Promise<GatewayResponse>;
  /**
   * The body a native adapter of this route gets for this leaf when it must differ from the
   * client's (a conversation the provider cannot know, expanded from the gateway's store); null
   * or absent: the client's body.
   */
  native?(ctx: RequestContext, target: Target): Record<string, unknown> | null;
}

/** A route's own error shape (see {@link RouteDefinition.errorFormat}). */
export interface ErrorFormat {
  /** The response for an error the gateway raised (keep its status; headers and body in the route's shape). */
  response(error: GatewayError, ctx: RequestContext): GatewayResponse;
  /** The SSE text telling a streaming client about an error after its headers went out. Default: the envelope as a `data:` event. */
  event?(error: GatewayError, ctx: RequestContext): string;
}

/** One address a host name resolves to. */
export interface ResolvedAddress {
  /** The IP address, e.g. `10.0.0.5` or `fd00::5`. */
  address: string;
  /** IP version of `address`. */
  family: 4 | 6;
}

/** Resolves a host name to all its addresses (see {@link OutboundOptions.resolve}). */
export type HostResolver = (hostname: string) => Promise<readonly ResolvedAddress[]>;

/**
 * Where the gateway may connect on a caller's behalf (docs/security.md):
 * every upstream call, custom hosts, the generic proxy, webhooks and token
 * endpoints alike. Public addresses are always allowed. Loopback, private
 * (RFC 1918, CGNAT), link-local, multicast, unspecified, broadcast,
 * documentation and reserved addresses, IPv4 and IPv6 (mapped and NAT64
 * forms included), are refused unless allowed here; the check runs on the
 * address each connection goes to, after DNS.
 */
export interface OutboundOptions {
  /** Allow every address, loopback and private ones included. Default false. */
  allowPrivateHosts?: boolean;
  /**
   * Hosts allowed whatever their address, e.g. a self-hosted model:
   * `localhost:11434`, `ollama.lan`, `*.internal.example` (names under it),
   * `10.0.0.5:8000`, `[fd00::5]:8000`, or a range `10.0.0.0/8`. An entry
   * without a port allows every port. A name entry allows whatever the name
   * resolves to; an address or range entry allows that address however the
   * URL names it (a name that resolves to it, too, when the entry has no port).
   */
  allowHosts?: readonly string[];
  /** Resolves host names. Default: the system resolver (`dns.lookup`, every address). Tests inject one. */
  resolve?: HostResolver;
}

/** Options the core reads. Plugins read their own options from their factory arguments. */
export interface GatewayOptions {
  /** Largest request body accepted, in bytes. Default 50 MiB. */
  maxBodyBytes?: number;
  /** Deepest nesting of objects and arrays in a JSON request body or config. Default 100. */
  maxJsonDepth?: number;
  /** Time to wait for upstream response headers before answering 504, in ms. Default 600 000. */
  upstreamHeadersTimeoutMs?: number;
  /** Time allowed between two upstream body chunks, in ms. Default 300 000. */
  upstreamBodyTimeoutMs?: number;
  /** Keep-alive connections per upstream origin. Default 256. */
  upstreamConnections?: number;
  /** Prefix of provider routes. Default `/v1`. */
  basePath?: string;
  /**
   * Where upstream calls may connect. Default: public addresses only (no
   * loopback or private host unless allowed), for a library build as for the
   * bundled server: a gateway exposed to callers who choose a custom host
   * must not reach its own network by default.
   */
  outbound?: OutboundOptions;
}

export type { IncomingHttpHeaders };
