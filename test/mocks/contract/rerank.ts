import type { SeenNativeRequest } from '../../../server/testing/index.js';
import { sendJson, startRecordingServer } from '../../../server/testing/index.js';

/**
 * Rerank-only provider mocks (shared/providers/cohere.md §3): Jina
 * (`POST /rerank` → `results[]`, `usage.total_tokens`, documents echoed as
 * `{text}` when asked) and Voyage (`POST /rerank` with `top_k` → `data[]`,
 * `usage.total_tokens`, documents as plain strings). Both want `Authorization:
 * Bearer <key>`; errors are FastAPI-style `{"detail": …}`. Scores: shorter
 * documents rank higher.
 */

export const RERANK_KEY = 'rr-test-key';

export interface RerankMock {
  baseURL: string;
  requests: SeenNativeRequest[];
  close(): Promise<void>;
}

export async function startRerankMock(kind: 'jina' | 'voyage'): Promise<RerankMock> {
  const rec = await startRecordingServer((req, res, seen) => {
    if (req.headers.authorization !== `Bearer ${RERANK_KEY}`) return sendJson(res, 401, { detail: 'Invalid API key' });
    if (seen.method !== 'POST' || seen.path !== '/rerank') return sendJson(res, 404, { detail: 'Not Found' });
    const body = seen.body as Record<string, any>;
    if (!Array.isArray(body?.documents) || typeof body.query !== 'string') return sendJson(res, 422, { detail: [{ loc: ['body', 'documents'], msg: 'field required', type: 'value_error.missing' }] });
    if (kind === 'voyage' && 'top_n' in body) return sendJson(res, 400, { detail: "Unknown parameter 'top_n'; use top_k" });
    if (body.query === 'overload') return sendJson(res, 429, { detail: 'Rate limit exceeded' }, { 'retry-after': '4' });
    const limit = kind === 'voyage' ? body.top_k : body.top_n;
    const scored = (body.documents as string[]).map((d, index) => ({ index, relevance_score: 1 / (1 + d.length), d }));
    scored.sort((a, b) => b.relevance_score - a.relevance_score);
    const top = typeof limit === 'number' ? scored.slice(0, limit) : scored;
    if (kind === 'jina') {
      return sendJson(res, 200, {
        model: body.model,
        usage: { total_tokens: 815 },
        results: top.map(({ index, relevance_score, d }) => (body.return_documents === false ? { index, relevance_score } : { index, relevance_score, document: { text: d } })),
      });
    }
    sendJson(res, 200, {
      object: 'list',
      data: top.map(({ index, relevance_score, d }) => (body.return_documents === true ? { index, relevance_score, document: d } : { index, relevance_score })),
      model: body.model,
      usage: { total_tokens: 26 },
    });
  });
  return { baseURL: rec.url, requests: rec.requests, close: rec.close };
}
