import { createHash } from 'node:crypto';
import { sendJson, startRecordingServer } from '../../server/testing/mock-http.js';

/**
 * OpenAI-wire deployments on one server, each under its own path prefix (`/<name>/v1`): each tenant
 * of the isolation matrix gets its own (`a`, `b`), and `shared` stands for one deployment both
 * reach through an organisation-wide integration. What an answer does is said by the request's last
 * user message, so a probe steers one tenant's traffic without touching the other's:
 *
 * - `quota:<n>`: 200, reporting `n` tokens left until a reset in 6 minutes (OpenAI's headers);
 * - `busy:<s>`: 429 with `retry-after: <s>`;
 * - `fail`: 503;
 * - anything else: 200 with plenty of headroom.
 *
 * Every answer names the deployment and counts its answers (`from a #3`), so an answer served from a
 * cache or by the wrong deployment shows. `POST …/embeddings` answers a vector of the input's words
 * (hashed into 64 dimensions), so texts with the same words embed alike.
 */
export async function startTenantUpstream() {
  const served = new Map<string, number>();
  const server = await startRecordingServer((req, res, seen) => {
    const [, name, version, ...rest] = req.url!.split('?')[0]!.split('/');
    const path = rest.join('/');
    if (name === undefined || version !== 'v1') return sendJson(res, 404, { error: { message: 'no such deployment', type: 'invalid_request_error', param: null, code: null } });
    const body = (seen.body ?? {}) as { model?: string; messages?: Array<{ role: string; content: unknown }>; input?: unknown };
    if (path === 'embeddings') {
      const inputs = Array.isArray(body.input) ? body.input : [body.input];
      return sendJson(res, 200, {
        object: 'list',
        model: body.model ?? 'embed',
        data: inputs.map((text, index) => ({ object: 'embedding', index, embedding: wordVector(String(text)) })),
        usage: { prompt_tokens: 4, total_tokens: 4 },
      });
    }
    if (path !== 'chat/completions') return sendJson(res, 404, { error: { message: `no route ${path}`, type: 'invalid_request_error', param: null, code: null } });
    const last = [...(body.messages ?? [])].reverse().find((m) => m.role === 'user');
    const said = typeof last?.content === 'string' ? last.content : '';
    const busy = /busy:(\d+)/.exec(said);
    if (busy !== null) {
      return sendJson(res, 429, { error: { message: 'Rate limit reached', type: 'requests', param: null, code: 'rate_limit_exceeded' } }, { 'retry-after': busy[1]! });
    }
    if (said.includes('fail')) return sendJson(res, 503, { error: { message: 'upstream failure', type: 'server_error', param: null, code: null } });
    const quota = /quota:(\d+)/.exec(said);
    const count = (served.get(name) ?? 0) + 1;
    served.set(name, count);
    sendJson(
      res,
      200,
      {
        id: `chatcmpl-${name}-${count}`,
        object: 'chat.completion',
        created: 1,
        model: body.model ?? 'm',
        choices: [{ index: 0, message: { role: 'assistant', content: `from ${name} #${count}` }, finish_reason: 'stop', logprobs: null }],
        usage: { prompt_tokens: 5, completion_tokens: 4, total_tokens: 9 },
      },
      {
        'x-ratelimit-remaining-tokens': quota === null ? '10000000' : quota[1]!,
        'x-ratelimit-reset-tokens': '6m0s',
        'x-ratelimit-remaining-requests': '10000',
        'x-ratelimit-reset-requests': '1s',
      },
    );
  });
  return {
    url: server.url,
    /** The base URL of a deployment. */
    host: (name: string) => `${server.url}/${name}/v1`,
    /** Chat answers a deployment gave. */
    served: (name: string) => served.get(name) ?? 0,
    close: server.close,
  };
}

export type TenantUpstream = Awaited<ReturnType<typeof startTenantUpstream>>;

/** The input's lower-case words, each hashed into one of 64 dimensions and counted. */
function wordVector(text: string): number[] {
  const v = new Array<number>(64).fill(0);
  for (const word of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) v[createHash('sha256').update(word).digest()[0]! % 64]! += 1;
  return v;
}
