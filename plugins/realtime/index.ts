import * as v from 'valibot';
import { WebSocketServer } from 'ws';
import {
  createSecretBox,
  GatewayError,
  GUARDRAIL_RUNNER,
  invalidBody,
  jsonResponse,
  loadEncryptionKey,
  parseOptions,
  SESSION_LIMITS,
  STAGES,
  stateKey,
  type GatewayPlugin,
  type RequestContext,
  type SecretBox,
} from '../../sdk/index.js';
import { KEY_PROTOCOL, mintSecret, openSecret, secretOf, type SecretGrant } from './secrets.js';
import { connectRealtime, type Relay } from './session.js';

export const PLUGIN_NAME = 'realtime';
/** The realtime route's name (limits, logs and metrics see it under this name). */
export const REALTIME_ROUTE = 'realtime';

const OptionsSchema = v.strictObject({
  /** A session is closed after this long, with the error OpenAI sends then (`session_expired`). OpenAI's own limit is 60. */
  maxSessionMinutes: v.optional(v.pipe(v.number(), v.minValue(1), v.maxValue(24 * 60)), 60),
  /** Largest frame a client may send, in bytes (an audio append of 15 MiB of base64 is OpenAI's limit). */
  maxFrameBytes: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1024)), 16 * 1024 * 1024),
  /** A client secret's lifetime when the request gives none, in seconds (OpenAI's default: 600). */
  secretTtlSeconds: v.optional(v.pipe(v.number(), v.integer(), v.minValue(10), v.maxValue(7200)), 600),
  /** The key client secrets are sealed with (default: GATEWAY_ENCRYPTION_KEY, else the data dir's key file). */
  encryptionKey: v.optional(v.string()),
  dataDir: v.optional(v.string(), './data'),
});

export type RealtimeOptions = v.InferInput<typeof OptionsSchema>;

const MintSchema = v.object({
  expires_after: v.optional(v.object({ anchor: v.optional(v.literal('created_at')), seconds: v.pipe(v.number(), v.integer(), v.minValue(10), v.maxValue(7200)) })),
  session: v.object({ type: v.optional(v.string()), model: v.pipe(v.string(), v.minLength(1), v.maxLength(256)) }),
});
const parseMint = v.safeParser(MintSchema);

/** The grant of the client secret a session was opened with. */
const GRANT = stateKey<SecretGrant>('realtime:grant');
/**
 * Request headers a secret keeps from its minting request: what routes and describes the session (`x-gateway-*`:
 * the config, the provider and its companion headers, the metadata) and a provider credential sent with them; never
 * the gateway key, nor the minting request's own trace ids (each session has its own).
 */
const ROUTING_HEADER = /^x-gateway-(?!api-key$|trace-id$|span-id$|parent-span-id$|span-name$)|^authorization$|^api-key$|^x-api-key$|^openai-organization$|^openai-project$/;

/**
 * The Realtime API through the gateway (docs/realtime.md): `GET /v1/realtime?model=…` upgraded to a WebSocket and
 * relayed to the provider's realtime socket (OpenAI; Azure OpenAI), after the whole request lifecycle up to the
 * provider call: auth, routing (configs, provider headers, integrations, fallbacks on a refused handshake), rate and
 * usage limits. The session is one request in the log, written when it ends: its duration, the events by type, the
 * usage summed from each `response.done`, priced with the model's audio rates. `POST /v1/realtime/client_secrets`
 * mints the short-lived secret a browser connects with instead of a gateway key.
 */
export function realtime(options: RealtimeOptions = {}): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, options);
  return {
    name: PLUGIN_NAME,
    uses: [SESSION_LIMITS, GUARDRAIL_RUNNER],
    // Nothing between requests: a client secret carries its grant (sealed), and a session lives on its sockets.
    state: [],
    apply(api) {
      const base = api.options.basePath;
      let box: SecretBox | null = null;
      const open = new Set<Relay>();
      let draining = false;
      // The key offered as a subprotocol is chosen (echoed back) only when nothing else was offered: `realtime` first.
      const wss = new WebSocketServer({
        noServer: true,
        maxPayload: opts.maxFrameBytes,
        perMessageDeflate: false,
        handleProtocols: (protocols) => {
          if (protocols.has('realtime')) return 'realtime';
          for (const p of protocols) if (!p.startsWith(KEY_PROTOCOL)) return p;
          // Only the key was offered: a client that offers subprotocols fails a handshake that picks none.
          return protocols.values().next().value ?? false;
        },
      });
      api.onReady(async () => {
        box = createSecretBox((await loadEncryptionKey({ envValue: opts.encryptionKey, dataDir: opts.dataDir })).key);
      });
      api.onDrain(() => {
        draining = true;
        for (const r of open) r.end('drain');
      });
      api.onClose(() => {
        for (const r of open) r.end('drain');
      });

      api.routes.add({
        name: REALTIME_ROUTE,
        method: 'GET',
        path: `${base}/realtime`,
        kind: 'provider',
        upgrade: true,
        body: 'none',
        scope: 'completions.write',
        local: (ctx, target) =>
          connectRealtime(ctx, target, {
            api,
            wss,
            maxSessionMs: opts.maxSessionMinutes * 60_000,
            maxFrameBytes: opts.maxFrameBytes,
            charge: api.provided(SESSION_LIMITS) ? (c, used) => api.resolve(SESSION_LIMITS).charge(c, used) : null,
            guardrails: api.tryResolve(GUARDRAIL_RUNNER) ?? null,
            minted: (c) => sessionConfig(c.get(GRANT)?.session ?? null),
            open,
            draining: () => draining,
          }),
        doc: {
          summary: 'Open a realtime session (WebSocket)',
          description:
            "OpenAI's Realtime API over WebSocket: `model` in the query, the gateway key in `x-gateway-api-key` (or a client secret from `POST /v1/realtime/client_secrets`, as the subprotocol `openai-insecure-api-key.<secret>` or `Authorization: Bearer <secret>`). " +
            'Events are relayed both ways as the provider sends them; the session is logged and priced when it ends (docs/realtime.md).',
          tags: ['Realtime'],
          scope: 'completions.write',
          responseTypes: [],
        },
      });

      // Before every other source of credentials, on this route only: a client secret names the key that minted it.
      api.hooks.auth.tap({ name: PLUGIN_NAME, stage: STAGES.auth.MEMORY_KEYS - 10, routes: [REALTIME_ROUTE], delegated: true }, (ctx) => {
        const secret = secretOf(ctx.header('sec-websocket-protocol'), ctx.header('authorization'));
        if (secret === null) return undefined;
        const grant = box === null ? null : openSecret(box, secret);
        if (grant === null) throw new GatewayError('unauthorized', 'This client secret is not valid here (not minted by this gateway, or altered).', { param: 'authorization' });
        if (Date.now() >= grant.expiresAt) throw new GatewayError('unauthorized', `This client secret expired at ${new Date(grant.expiresAt).toISOString()}; mint another (POST ${base}/realtime/client_secrets).`, { param: 'authorization' });
        const model = modelOf(ctx);
        if (model !== null && model !== grant.model) throw new GatewayError('forbidden', `This client secret is for model "${grant.model}", not "${model}".`, { param: 'model' });
        // The session is routed as the minting request would have been: its headers replace the browser's, and so
        // does its metadata (parsed before auth ran: a limit or a budget keyed on it must see the minted one).
        for (const name of Object.keys(ctx.headers)) if (ROUTING_HEADER.test(name)) delete ctx.headers[name];
        Object.assign(ctx.headers, grant.headers);
        ctx.metadata = metadataOf(grant.headers['x-gateway-metadata']);
        ctx.set(GRANT, grant);
        return grant.auth;
      });

      // The model is the query's: set where the body's would be, before routing and limits read it.
      api.hooks.resolveProvider.tap({ name: PLUGIN_NAME, stage: STAGES.resolveProvider.ROUTE - 10, routes: [REALTIME_ROUTE] }, (ctx) => {
        const model = modelOf(ctx) ?? ctx.get(GRANT)?.model ?? null;
        if (model === null || model === '') throw new GatewayError('invalid_request', 'The query parameter model is required (GET /v1/realtime?model=gpt-realtime).', { param: 'model' });
        ctx.model = model;
        ctx.body = { model };
        return undefined;
      });

      api.routes.add({
        name: 'realtime.client_secrets',
        method: 'POST',
        path: `${base}/realtime/client_secrets`,
        kind: 'handler',
        body: 'json',
        scope: 'completions.write',
        // The answer is a credential: never stored in the log.
        sensitive: true,
        handler: (ctx) => {
          const parsed = parseMint(ctx.body);
          if (!parsed.success) throw invalidBody(parsed.issues);
          if (box === null || ctx.auth === null) throw new GatewayError('service_unavailable', 'Client secrets need the gateway started and a caller authenticated.');
          const seconds = parsed.output.expires_after?.seconds ?? opts.secretTtlSeconds;
          const expiresAt = Date.now() + seconds * 1000;
          const headers: Record<string, string> = {};
          for (const [name, value] of Object.entries(ctx.headers)) {
            if (typeof value === 'string' && ROUTING_HEADER.test(name)) headers[name] = value;
          }
          const session = { ...(ctx.body!.session as Record<string, unknown>), type: 'realtime' };
          const grant: SecretGrant = { auth: ctx.auth, model: parsed.output.session.model, expiresAt, headers, session };
          return jsonResponse(200, { value: mintSecret(box, grant), expires_at: Math.floor(expiresAt / 1000), session: { ...session, object: 'realtime.session' } });
        },
        doc: {
          summary: 'Mint a client secret for a realtime session',
          description:
            'A short-lived secret (10 s to 2 h; default 10 minutes) for one model, carrying the calling key and the routing headers of this request. A browser connects to `GET /v1/realtime` with it as the subprotocol `' +
            KEY_PROTOCOL +
            '<secret>`; the gateway key and the provider credentials never reach the browser.',
          tags: ['Realtime'],
          scope: 'completions.write',
          body: MintSchema,
        },
      });
    },
  };
}

/** The minting request's metadata (a JSON object, as the trace plugin checked it then), or null. */
function metadataOf(header: string | undefined): Record<string, unknown> | null {
  if (header === undefined) return null;
  try {
    const value = JSON.parse(header) as unknown;
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** The `model` query parameter, or null without one. */
function modelOf(ctx: RequestContext): string | null {
  if (ctx.query === '') return null;
  const model = new URLSearchParams(ctx.query).get('model');
  return model === null || model === '' ? null : model;
}

/** What a minted session sends as its first `session.update`: the configuration without what the URL already says. */
function sessionConfig(session: Record<string, unknown> | null): Record<string, unknown> | null {
  if (session === null) return null;
  const { model: _model, object: _object, ...rest } = session;
  return Object.keys(rest).length <= 1 ? null : rest;
}

export default realtime;
