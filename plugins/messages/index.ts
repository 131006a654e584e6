import * as v from 'valibot';
import {
  isObject,
  anthropic,
  CHARS_PER_TOKEN,
  effectiveBody,
  GatewayError,
  type GatewayPlugin,
  headersWithout,
  invalidBody,
  isEventStream,
  jsonResponse,
  parseOptions,
  readAnswerJson,
  type RouteDefinition,
  type RouteTranslation,
  STAGES,
  TENANCY,
  tenantOf,
  translateStream,
} from '../../sdk/index.js';
import { MESSAGES_ERROR_FORMAT, toAnthropicError } from './errors.js';
import { AnthropicErrorSchema, CountTokensBodySchema, MessagesBodySchema, MessagesOptionsSchema, type MessagesOptions } from './schema.js';
import { THREAD_ERRORS } from './threads/errors.js';
import { messageThreads, type Threads } from './threads/index.js';

export const PLUGIN_NAME = 'messages';
/** Route names of `POST /v1/messages` and `POST /v1/messages/count_tokens`. */
export const MESSAGES_ROUTE = 'messages';
export const COUNT_TOKENS_ROUTE = 'messages.count_tokens';

export type { MessagesOptions };
export { MESSAGES_ERROR_FORMAT, toAnthropicError } from './errors.js';

type Json = Record<string, unknown>;

/**
 * Input tokens of a Messages body estimated by the gateway (characters / 4 of
 * the system prompt, the messages' text and tool inputs and results, and the
 * tool definitions), for providers with no token-counting API.
 */
export function estimateInputTokens(body: Json): number {
  let chars = 0;
  const add = (value: unknown): void => {
    if (typeof value === 'string') chars += value.length;
    else if (Array.isArray(value)) for (const v of value) add(v);
    else if (isObject(value)) {
      if (typeof value.text === 'string') chars += value.text.length;
      if (value.input !== undefined) chars += JSON.stringify(value.input).length;
      if (value.content !== undefined) add(value.content);
    }
  };
  add(body.system);
  if (Array.isArray(body.messages)) for (const m of body.messages) add(isObject(m) ? m.content : null);
  if (Array.isArray(body.tools)) chars += JSON.stringify(body.tools).length;
  return Math.ceil(chars / CHARS_PER_TOKEN);
}

/**
 * Anthropic's Messages API as a front door for every chat provider
 * (docs/formats.md): `POST /v1/messages` goes natively to providers with a
 * `messages` adapter (Anthropic, Claude on Bedrock and on Vertex AI), and is
 * translated to chat completions for every other one, answers (JSON and
 * streams) translated back into Anthropic's shapes, leaf by leaf. Errors,
 * whoever raised them, reach the client in Anthropic's envelope and status
 * codes. `POST /v1/messages/count_tokens` is native where the provider counts
 * tokens and estimated by the gateway elsewhere.
 */
export function messagesDoor(options: MessagesOptions = {}): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, MessagesOptionsSchema, options);
  const cacheControl = new Set(opts.cacheControlProviders);
  type Parser = (input: unknown) => v.SafeParseResult<v.GenericSchema>;
  // Built once, by route; each is its own route-filtered tap.
  const parsers = new Map<string, Parser>([
    [MESSAGES_ROUTE, v.safeParser(MessagesBodySchema) as Parser],
    [COUNT_TOKENS_ROUTE, v.safeParser(CountTokensBodySchema) as Parser],
  ]);
  /** Threads (`thread` in the body): set up in `apply`, where the SQL store and the tenancy are known. */
  let threads: Threads | null = null;

  const via: RouteTranslation = {
    route: 'chat.completions',
    request(ctx, target) {
      const sent = effectiveBody(ctx, target) ?? {};
      // A thread's continue becomes the whole conversation: a translated provider cannot hold it.
      const body = threads === null ? sent : threads.translated(ctx, sent, target);
      const provider = typeof target.provider === 'string' ? target.provider : '';
      return anthropic.messagesToChat(body, { provider, cacheControl: cacheControl.has(provider), thinking: target.strict_reference_compliance === false });
    },
    native(ctx, target) {
      return threads === null ? null : threads.native(ctx, target);
    },
    async response(answer, ctx) {
      // Error answers are rewritten into Anthropic's envelope last, once the strategy has seen their status.
      if (answer.status < 200 || answer.status >= 300) return answer;
      const model = ctx.model ?? '';
      if (isEventStream(answer)) return translateStream(answer, anthropic.chatToMessagesStream(model));
      const completion = await readAnswerJson(answer);
      if (!isObject(completion)) throw new GatewayError('upstream_invalid_response', 'The upstream answer is not a chat completion.');
      const headers = headersWithout(answer.headers);
      headers['content-type'] = 'application/json';
      return { status: answer.status, headers, body: JSON.stringify(anthropic.chatToMessage(completion, model)), observers: null };
    },
  };

  return {
    name: PLUGIN_NAME,
    // The workspace a request acts in, which threads are kept under (sdk/tenancy.ts).
    uses: [TENANCY],
    errorCodes: THREAD_ERRORS,
    state: [
      { name: 'message-threads', scope: 'workspace', keyedBy: "Threads (the Messages door's `thread`): each turn keyed by the workspace the request acts in and the answer's message id; a continue follows only that workspace's turns." },
    ],
    apply(api) {
      threads = messageThreads(api, { store: opts.store, ttlMs: opts.threadTtlSeconds * 1000, maxTurnBytes: opts.threadMaxTurnBytes }, tenantOf(api));
      const base = `${api.options.basePath}/messages`;
      const routes: RouteDefinition[] = [
        {
          name: MESSAGES_ROUTE,
          method: 'POST',
          path: base,
          kind: 'provider',
          body: 'json',
          frontDoor: 'messages',
          via,
          errorFormat: MESSAGES_ERROR_FORMAT,
          doc: {
            summary: 'Create a message',
            description:
              "Anthropic's Messages API for every provider: native for Anthropic and Claude on Bedrock and Vertex AI, translated to chat completions for the others. " +
              "`stream: true` answers Anthropic's server-sent events. Errors come in Anthropic's envelope.",
            tags: ['Messages'],
            scope: 'completions.write',
            body: MessagesBodySchema,
            responseTypes: ['application/json', 'text/event-stream'],
            error: AnthropicErrorSchema,
          },
        },
        {
          name: COUNT_TOKENS_ROUTE,
          method: 'POST',
          path: `${base}/count_tokens`,
          kind: 'provider',
          body: 'json',
          frontDoor: 'messages',
          errorFormat: MESSAGES_ERROR_FORMAT,
          doc: {
            summary: 'Count the input tokens of a message',
            description: "The provider's count where it has a counting API, else the gateway's estimate (said by `x-gateway-tokens-estimated: true`).",
            tags: ['Messages'],
            scope: 'completions.write',
            body: CountTokensBodySchema,
            error: AnthropicErrorSchema,
          },
          // No token-counting API at the provider: the gateway's estimate, said to be one.
          local: (ctx, target) => jsonResponse(200, { input_tokens: estimateInputTokens(effectiveBody(ctx, target) ?? {}) }, { 'x-gateway-tokens-estimated': 'true' }),
        },
      ];
      for (const route of routes) api.routes.add(route);

      // First: a bad body never reaches guardrails, the cache or a provider.
      api.hooks.beforeRequest.tap({ name: PLUGIN_NAME, stage: STAGES.beforeRequest.VALIDATE, routes: [COUNT_TOKENS_ROUTE] }, (ctx) => {
        if (ctx.body === null) return undefined;
        const result = parsers.get(COUNT_TOKENS_ROUTE)!(ctx.body);
        if (!result.success) throw invalidBody(result.issues);
        return undefined;
      });
      // A callback tap: a request without `thread` passes synchronously; a thread's turns are loaded once per request.
      const parseMessages = parsers.get(MESSAGES_ROUTE)!;
      api.hooks.beforeRequest.tapAsync({ name: PLUGIN_NAME, stage: STAGES.beforeRequest.VALIDATE, routes: [MESSAGES_ROUTE] }, (ctx, done) => {
        const body = ctx.body;
        if (body === null) return done();
        const result = parseMessages(body);
        if (!result.success) return done(invalidBody(result.issues));
        if (body.thread === undefined || body.thread === null) return done();
        threads!.prepare(ctx, body).then(() => done(), (err: unknown) => done(err as Error));
      });
      // Late, so what a thread keeps is what the client got (after output guardrails). Synchronous: it only adds an observer.
      api.hooks.afterResponse.tap({ name: PLUGIN_NAME, stage: STAGES.afterResponse.STORE, routes: [MESSAGES_ROUTE] }, (response, ctx) => {
        if (response.status < 200 || response.status >= 300) return response;
        return threads!.observe(response, ctx);
      });

      // Last before the observers: every error answer (upstream, translated, a guardrail's 446) in Anthropic's envelope.
      // A callback tap: every other answer passes synchronously, without a promise per request.
      const onMessagesDoor = { name: PLUGIN_NAME, stage: STAGES.afterResponse.ERROR_FORMAT, routes: (route: RouteDefinition) => route.frontDoor === 'messages' };
      api.hooks.afterResponse.tapAsync(onMessagesDoor, (response, _ctx, done) => {
        if (response.status < 400 || response.body === null) return done(null, response);
        toAnthropicError(response).then((rewritten) => done(null, rewritten), (err: unknown) => done(err as Error));
      });
    },
  };
}

export default messagesDoor;
