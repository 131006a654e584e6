import * as v from 'valibot';
import {
  GatewayError,
  type GatewayPlugin,
  GUARDRAIL_RUNNER,
  type GuardrailRunner,
  jsonResponse,
  JSON_RPC_ERRORS,
  JsonRpcErrorBodySchema,
  JsonRpcMessageSchema,
  migrate,
  parseOptions,
  type RouteDoc,
} from '../../sdk/index.js';
import { IDENTITY, registerAdminRoutes, type Identity } from '../../sdk/admin/index.js';
import { McpGateway } from './gateway.js';
import { OAuthFlow } from './oauth.js';
import { MCP_SERVER_MIGRATIONS, MCP_SERVER_NAMESPACE } from './store/migrations.js';
import { McpRepository } from './store/repository.js';
import { mcpServerRoutes } from './store/routes.js';
import { McpStore } from './store/store.js';

export const PLUGIN_NAME = 'mcp';

const int = (min: number, max: number) => v.pipe(v.number(), v.integer(), v.minValue(min, `must be at least ${min}`), v.maxValue(max, `must be at most ${max}`));

const OptionsSchema = v.strictObject({
  /** How long one forwarded request may wait for its answer, in ms; a server's `request_timeout_ms` wins. Default 60 000. */
  requestTimeoutMs: v.optional(int(1000, 3_600_000), 60_000),
  /** A session unused this long ends (the client initializes again), in ms. Default 24 hours. */
  sessionIdleTimeoutMs: v.optional(int(60_000, 30 * 86_400_000), 86_400_000),
  /** Largest JSON answer read whole, in bytes (event-stream answers are relayed, not read whole). Default 32 MiB. */
  maxAnswerBytes: v.optional(int(1024, 1024 * 1024 * 1024), 32 * 1024 * 1024),
  /**
   * The URL clients reach the gateway at (`https://gateway.example.com`), for the OAuth redirect URI
   * `<publicUrl>/v1/mcp/oauth/callback`. Default: the request's `host` (and `x-forwarded-proto`); set it
   * behind a proxy, and keep it stable (a registered client keeps the redirect URI it registered).
   */
  publicUrl: v.optional(v.pipe(v.string(), v.url('must be a URL'), v.regex(/^https?:\/\//, 'must be an http(s) URL'))),
  /** How long an authorization URL stays valid, in ms. Default 10 minutes. */
  authorizationTtlMs: v.optional(int(60_000, 86_400_000), 600_000),
  /** `client_name` when the gateway registers itself with an authorization server. */
  clientName: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(200)), 'AI gateway'),
  /**
   * The https URL of the gateway's OAuth client metadata document (Client ID Metadata Documents, as MCP's 2025-11-25
   * authorization prefers): used as the gateway's `client_id` at an authorization server that advertises
   * `client_id_metadata_document_supported`, instead of registering. The operator publishes the document there
   * (docs/mcp.md). Default: none (the gateway registers dynamically).
   */
  clientMetadataUrl: v.optional(v.pipe(v.string(), v.url('must be a URL'), v.regex(/^https:\/\/[^/]+\/./, 'must be an https URL with a path'))),
  /** How often this instance checks that its open streams' sessions still exist (revoked elsewhere), in ms. Default 30 000. */
  streamCheckIntervalMs: v.optional(int(1000, 3_600_000), 30_000),
  /** Clock, for tests. */
  now: v.optional(v.custom<() => number>((f) => typeof f === 'function', 'must be a function')),
});

export type McpOptions = v.InferInput<typeof OptionsSchema>;

import { MCP_ERRORS } from './errors.js';

export { MCP_ERRORS };

/**
 * MCP servers and the MCP gateway. A workspace registers MCP servers
 * (`/v1/mcp-servers`, with each user's connection to one); each is served at
 * `/v1/mcp/{id}` over MCP's Streamable HTTP transport (POST a message, GET
 * the server's stream, DELETE the session), to callers with a gateway API key
 * holding `completions.write`. Tools outside a server's `allowed_tools` are
 * neither listed nor callable; its input and output guardrails run on tool
 * calls; every call is logged with its method and tool. OAuth servers get a
 * per-user authorization flow (`POST /v1/mcp/{id}/authorize`, the redirect
 * at `/v1/mcp/oauth/callback`). The servers, connections and sessions are
 * kept in the control plane's store, beside its workspaces (`IDENTITY`):
 * without the control plane, every `/v1/mcp` request answers 503. Uses the
 * `guardrails` plugin for servers with guardrails. See docs/mcp.md.
 */
export function mcp(options: McpOptions = {}): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, options);
  const now = opts.now ?? Date.now;
  return {
    name: PLUGIN_NAME,
    errorCodes: MCP_ERRORS,
    uses: [IDENTITY, GUARDRAIL_RUNNER],
    state: [
      { name: 'sessions', scope: 'workspace', keyedBy: "MCP sessions and OAuth connections: a session id is random and bound to the server (one workspace's) and the key that opened it; a connection to the server and the user or key." },
    ],
    apply(api) {
      let store: McpStore | null = null;
      let identity: Identity | undefined;
      let guardrails: GuardrailRunner | undefined;
      const storeOf = () => {
        if (store === null) throw new GatewayError('service_unavailable', 'MCP servers need the control plane, which is not loaded.');
        return store;
      };
      const oauth = new OAuthFlow({ store: storeOf, upstream: api.upstream, now, stateTtlMs: opts.authorizationTtlMs, clientName: opts.clientName, clientMetadataUrl: opts.clientMetadataUrl ?? null, logger: api.logger });
      const gateway = new McpGateway(
        {
          requestTimeoutMs: opts.requestTimeoutMs,
          sessionIdleTimeoutMs: opts.sessionIdleTimeoutMs,
          maxAnswerBytes: opts.maxAnswerBytes,
          publicUrl: opts.publicUrl ?? null,
          basePath: api.options.basePath,
          maxJsonDepth: api.options.maxJsonDepth,
          now,
        },
        { store: storeOf, upstream: api.upstream, oauth, guardrails: () => guardrails, logger: api.logger },
      );
      // `/v1/mcp-servers`, beside the control plane's admin routes.
      registerAdminRoutes(api, mcpServerRoutes, storeOf, () => identity);

      const timers: NodeJS.Timeout[] = [];
      api.onReady(async () => {
        const found = api.tryResolve(IDENTITY);
        guardrails = api.tryResolve(GUARDRAIL_RUNNER);
        if (found === undefined) {
          api.logger.warn('mcp: no MCP server store (load the control plane before it); every /v1/mcp request will answer 503');
          return;
        }
        identity = found;
        await migrate(found.sql(), MCP_SERVER_NAMESPACE, MCP_SERVER_MIGRATIONS);
        const ready = new McpStore({ identity: found, repo: new McpRepository(() => found.sql()), upstream: api.upstream, closer: gateway, guardrails: () => guardrails, logger: api.logger });
        // Every admin write (any feature's, identity's) clears what this instance read.
        identity.onInvalidate(() => ready.clear());
        store = ready;
        const sweep = () => {
          gateway.sweepStreams().catch((err: unknown) => api.logger.warn({ err }, 'mcp: checking open streams failed'));
        };
        const idle = () => {
          gateway.sweepSessions().catch((err: unknown) => api.logger.warn({ err }, 'mcp: deleting idle sessions failed'));
        };
        timers.push(setInterval(sweep, opts.streamCheckIntervalMs), setInterval(idle, Math.min(opts.sessionIdleTimeoutMs, 3_600_000)));
        for (const t of timers) t.unref();
      });
      // A session's GET stream lives as long as the client stays: end it when the gateway starts closing, so it does not
      // hold the shutdown for its whole grace period (the client opens a new one, on another instance).
      api.onDrain(() => gateway.closeAll());
      api.onClose(() => {
        for (const t of timers) clearInterval(t);
        gateway.closeAll();
      });

      const base = `${api.options.basePath}/mcp`;
      // Every route of a server needs completions.write, checked by the core before the body is read.
      const jsonRpc = { kind: 'handler' as const, errorFormat: JSON_RPC_ERRORS, scope: 'completions.write' };
      const SERVER = { id: 'The MCP server id (from `POST /v1/mcp-servers`).' };
      const doc = (summary: string, more: Partial<RouteDoc>): RouteDoc => ({
        summary,
        tags: ['MCP'],
        scope: 'completions.write',
        params: SERVER,
        error: JsonRpcErrorBodySchema,
        ...more,
      });
      const session = 'The session is named by the `mcp-session-id` header the answer to `initialize` carried.';
      api.routes.add({
        name: 'mcp.post',
        method: 'POST',
        path: `${base}/:id`,
        body: 'raw',
        ...jsonRpc,
        doc: doc('Send an MCP message', {
          description: `The MCP gateway (Streamable HTTP): one JSON-RPC message to a registered server; only its allowed tools, guardrails on tool calls, every call logged. The answer is JSON or an event stream. ${session}`,
          body: JsonRpcMessageSchema,
          responseTypes: ['application/json', 'text/event-stream'],
        }),
        handler: (ctx) => gateway.post(ctx),
      });
      api.routes.add({
        name: 'mcp.stream',
        method: 'GET',
        path: `${base}/:id`,
        body: 'none',
        ...jsonRpc,
        doc: doc("Open an MCP session's event stream", { description: `Messages the server sends on its own. ${session}`, responseTypes: ['text/event-stream'] }),
        handler: (ctx) => gateway.get(ctx),
      });
      api.routes.add({
        name: 'mcp.end',
        method: 'DELETE',
        path: `${base}/:id`,
        body: 'none',
        ...jsonRpc,
        doc: doc('End an MCP session', { description: session }),
        handler: (ctx) => gateway.delete(ctx),
      });

      // OAuth, for servers that use it: a user asks for the URL (or gets it in an MCP error), opens it, and the
      // authorization server redirects their browser to the callback, which carries no gateway key.
      api.routes.add({
        name: 'mcp.authorize',
        method: 'POST',
        path: `${base}/:id/authorize`,
        kind: 'handler',
        body: 'none',
        scope: 'completions.write',
        sensitive: true,
        doc: {
          summary: 'Start OAuth for an MCP server',
          description: 'For a server that uses OAuth 2.1 per user: the authorization URL the caller opens in a browser; the server then redirects back to the callback.',
          tags: ['MCP'],
          scope: 'completions.write',
          params: SERVER,
        },
        async handler(ctx) {
          const server = await gateway.server(ctx);
          if (server.auth.type !== 'oauth') throw new GatewayError('invalid_request', `The MCP server "${server.name}" does not use OAuth: there is nothing to authorize.`, { param: 'id' });
          const caller = gateway.caller(ctx);
          await storeOf().connection(server, caller, true);
          const redirectUri = gateway.redirectUri(ctx);
          const { url, expiresAt } = await oauth.authorizationUrl(server, caller, redirectUri);
          return jsonResponse(200, { object: 'mcp-authorization', mcp_server_id: server.id, authorization_url: url, redirect_uri: redirectUri, expires_at: new Date(expiresAt).toISOString() });
        },
      });
      api.routes.add({
        name: 'mcp.oauth.callback',
        method: 'GET',
        path: `${base}/oauth/callback`,
        kind: 'handler',
        auth: false,
        body: 'none',
        sensitive: true,
        doc: {
          summary: 'OAuth callback for MCP servers',
          description: "Where an authorization server redirects the user's browser (`code` and `state` in the query); the state, sealed by the gateway, names the caller, so no key is needed.",
          tags: ['MCP'],
          public: true,
        },
        async handler(ctx) {
          const { server, connection } = await oauth.complete(new URLSearchParams(ctx.query));
          return jsonResponse(200, {
            object: 'mcp-authorization',
            status: 'authorized',
            mcp_server_id: server.id,
            connection_id: connection.id,
            message: `The gateway may now use the MCP server "${server.name}" for your account. You can close this window and connect again from your MCP client.`,
          });
        },
      });
    },
  };
}

export default mcp;
