import * as v from 'valibot';
import {
  STREAM_RECOVERY,
  isObject,
  addImplicitPromptTokens,
  bundledContextWindowData,
  ContextWindows,
  effectiveBody,
  estimatePromptTokens,
  GatewayError,
  type GatewayPlugin,
  type GatewayResponse,
  hasEventStreamType,
  headersWithout,
  invalidBody,
  isEventStream,
  migrate,
  parseOptions,
  readAnswerJson,
  type RequestContext,
  responses,
  type RouteTranslation,
  type SqlStore,
  STAGES,
  type Target,
  translateStream, stateKey, TENANCY, tenantOf } from '../../sdk/index.js';
import { responseObserver } from './capture.js';
import { fit, historyItems, rawInput, storedInput } from './conversation.js';
import { RESPONSE_MIGRATIONS, RESPONSES_NAMESPACE } from './migrations.js';
import { storedResponseRoutes } from './routes.js';
import { ResponsesBodySchema, ResponsesOptionsSchema, type ResponsesOptions } from './schema.js';
import { ResponseRepository, type Turn } from './store.js';
import { summaryToChat, withSummaryEcho } from './summary.js';
import { responsesError } from './errors.js';
import { responsesWebSocket } from './websocket.js';

export const PLUGIN_NAME = 'responses';
/** The route name of `POST /v1/responses`. */
export const RESPONSES_ROUTE = 'responses';
/** The route name of `GET /v1/responses` upgraded to a WebSocket (the WebSocket mode). */
export const RESPONSES_WEBSOCKET_ROUTE = 'responses.websocket';

export type { ResponsesOptions };
export { ResponseRepository, type StoredResponse, type Turn } from './store.js';
export { estimateTokens, fitConversation, type FitInput, type FitResult } from './truncate.js';
export { RESPONSE_MIGRATIONS, RESPONSES_NAMESPACE } from './migrations.js';

import { RESPONSES_ERRORS } from './errors.js';

export { RESPONSES_ERRORS };

type Json = Record<string, unknown>;

/** What the door knows about one request, from before the strategy runs (kept under {@link DOOR}). */
interface DoorState {
  workspaceId: string;
  /** The conversation of `previous_response_id`, oldest turn first; null when none was asked for or none is stored. */
  turns: Turn[] | null;
}
const DOOR = stateKey<DoorState>(PLUGIN_NAME);
const NO_TURNS: Pick<DoorState, 'turns'> = Object.freeze({ turns: null });

/**
 * The Responses API front door (`POST /v1/responses`) for every chat
 * provider, and stored responses (docs/formats.md):
 *
 * - a provider with a native `responses` adapter (OpenAI, Azure OpenAI) gets
 *   the request as sent; any other is served by its chat adapter on the
 *   request translated to chat completions, and its answer (JSON or stream)
 *   translated back, leaf by leaf, so a fallback may go from one to the other;
 * - answers are stored (unless `store: false`) per workspace in the SQL store,
 *   so `GET /v1/responses/{id}`, `GET …/input_items` and `DELETE` work for
 *   every provider, and `previous_response_id` is rebuilt from the store for
 *   providers that cannot know it (with `truncation` against the model's
 *   context window from the bundled table);
 * - bodies are checked first (metadata limits, `include`, ranges): a 400 naming the field.
 */
export function responsesDoor(options: ResponsesOptions = {}): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, ResponsesOptionsSchema, options);
  const windows = new ContextWindows(mergeWindows(opts.contextWindows));
  const parse = v.safeParser(ResponsesBodySchema);
  const stateOf = (ctx: RequestContext): Pick<DoorState, 'turns'> => ctx.get(DOOR) ?? NO_TURNS;

  let repository: ResponseRepository | null = null;
  /** Writes not finished yet, by workspace and id: a next turn that names one waits for it. */
  const pending = new Map<string, Promise<void>>();
  const key = (workspaceId: string, id: string) => `${workspaceId}\u0000${id}`;

  const via: RouteTranslation = {
    route: 'chat.completions',
    request(ctx, target) {
      const body = effectiveBody(ctx, target) ?? {};
      const provider = providerOf(target);
      const st = stateOf(ctx);
      if (typeof body.previous_response_id === 'string' && st.turns === null) throw previousNotFound(body.previous_response_id);
      const fitted = fit({ body, provider, history: historyItems(st.turns ?? [], null), input: responses.inputItems(body.input), windows });
      return summaryToChat(responses.toChatRequest(body, { provider, history: fitted.history, input: fitted.input }), target, responses.requestedSummary(body));
    },
    native(ctx, target) {
      const st = stateOf(ctx);
      const body = effectiveBody(ctx, target) ?? {};
      if (typeof body.previous_response_id !== 'string') return null;
      if (st.turns === null) {
        // An id the gateway made is held by no provider: the provider would only answer its own 404.
        if (responses.isGatewayResponseId(body.previous_response_id)) throw previousNotFound(body.previous_response_id);
        return null;
      }
      const provider = providerOf(target);
      // The provider answered every turn itself (and stored them): it rebuilds the conversation better than the gateway.
      if (st.turns.every((t) => t.native && t.provider === provider)) return null;
      const fitted = fit({ body, provider, history: historyItems(st.turns, provider), input: rawInput(body.input), windows });
      const { previous_response_id: _previous, ...rest } = body;
      return { ...rest, input: [...fitted.history, ...fitted.input] };
    },
    async response(answer, ctx) {
      // Errors are already in the envelope the Responses API uses.
      if (answer.status < 200 || answer.status >= 300) return answer;
      const meta = { id: responses.responseId(), createdAt: Math.floor(Date.now() / 1000), request: ctx.body ?? {}, model: ctx.model ?? '' };
      if (isEventStream(answer)) return translateStream(answer, responses.chatToResponsesStream(meta));
      const completion = await readAnswerJson(answer);
      if (!isObject(completion)) throw new GatewayError('upstream_invalid_response', 'The upstream answer is not a chat completion.');
      const headers = headersWithout(answer.headers);
      headers['content-type'] = 'application/json';
      return { status: answer.status, headers, body: JSON.stringify(responses.fromChatCompletion(completion, meta)), observers: null };
    },
  };

  const save = (ctx: RequestContext, response: Json): void => {
    // The door's state says whose the response is (set for every Responses request with a body, before the cache and the strategy).
    const door = ctx.get(DOOR);
    if (repository === null || typeof response.id !== 'string' || door === undefined) return;
    delete response.hook_results;
    const last = ctx.attempts.at(-1);
    const workspaceId = door.workspaceId;
    const body = ctx.body ?? {};
    const k = key(workspaceId, response.id);
    const write = repository
      .insert({
        workspaceId,
        id: response.id,
        createdAt: typeof response.created_at === 'number' ? response.created_at * 1000 : Date.now(),
        status: typeof response.status === 'string' ? response.status : 'completed',
        model: typeof response.model === 'string' ? response.model : ctx.model,
        provider: ctx.provider?.name ?? null,
        // A stream continued by another call (on_stream_failure) is the gateway's join of several responses: the provider
        // holds none of them whole under this id, so the conversation is rebuilt from this store.
        native: last !== undefined && last.via === undefined && ctx.cacheStatus !== 'HIT' && (ctx.get(STREAM_RECOVERY)?.continuations ?? 0) === 0,
        previousResponseId: typeof body.previous_response_id === 'string' ? body.previous_response_id : null,
        inputItems: storedInput(body.input),
        response,
      })
      .catch((err: unknown) => ctx.log.error({ err }, 'responses: storing a response failed'))
      .finally(() => {
        if (pending.get(k) === write) pending.delete(k);
      });
    pending.set(k, write);
  };

  return {
    name: PLUGIN_NAME,
    // The workspace a request acts in, which its state is kept under (sdk/tenancy.ts).
    uses: [TENANCY],
    errorCodes: RESPONSES_ERRORS,
    state: [
      { name: 'stored-responses', scope: 'workspace', keyedBy: 'Stored responses and the conversations previous_response_id rebuilds: keyed by the workspace the request acts in and the response id.' },
    ],
    apply(api) {
      const path = `${api.options.basePath}/responses`;
      api.routes.add({
        name: RESPONSES_ROUTE,
        method: 'POST',
        path,
        kind: 'provider',
        body: 'json',
        frontDoor: 'responses',
        via,
        doc: {
          summary: 'Create a response',
          description:
            "OpenAI's Responses API for every provider: native for OpenAI and Azure OpenAI, translated to chat completions for the others. " +
            'Answers are stored per workspace (unless `store: false`), so `previous_response_id` works everywhere. `stream: true` answers server-sent events.',
          tags: ['Responses'],
          scope: 'completions.write',
          body: ResponsesBodySchema,
          responseTypes: ['application/json', 'text/event-stream'],
        },
      });
      // The WebSocket mode: the handshake is authenticated and scoped as a POST would be; each message then runs as one.
      api.routes.add({
        name: RESPONSES_WEBSOCKET_ROUTE,
        method: 'GET',
        path,
        kind: 'handler',
        body: 'none',
        upgrade: true,
        scope: 'completions.write',
        handler: responsesWebSocket(api, { path, maxConnectionMs: opts.websocketMaxMinutes * 60_000, maxFrameBytes: api.options.maxBodyBytes }),
        doc: {
          summary: 'Create responses over a WebSocket',
          description:
            "OpenAI's WebSocket mode: upgrade this GET, then send `response.create` messages (the body of a POST, flattened); each is answered with the events of a streamed response, one per frame, in order. " +
            'Each message runs as its own request (auth, limits, guardrails, logs); errors come as `{"type":"error","status",…,"error":{…}}`. A plain GET is answered 426.',
          tags: ['Responses'],
          scope: 'completions.write',
        },
      });
      // Responses are stored under the workspace the request acts in (an organisation-level key's too: sdk/tenancy.ts).
      const tenant = tenantOf(api);
      storedResponseRoutes(api, path, () => repository, tenant, (workspaceId, id) => pending.get(key(workspaceId, id)));

      /** The checks and the stored conversation of one Responses request. */
      const prepare = async (ctx: RequestContext, body: Record<string, unknown>): Promise<void> => {
        const st: DoorState = { workspaceId: await tenant(ctx), turns: null };
        const previous = body.previous_response_id;
        if (typeof previous === 'string' && repository !== null) {
          await pending.get(key(st.workspaceId, previous));
          let turns = await repository.conversation(st.workspaceId, previous);
          // An organisation-level key's responses stored before they belonged to the workspace it acts in: under ''.
          if (turns.length === 0 && st.workspaceId !== '' && (ctx.auth?.workspaceId ?? null) === null) turns = await repository.conversation('', previous);
          if (turns.length > 0) {
            st.turns = turns;
            // The rebuilt conversation is prompt the body does not show: limits reserve for it (docs/limits.md).
            addImplicitPromptTokens(ctx, estimatePromptTokens({ input: historyItems(turns, null) }));
          }
        }
        ctx.set(DOOR, st);
      };
      // First: a bad body never reaches guardrails, the cache or a provider; the conversation is loaded once per request.
      // A callback tap: other routes (chat) pass synchronously, without a promise per request.
      api.hooks.beforeRequest.tapAsync({ name: PLUGIN_NAME, stage: STAGES.beforeRequest.VALIDATE, routes: [RESPONSES_ROUTE] }, (ctx, done) => {
        if (ctx.body === null) return done();
        const result = parse(ctx.body);
        if (!result.success) return done(invalidBody(result.issues));
        prepare(ctx, ctx.body).then(() => done(), (err: unknown) => done(err as Error));
      });

      /** Watches the answer as it goes out, to store its response object. */
      const store = (response: GatewayResponse, ctx: RequestContext): GatewayResponse => {
        const body = ctx.body;
        if (repository === null || body === null) return response;
        // Background responses change after this answer: the provider that runs them is asked for them.
        if (body.store === false || body.background === true) return response;
        const observer = responseObserver(hasEventStreamType(response), opts.maxStoredBytes, (object) => save(ctx, object));
        response.observers = response.observers === null ? [observer] : [...response.observers, observer];
        return response;
      };
      // Late, so what is stored is what the client got (after output guardrails). A callback tap: other routes pass
      // synchronously; only a native answer to a request that asks for a reasoning summary is awaited (its echo).
      api.hooks.afterResponse.tapAsync({ name: PLUGIN_NAME, stage: STAGES.afterResponse.STORE, routes: [RESPONSES_ROUTE] }, (response, ctx, done) => {
        if (response.status < 200 || response.status >= 300 || response.body === null) return done(null, response);
        const summary = ctx.body === null ? null : responses.requestedSummary(ctx.body);
        // A translated answer echoes it already (the door built its object); a native one or a cached copy may not.
        if (summary === null || ctx.attempts.at(-1)?.via !== undefined) return done(null, store(response, ctx));
        withSummaryEcho(response, summary, hasEventStreamType(response)).then(
          (echoed) => done(null, store(echoed, ctx)),
          (err: unknown) => done(err as Error),
        );
      });

      let timer: NodeJS.Timeout | null = null;
      api.onReady(async () => {
        const store = api.stores.get(opts.store) as SqlStore | undefined;
        if (store === undefined || typeof store.client !== 'function') {
          api.logger.warn({ store: opts.store }, `${PLUGIN_NAME}: no SQL store named "${opts.store}": responses are not stored (previous_response_id works only where the provider keeps them)`);
          return;
        }
        const client = store.client();
        await migrate(client, RESPONSES_NAMESPACE, RESPONSE_MIGRATIONS);
        repository = new ResponseRepository(client);
        if (opts.retentionDays > 0) {
          const run = () => {
            repository!.deleteBefore(Date.now() - opts.retentionDays * 86_400_000).then(
              (deleted) => {
                if (deleted > 0) api.logger.info({ deleted, retention_days: opts.retentionDays }, 'responses: old stored responses deleted');
              },
              (err: unknown) => api.logger.warn({ err }, 'responses: retention clean-up failed'),
            );
          };
          timer = setInterval(run, opts.retentionIntervalMs);
          timer.unref();
          run();
        }
      });
      api.onClose(async () => {
        if (timer !== null) clearInterval(timer);
        await Promise.allSettled([...pending.values()]);
      });
    },
  };
}

function providerOf(target: Target): string {
  return typeof target.provider === 'string' ? target.provider : '';
}

function previousNotFound(id: string): GatewayError {
  return responsesError('previous_response_not_found', `Previous response with id '${id}' not found.`, { param: 'previous_response_id' });
}

function mergeWindows(extra: Record<string, Record<string, number>> | undefined) {
  const data = bundledContextWindowData();
  if (extra === undefined) return data;
  const providers = { ...data.providers };
  for (const [provider, models] of Object.entries(extra)) providers[provider] = { ...(providers[provider] ?? {}), ...models };
  return { ...data, providers };
}

export default responsesDoor;
