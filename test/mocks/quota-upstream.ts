import { startRecordingServer, sendJson } from '../../server/testing/mock-http.js';

/** What one of the mock's targets saw. */
export interface QuotaTarget {
  /** Tokens left in its bucket (requests are charged their prompt, characters / 4, plus `max_tokens`). */
  tokensLeft: number;
  served: number;
  refused: number;
  /** Conversation keys (the first user message) it has answered before: its prompt cache. */
  cache: Set<string>;
  /** Requests per conversation key. */
  conversations: Map<string, number>;
  /** Each request's arrival, performance.now(). */
  arrivals: number[];
}

/**
 * OpenAI-wire targets on one server, each under its own path prefix (`/<name>/v1`), each with a token
 * bucket it reports as OpenAI does (`x-ratelimit-remaining-tokens`, `x-ratelimit-reset-tokens`) and a
 * 429 with `retry-after` when a request does not fit; a prompt cache per conversation (the first user
 * message), reported as `prompt_tokens_details.cached_tokens`; and, per target, a delay and a status.
 */
export async function startQuotaUpstream(names: readonly string[], tokens: Record<string, number> = {}) {
  const targets = new Map<string, QuotaTarget>();
  const behaviour = new Map<string, { delayMs: number; status: number }>();
  for (const n of names) {
    targets.set(n, { tokensLeft: tokens[n] ?? 1_000_000, served: 0, refused: 0, cache: new Set(), conversations: new Map(), arrivals: [] });
    behaviour.set(n, { delayMs: 0, status: 200 });
  }
  const server = await startRecordingServer((req, res, seen) => {
    const name = req.url!.split('/')[1]!;
    const t = targets.get(name);
    if (t === undefined) return sendJson(res, 404, { error: { message: 'no such target', type: 'invalid_request_error', param: null, code: null } });
    t.arrivals.push(performance.now());
    const body = (seen.body ?? {}) as { messages?: Array<{ role: string; content: string }>; max_tokens?: number; model?: string };
    const messages = body.messages ?? [];
    const chars = messages.reduce((n, m) => n + String(m.content).length, 0);
    const cost = Math.ceil(chars / 4) + (body.max_tokens ?? 0);
    const { delayMs, status } = behaviour.get(name)!;
    setTimeout(() => {
      if (res.destroyed) return;
      if (status !== 200) return sendJson(res, status, { error: { message: `status ${status}`, type: 'server_error', param: null, code: null } });
      if (cost > t.tokensLeft) {
        t.refused++;
        return sendJson(res, 429, { error: { message: 'Rate limit reached for tokens', type: 'tokens', param: null, code: 'rate_limit_exceeded' } }, {
          'retry-after': '30',
          'x-ratelimit-remaining-tokens': String(t.tokensLeft),
          'x-ratelimit-reset-tokens': '30s',
        });
      }
      t.tokensLeft -= cost;
      t.served++;
      const conversation = messages.find((m) => m.role === 'user')?.content ?? '';
      t.conversations.set(conversation, (t.conversations.get(conversation) ?? 0) + 1);
      const cached = t.cache.has(conversation) ? Math.ceil(chars / 4) : 0;
      t.cache.add(conversation);
      sendJson(
        res,
        200,
        {
          id: `chatcmpl-${name}`,
          object: 'chat.completion',
          created: 1,
          model: body.model ?? 'm',
          choices: [{ index: 0, message: { role: 'assistant', content: `from ${name}` }, finish_reason: 'stop', logprobs: null }],
          usage: { prompt_tokens: Math.ceil(chars / 4), completion_tokens: 2, total_tokens: Math.ceil(chars / 4) + 2, prompt_tokens_details: { cached_tokens: cached } },
        },
        { 'x-ratelimit-remaining-tokens': String(t.tokensLeft), 'x-ratelimit-reset-tokens': '30s', 'x-ratelimit-remaining-requests': '1000', 'x-ratelimit-reset-requests': '1s' },
      );
    }, delayMs);
  });
  return {
    url: server.url,
    targets,
    /** The custom_host of a target. */
    host: (name: string) => `${server.url}/${name}/v1`,
    set(name: string, b: Partial<{ delayMs: number; status: number }>) {
      Object.assign(behaviour.get(name)!, b);
    },
    close: server.close,
  };
}
