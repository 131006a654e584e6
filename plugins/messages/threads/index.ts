import { createHash } from 'node:crypto';
import {
  addImplicitPromptTokens,
  anthropic,
  credentialDigest,
  effectiveBody,
  hasEventStreamType,
  estimatePromptTokens,
  isObject,
  migrate,
  stateKey,
  wholeBodyObserver,
  type BodyObserver,
  type PluginAPI,
  type GatewayResponse,
  type RequestContext,
  type SqlStore,
  type Target,
} from '../../../sdk/index.js';
import { threadNotFound } from './errors.js';
import { fixedFrom, fixedOf, fullRequest, historyOf, threadParam, type ThreadParam } from './history.js';
import { THREAD_MIGRATIONS, THREADS_NAMESPACE } from './migrations.js';
import { ThreadRepository, type ThreadTurn } from './store.js';

type Json = Record<string, unknown>;

/** What the door knows of one request's thread (kept under {@link THREAD}). */
interface ThreadState {
  workspaceId: string;
  param: ThreadParam;
  /** The turns a continue follows on, oldest first; null for a create, or a continue the gateway holds no thread for. */
  turns: ThreadTurn[] | null;
  /** Whether the gateway keeps threads (an SQL store): then a continue it holds no thread for is refused on every leaf. */
  kept: boolean;
  /** How the last leaf called sent it: the one that answers (a fallback's earlier leaves failed). */
  leaf: { provider: string; native: boolean; upstream: string | null } | null;
}
const THREAD = stateKey<ThreadState>('messages.thread');

/**
 * Anthropic keeps a thread usable for 5 minutes after the last turn it stored. A continue whose last turn is
 * older than this goes up as the whole conversation (a new upstream thread) instead of one Anthropic would
 * refuse with 404; a minute of margin for clocks and the request's own time.
 */
export const UPSTREAM_ALIVE_MS = 4 * 60_000;

/** Providers whose own Messages API keeps threads: the client's `thread` goes up to them as sent. */
const THREADING_PROVIDERS: ReadonlySet<string> = new Set(['anthropic']);

export interface ThreadOptions {
  /** The SQL store the turns are kept in (`api.stores`). */
  store: string;
  /** A thread is continued while one of its turns is younger than this; expired threads are deleted. */
  ttlMs: number;
  /** Longest answer kept as a turn; a longer one is not stored (its thread cannot be continued through the gateway). */
  maxTurnBytes: number;
}

/** What the door's translation and hooks call: the thread's part in building each leaf's request. */
export interface Threads {
  /** Checks `thread` and loads the turns a continue follows on; called once the body passed its schema. */
  prepare(ctx: RequestContext, body: Json): Promise<void>;
  /** The body a translated leaf starts from: the whole conversation, never `thread`. */
  translated(ctx: RequestContext, body: Json, target: Target): Json;
  /** The body a native leaf gets when it must differ from the client's (see {@link RouteTranslation.native}). */
  native(ctx: RequestContext, target: Target): Json | null;
  /** Watches a successful answer to store it as the thread's next turn. */
  observe(response: GatewayResponse, ctx: RequestContext): GatewayResponse;
}

/**
 * Anthropic's server-held threads (`thread: {"type": "create"}`, then `{"type": "continue", "previous_message_id"}`
 * with only the new messages) for every provider (docs/formats.md, "Threads"): the gateway stores each answered
 * turn per workspace and rebuilds the conversation for a provider that cannot hold it; Anthropic's own API gets
 * the client's `thread` as sent while it holds the thread itself.
 */
export function messageThreads(api: PluginAPI, opts: ThreadOptions, tenant: (ctx: RequestContext) => string | Promise<string>): Threads {
  let repository: ThreadRepository | null = null;
  /** Turns not written yet, by workspace and id: a continue that names one waits for it. */
  const pending = new Map<string, Promise<void>>();
  const key = (workspaceId: string, id: string) => `${workspaceId}\u0000${id}`;
  const credentials = credentialDigest([...api.targetFields.credentials()]);
  /** The Anthropic account a target calls: its host and its credentials' digest, digested again (no secret is stored). */
  const upstreamOf = (target: Target) =>
    createHash('sha256').update(`${typeof target.custom_host === 'string' ? target.custom_host : ''}\n${credentials(target)}`).digest('hex').slice(0, 32);

  const save = (ctx: RequestContext, st: ThreadState, message: Json): void => {
    if (repository === null || typeof message.id !== 'string' || !Array.isArray(message.content)) return;
    // A continue of a thread the gateway does not hold (answered natively) is not stored: its history would be partial.
    if (st.param.type === 'continue' && st.turns === null) return;
    const body = ctx.body ?? {};
    const id = message.id;
    const k = key(st.workspaceId, id);
    const write = repository
      .insert({
        workspaceId: st.workspaceId,
        id,
        threadId: st.turns?.[0]?.threadId ?? id,
        previousId: st.param.type === 'continue' ? st.param.previousId : null,
        createdAt: Date.now(),
        provider: st.leaf?.provider ?? ctx.provider?.name ?? null,
        native: st.leaf?.native === true && ctx.cacheStatus !== 'HIT',
        upstream: st.leaf?.upstream ?? null,
        model: typeof message.model === 'string' ? message.model : ctx.model,
        fixed: fixedFrom(body),
        inputMessages: Array.isArray(body.messages) ? (body.messages as Json[]) : [],
        output: message.content as Json[],
      })
      .catch((err: unknown) => ctx.log.error({ err }, 'messages: storing a thread turn failed'))
      .finally(() => {
        if (pending.get(k) === write) pending.delete(k);
      });
    pending.set(k, write);
  };

  let timer: NodeJS.Timeout | null = null;
  api.onReady(async () => {
    const store = api.stores.get(opts.store) as SqlStore | undefined;
    if (store === undefined || typeof store.client !== 'function') {
      api.logger.warn({ store: opts.store }, `messages: no SQL store named "${opts.store}": threads are kept only by providers that keep them (Anthropic)`);
      return;
    }
    const client = store.client();
    await migrate(client, THREADS_NAMESPACE, THREAD_MIGRATIONS);
    repository = new ThreadRepository(client);
    const run = () => {
      repository!.deleteExpired(Date.now() - opts.ttlMs).catch((err: unknown) => api.logger.warn({ err }, 'messages: deleting expired threads failed'));
    };
    timer = setInterval(run, Math.min(opts.ttlMs, 60_000));
    timer.unref();
    run();
  });
  api.onClose(async () => {
    if (timer !== null) clearInterval(timer);
    await Promise.allSettled([...pending.values()]);
  });

  return {
    async prepare(ctx, body) {
      const param = threadParam(body.thread);
      if (param === null) return;
      const st: ThreadState = { workspaceId: await tenant(ctx), param, turns: null, kept: repository !== null, leaf: null };
      if (param.type === 'continue' && repository !== null) {
        await pending.get(key(st.workspaceId, param.previousId));
        const turns = await chainOf(ctx, repository, st.workspaceId, param.previousId, opts.ttlMs);
        if (turns.length > 0) {
          st.turns = turns;
          // The rebuilt conversation is prompt the body does not show: limits reserve for it (docs/limits.md).
          const fixed = fixedOf(turns);
          addImplicitPromptTokens(ctx, estimatePromptTokens({ messages: historyOf(turns), system: fixed.system ?? null, tools: fixed.tools ?? null }));
        }
      }
      ctx.set(THREAD, st);
    },

    translated(ctx, body, target) {
      const st = ctx.get(THREAD);
      if (st === undefined) return body;
      st.leaf = { provider: providerOf(target), native: false, upstream: null };
      return withoutThread(ctx, st, body);
    },

    native(ctx, target) {
      const st = ctx.get(THREAD);
      const provider = providerOf(target);
      if (st === undefined) {
        // `thread: null` means no thread; a platform without threads is not sent the field at all.
        if (THREADING_PROVIDERS.has(provider) || ctx.body === null || !('thread' in ctx.body)) return null;
        const { thread: _thread, ...rest } = effectiveBody(ctx, target) ?? {};
        return rest;
      }
      const body = effectiveBody(ctx, target) ?? {};
      if (!THREADING_PROVIDERS.has(provider)) {
        st.leaf = { provider, native: false, upstream: null };
        return withoutThread(ctx, st, body);
      }
      const upstream = upstreamOf(target);
      st.leaf = { provider, native: true, upstream };
      if (st.param.type === 'create') return null;
      if (st.turns === null) {
        // The gateway keeps threads, and this workspace has none by that id: refused, even where Anthropic might hold
        // one by it (another workspace's, on a shared account). Without a store there is no workspace to check: as sent.
        if (st.kept) throw threadNotFound(st.param.previousId);
        return null;
      }
      const last = st.turns.at(-1)!;
      // That account holds the thread up to the last turn, and still has it: the client's continue as sent.
      if (last.native && last.upstream === upstream && Date.now() - last.createdAt < UPSTREAM_ALIVE_MS) return null;
      // Else the whole conversation, as a new thread upstream: the next continue from this answer goes up as sent.
      return { ...fullRequest(body, st.turns), thread: { type: 'create' } };
    },

    observe(response, ctx) {
      const st = ctx.get(THREAD);
      if (st === undefined || repository === null || response.body === null) return response;
      const observer = turnObserver(hasEventStreamType(response), opts.maxTurnBytes, (message) => save(ctx, st, message));
      response.observers = response.observers === null ? [observer] : [...response.observers, observer];
      return response;
    },
  };
}

/** How long a continue that finds nothing waits before looking once more: the turn may be committing on another replica. */
const MISS_RETRY_MS = 150;

/**
 * The turns a continue follows on: the chain, looked up once more after {@link MISS_RETRY_MS} when nothing is found
 * (replicas share the store, and the client sends its next turn as soon as it has the answer, which may be before
 * the replica that answered committed it). A store that fails is logged and counts as no thread: the client replays.
 */
async function chainOf(ctx: RequestContext, repository: ThreadRepository, workspaceId: string, id: string, ttlMs: number): Promise<ThreadTurn[]> {
  try {
    const first = await repository.chain(workspaceId, id, Date.now() - ttlMs);
    if (first.length > 0) return first;
    await new Promise((r) => setTimeout(r, MISS_RETRY_MS));
    return await repository.chain(workspaceId, id, Date.now() - ttlMs);
  } catch (err) {
    ctx.log.error({ err }, 'messages: reading a thread failed; answered as no thread');
    return [];
  }
}

/** The body for a leaf that cannot hold the thread: the whole conversation on a continue, and never `thread`. */
function withoutThread(_ctx: RequestContext, st: ThreadState, body: Json): Json {
  if (st.param.type === 'continue') {
    if (st.turns === null) throw threadNotFound(st.param.previousId);
    return fullRequest(body, st.turns);
  }
  const { thread: _thread, ...rest } = body;
  return rest;
}

/** The Messages answer going out, as one message: JSON parsed whole, a stream assembled once it ended with `message_stop`. */
function turnObserver(sse: boolean, limit: number, done: (message: Json) => void): BodyObserver {
  return wholeBodyObserver(limit, (bytes) => {
    const text = bytes.toString('utf8');
    let message: unknown = null;
    if (sse) message = anthropic.assembleMessage(text);
    else {
      try {
        message = JSON.parse(text);
      } catch {
        return;
      }
    }
    if (isObject(message) && message.type === 'message') done(message);
  });
}

function providerOf(target: Target): string {
  return typeof target.provider === 'string' ? target.provider : '';
}

