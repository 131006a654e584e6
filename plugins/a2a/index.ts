import { performance } from 'node:perf_hooks';
import * as v from 'valibot';
import {
  isObject,
  GatewayError,
  type GatewayPlugin,
  type GatewayResponse,
  JSONRPC,
  JsonRpcError,
  jsonRpcErrorBody,
  type JsonRpcId,
  jsonResponse,
  JSON_RPC_ERRORS,
  JsonRpcErrorBodySchema,
  JsonRpcMessageSchema,
  migrate,
  parseOptions,
  readJsonRpc,
  readText,
  type RequestContext,
  type RouteDoc,
  setJsonRpcId,
  type UpstreamResponse,
} from '../../sdk/index.js';
import { IDENTITY, registerAdminRoutes, type Identity } from '../../sdk/admin/index.js';
import { AGENT_SERVER_MIGRATIONS, AGENT_SERVER_NAMESPACE } from './store/migrations.js';
import { agentServerTable } from './store/repository.js';
import { agentServerRoutes } from './store/routes.js';
import { AgentStore } from './store/store.js';
import type { AgentCardEntry, AgentServerConfig, AgentServerStore } from './store/types.js';
import { a2aError } from './errors.js';

export const PLUGIN_NAME = 'a2a';

/**
 * The A2A JSON-RPC methods the gateway forwards, and whether each answers
 * with an event stream: A2A 0.3's names (`message/send`, …) and A2A 1.0's
 * (`SendMessage`, …). Push-notification configuration is not forwarded: it
 * would have the agent call URLs the caller chose, outside the gateway.
 */
export const A2A_METHODS: ReadonlyMap<string, { streaming: boolean }> = new Map([
  ['message/send', { streaming: false }],
  ['message/stream', { streaming: true }],
  ['tasks/get', { streaming: false }],
  ['tasks/cancel', { streaming: false }],
  ['tasks/resubscribe', { streaming: true }],
  ['SendMessage', { streaming: false }],
  ['SendStreamingMessage', { streaming: true }],
  ['GetTask', { streaming: false }],
  ['CancelTask', { streaming: false }],
  ['SubscribeToTask', { streaming: true }],
]);

/** A2A's own error codes, beyond JSON-RPC's. */
export const A2A_CODES = Object.freeze({
  /** The agent's answer is not a valid A2A answer. */
  INVALID_AGENT_RESPONSE: -32006,
});

/** Client headers that carry A2A's own negotiation, forwarded to the agent. */
const FORWARDED = ['a2a-version', 'a2a-extensions', 'x-a2a-extensions'] as const;

const int = (min: number, max: number) => v.pipe(v.number(), v.integer(), v.minValue(min, `must be at least ${min}`), v.maxValue(max, `must be at most ${max}`));

const OptionsSchema = v.strictObject({
  /** How long the agent may take to start answering, in ms (an agent's `request_timeout_ms` wins). Default 300 000. */
  requestTimeoutMs: v.optional(int(1000, 3_600_000), 300_000),
  /** Largest JSON answer read whole, in bytes (streams are relayed). Default 32 MiB. */
  maxAnswerBytes: v.optional(int(1024, 1024 * 1024 * 1024), 32 * 1024 * 1024),
  /** The URL clients reach the gateway at, for the card the gateway serves. Default: the request's `host`. */
  publicUrl: v.optional(v.pipe(v.string(), v.url('must be a URL'), v.regex(/^https?:\/\//, 'must be an http(s) URL'))),
  /** How long a fetched agent card is served before it is fetched again, in ms. Default 300 000 (5 minutes). */
  agentCardTtlMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0)), 300_000),
});

export type A2AOptions = v.InferInput<typeof OptionsSchema>;

import { A2A_ERRORS } from './errors.js';

export { A2A_ERRORS };

/**
 * Agents and the A2A gateway. A workspace registers A2A agents
 * (`/v1/agent-servers`, with their cards, fetched, validated and cached);
 * each is served at `/v1/a2a/{id}` over A2A's JSON-RPC binding, to callers
 * whose key holds `agents.invoke`. Requests go to the JSON-RPC endpoint of
 * the agent's card; streamed answers are relayed event by event as the agent
 * sends them. Every call is logged with its method. The gateway's own card
 * for the agent is at `/v1/a2a/{id}/.well-known/agent-card.json`. Agents are
 * kept in the control plane's store, beside its workspaces (`IDENTITY`):
 * without the control plane, every `/v1/a2a` request answers 503. See docs/mcp.md.
 */
export function a2a(options: A2AOptions = {}): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, options);
  return {
    name: PLUGIN_NAME,
    errorCodes: A2A_ERRORS,
    uses: [IDENTITY],
    state: [
      { name: 'agent-cards', scope: 'workspace', keyedBy: "Agent cards fetched from agent servers: by the agent server's id, and each server is one workspace's." },
    ],
    apply(api) {
      let store: AgentStore | null = null;
      let identity: Identity | undefined;
      api.onReady(async () => {
        const found = api.tryResolve(IDENTITY);
        if (found === undefined) {
          api.logger.warn('a2a: no agent store (load the control plane before it); every /v1/a2a request will answer 503');
          return;
        }
        identity = found;
        await migrate(found.sql(), AGENT_SERVER_NAMESPACE, AGENT_SERVER_MIGRATIONS);
        const ready = new AgentStore({ identity: found, servers: agentServerTable(() => found.sql()), cardTtlMs: opts.agentCardTtlMs, upstream: api.upstream, logger: api.logger });
        // Every admin write (any feature's, identity's) clears what this instance read.
        found.onInvalidate(() => ready.clear());
        store = ready;
      });
      const storeOf = (): AgentStore => {
        if (store === null) throw new GatewayError('service_unavailable', 'Agents need the control plane, which is not loaded.');
        return store;
      };
      // `/v1/agent-servers`, beside the control plane's admin routes.
      registerAdminRoutes(api, agentServerRoutes, storeOf, () => identity);
      const base = `${api.options.basePath}/a2a`;

      /** The agent of the path (the core checked the routes' scope, `agents.invoke`); unknown, archived or another workspace's: 404. */
      const agentOf = async (ctx: RequestContext): Promise<{ store: AgentServerStore; server: AgentServerConfig }> => {
        const agents = storeOf();
        const id = ctx.params!.id!;
        const server = await agents.server(ctx, id);
        if (server === undefined) throw new GatewayError('not_found', `No agent server "${id.slice(0, 128)}".`, { param: 'id' });
        return { store: agents, server };
      };

      const failure = (ctx: RequestContext, id: JsonRpcId, code: keyof typeof A2A_ERRORS, rpcCode: number, message: string, data?: unknown): GatewayResponse => {
        ctx.error = a2aError(code, message);
        return jsonResponse(200, jsonRpcErrorBody(id, data === undefined ? { code: rpcCode, message } : { code: rpcCode, message, data }));
      };

      const AGENT = { id: 'The agent server id (from `POST /v1/agent-servers`).' };
      const postDoc: RouteDoc = {
        summary: 'Call an A2A agent',
        description: `The A2A gateway: one JSON-RPC call (${[...A2A_METHODS.keys()].join(', ')}) forwarded to a registered agent and logged. A streaming method answers server-sent events; an agent's own errors come back in-band with HTTP 200.`,
        tags: ['A2A'],
        scope: 'agents.invoke',
        params: AGENT,
        body: JsonRpcMessageSchema,
        responseTypes: ['application/json', 'text/event-stream'],
        error: JsonRpcErrorBodySchema,
      };
      api.routes.add({
        name: 'a2a.post',
        method: 'POST',
        path: `${base}/:id`,
        kind: 'handler',
        body: 'raw',
        scope: 'agents.invoke',
        errorFormat: JSON_RPC_ERRORS,
        doc: postDoc,
        async handler(ctx) {
          const { store: agents, server } = await agentOf(ctx);
          let message;
          try {
            ({ message } = readJsonRpc(ctx.rawBody, api.options.maxJsonDepth));
          } catch (err) {
            if (!(err instanceof JsonRpcError)) throw err;
            ctx.error = a2aError('a2a_invalid_message', err.message);
            return jsonResponse(err.status, jsonRpcErrorBody(null, { code: err.code, message: err.message }));
          }
          const id = message.id ?? null;
          setJsonRpcId(ctx, message.id);
          if (typeof message.method !== 'string' || message.id === undefined) {
            return failure(ctx, id, 'a2a_invalid_message', JSONRPC.INVALID_REQUEST, 'Invalid request: A2A calls are JSON-RPC requests (a method and an id).');
          }
          ctx.logFields.rpc_method = message.method;
          const method = A2A_METHODS.get(message.method);
          if (method === undefined) {
            return failure(ctx, id, 'a2a_method_not_allowed', JSONRPC.METHOD_NOT_FOUND, `Method not found: the gateway forwards ${[...A2A_METHODS.keys()].join(', ')}.`);
          }
          let card: AgentCardEntry;
          try {
            // A card that cannot be refreshed still serves: agents rarely move, and a brief outage of the card must not stop calls.
            card = await agents.card(server, { staleOk: true });
          } catch (err) {
            if (!(err instanceof GatewayError) || err.code === 'host_not_allowed') throw err;
            return failure(ctx, id, 'a2a_upstream_error', JSONRPC.INTERNAL_ERROR, err.message);
          }
          const headers: Record<string, string> = { 'content-type': 'application/json', accept: method.streaming ? 'text/event-stream' : 'application/json' };
          for (const name of FORWARDED) {
            const value = ctx.header(name);
            if (value !== undefined && value.length <= 1024) headers[name] = value;
          }
          if (ctx.upstreamHeaders !== null) Object.assign(headers, ctx.upstreamHeaders);
          if (server.auth.type === 'header') headers[server.auth.name] = server.auth.value;
          const timeoutMs = server.requestTimeoutMs ?? opts.requestTimeoutMs;
          const timer = new AbortController();
          const clock = setTimeout(() => timer.abort(), timeoutMs);
          const started = performance.now();
          const attempt = { target: '0', provider: 'a2a', status: null as number | null, startMs: started - ctx.startedAt, latencyMs: 0, error: null as string | null };
          ctx.attempts.push(attempt);
          let upstream: UpstreamResponse;
          try {
            upstream = await api.upstream.send({ method: 'POST', url: card.endpoint, headers, body: ctx.rawBody }, AbortSignal.any([ctx.signal, timer.signal]), timeoutMs);
            attempt.status = upstream.status;
          } catch (err) {
            attempt.error = err instanceof GatewayError ? err.code : 'aborted';
            if (err instanceof GatewayError && err.code === 'host_not_allowed') throw err;
            if (timer.signal.aborted || (err instanceof GatewayError && err.code === 'upstream_timeout')) {
              return failure(ctx, id, 'a2a_upstream_timeout', JSONRPC.INTERNAL_ERROR, `The agent "${server.name}" did not answer within ${timeoutMs} ms.`, { timeout_ms: timeoutMs });
            }
            if (err instanceof GatewayError) return failure(ctx, id, 'a2a_upstream_error', JSONRPC.INTERNAL_ERROR, `The agent "${server.name}" could not be reached: ${err.message}`);
            throw err;
          } finally {
            clearTimeout(clock);
            attempt.latencyMs = performance.now() - started;
            ctx.upstreamLatencyMs = attempt.latencyMs;
          }
          const type = String(upstream.headers['content-type'] ?? '').toLowerCase();
          if (upstream.status >= 200 && upstream.status < 300 && type.startsWith('text/event-stream')) {
            // Streams when the agent streams: each event goes to the client as it comes, with backpressure.
            ctx.stream = true;
            return { status: 200, headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' }, body: upstream.body, observers: null };
          }
          let text: string;
          try {
            text = await readText(upstream.body, opts.maxAnswerBytes);
          } catch (err) {
            return failure(ctx, id, 'a2a_upstream_error', JSONRPC.INTERNAL_ERROR, `The agent "${server.name}" sent an answer that could not be read: ${err instanceof Error ? err.message : 'it broke off'}`);
          }
          let answer: unknown;
          try {
            answer = JSON.parse(text);
          } catch {
            answer = undefined;
          }
          if (!isObject(answer) || !('result' in answer || 'error' in answer)) {
            if (upstream.status < 200 || upstream.status >= 300) {
              return failure(ctx, id, 'a2a_upstream_error', JSONRPC.INTERNAL_ERROR, `The agent "${server.name}" failed: it answered HTTP ${upstream.status}.`, { upstream_status: upstream.status });
            }
            return failure(ctx, id, 'a2a_upstream_error', A2A_CODES.INVALID_AGENT_RESPONSE, `The agent "${server.name}" answered with something that is not a JSON-RPC answer.`);
          }
          if (isObject(answer.error)) ctx.error = a2aError('a2a_agent_error', `The agent "${server.name}" answered with an error: ${String(answer.error.message ?? '').slice(0, 500)}`);
          // An agent's error answer keeps its JSON-RPC error; the HTTP status is 200, as A2A clients expect errors in-band.
          return { status: 200, headers: { 'content-type': 'application/json' }, body: text, observers: null };
        },
      });

      // The agent's card as the gateway offers it: its JSON-RPC endpoint is the gateway's, reached with a gateway key.
      api.routes.add({
        name: 'a2a.card',
        method: 'GET',
        path: `${base}/:id/.well-known/agent-card.json`,
        kind: 'handler',
        body: 'none',
        scope: 'agents.invoke',
        doc: {
          summary: "Get an agent's card as the gateway serves it",
          description: "The agent's description and skills as it published them, its endpoint replaced by the gateway's and its security by the gateway key.",
          tags: ['A2A'],
          scope: 'agents.invoke',
          params: AGENT,
        },
        async handler(ctx) {
          const { store: agents, server } = await agentOf(ctx);
          const entry = await agents.card(server, { staleOk: true });
          let origin = opts.publicUrl ?? null;
          if (origin === null) {
            const forwarded = ctx.header('x-forwarded-proto')?.split(',')[0]?.trim();
            origin = `${forwarded === 'https' ? 'https' : 'http'}://${ctx.header('host') ?? 'localhost'}`;
          }
          return jsonResponse(200, gatewayCard(entry.card, `${origin.replace(/\/+$/, '')}${base}/${server.id}`), { 'x-gateway-cache-status': entry.cache });
        },
      });
    },
  };
}

/**
 * The card an A2A client of the gateway needs: the agent's description and
 * skills as the agent published them, its JSON-RPC endpoint replaced by the
 * gateway's, the agent's own security schemes (which the gateway satisfies)
 * replaced by the gateway key, and its signatures dropped (they sign the card
 * as the agent wrote it).
 */
export function gatewayCard(card: Record<string, unknown>, endpoint: string): Record<string, unknown> {
  const out: Record<string, unknown> = { ...card };
  delete out.signatures;
  delete out.additionalInterfaces;
  if (Array.isArray(card.supportedInterfaces)) {
    const jsonRpc = card.supportedInterfaces.find((i) => isObject(i) && String(i.protocolBinding).toUpperCase() === 'JSONRPC') as Record<string, unknown> | undefined;
    out.supportedInterfaces = [{ ...(jsonRpc ?? {}), url: endpoint, protocolBinding: 'JSONRPC' }];
    delete out.securityRequirements;
    delete out.securitySchemes;
  }
  if (typeof card.url === 'string' || !Array.isArray(card.supportedInterfaces)) {
    out.url = endpoint;
    out.preferredTransport = 'JSONRPC';
    out.securitySchemes = { gateway_api_key: { type: 'apiKey', in: 'header', name: 'x-gateway-api-key' } };
    out.security = [{ gateway_api_key: [] }];
  }
  return out;
}

export default a2a;
