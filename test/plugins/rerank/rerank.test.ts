import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { config } from '../../../plugins/config/index.js';
import { cohere } from '../../../plugins/providers/cohere/index.js';
import { rerank } from '../../../plugins/rerank/index.js';
import { serveGateway } from '../../helpers/serve.js';
import { COHERE_KEY, startCohereContractMock } from '../../mocks/contract/cohere.js';
import { RERANK_KEY, startRerankMock, type RerankMock } from '../../mocks/contract/rerank.js';
import type { ContractMock } from '../../../server/testing/index.js';

let jina: RerankMock;
let voyage: RerankMock;
let co: ContractMock;
let gw: Awaited<ReturnType<typeof serveGateway>>;

beforeAll(async () => {
  [jina, voyage, co] = await Promise.all([startRerankMock('jina'), startRerankMock('voyage'), startCohereContractMock()]);
  gw = await serveGateway({ plugins: [config(), rerank(), cohere()] });
});
afterAll(async () => {
  await gw.close();
  await Promise.all([jina.close(), voyage.close(), co.close()]);
});

const targets = {
  jina: () => ({ provider: 'jina', api_key: RERANK_KEY, custom_host: jina.baseURL }),
  voyage: () => ({ provider: 'voyage', api_key: RERANK_KEY, custom_host: voyage.baseURL }),
  cohere: () => ({ provider: 'cohere', api_key: COHERE_KEY, custom_host: co.baseURL }),
};

async function post(target: Record<string, unknown>, body: unknown) {
  const res = await fetch(`${gw.url}/v1/rerank`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-gateway-config': JSON.stringify(target) }, body: JSON.stringify(body) });
  return { status: res.status, headers: res.headers, body: (await res.json()) as any };
}

const DOCS = ['a fairly long document about nothing much', { text: 'short', id: 'doc-2' }, 'medium length doc'];

describe('POST /v1/rerank validation (spec limits)', () => {
  test.each([
    ['model missing', { query: 'q', documents: ['a'] }, 'model'],
    ['model not a string', { model: 1, query: 'q', documents: ['a'] }, 'model'],
    ['query missing', { model: 'm', documents: ['a'] }, 'query'],
    ['documents missing', { model: 'm', query: 'q' }, 'documents'],
    ['documents empty (minimum 1)', { model: 'm', query: 'q', documents: [] }, 'documents'],
    ['a document neither string nor object', { model: 'm', query: 'q', documents: ['a', 3] }, 'documents[1]'],
    ['an object document without text', { model: 'm', query: 'q', documents: ['a', { title: 'x' }] }, 'documents[1].text'],
    ['top_n 0 (minimum 1)', { model: 'm', query: 'q', documents: ['a'], top_n: 0 }, 'top_n'],
    ['top_n not an integer', { model: 'm', query: 'q', documents: ['a'], top_n: 1.5 }, 'top_n'],
    ['max_tokens_per_doc 0 (minimum 1)', { model: 'm', query: 'q', documents: ['a'], max_tokens_per_doc: 0 }, 'max_tokens_per_doc'],
    ['return_documents not a boolean', { model: 'm', query: 'q', documents: ['a'], return_documents: 'yes' }, 'return_documents'],
    ['rank_fields not strings', { model: 'm', query: 'q', documents: ['a'], rank_fields: [1] }, 'rank_fields[0]'],
    ['truncation not a boolean', { model: 'm', query: 'q', documents: ['a'], truncation: 'END' }, 'truncation'],
    ['priority not a number', { model: 'm', query: 'q', documents: ['a'], priority: 'high' }, 'priority'],
    ['parameters not an object', { model: 'm', query: 'q', documents: ['a'], parameters: [1] }, 'parameters'],
  ])('%s → 400 naming %s, no upstream call', async (_name, body, param) => {
    const before = jina.requests.length;
    const r = await post(targets.jina(), body);
    expect(r.status).toBe(400);
    expect(r.body.error.type).toBe('invalid_request_error');
    expect(r.body.error.param).toBe(param);
    expect(r.body.error.message).toContain(`'${param}'`);
    expect(jina.requests.length).toBe(before);
  });

  test('the smallest valid body passes (top_n 1, max_tokens_per_doc 1, one document)', async () => {
    const r = await post(targets.cohere(), { model: 'rerank-v3.5', query: 'q', documents: ['a'], top_n: 1, max_tokens_per_doc: 1, priority: 0, rank_fields: ['text'], truncation: true, parameters: {} });
    expect(r.status).toBe(200);
  });
});

describe('rerank providers', () => {
  test('cohere v2: strings sent, prefix stripped, results sorted, documents re-attached, search units', async () => {
    const r = await post(targets.cohere(), { model: 'cohere/rerank-v3.5', query: 'q', documents: DOCS, top_n: 2, return_documents: true, max_tokens_per_doc: 512 });
    expect(r.status).toBe(200);
    expect(co.requests.at(-1)!.path).toBe('/v2/rerank');
    expect(co.requests.at(-1)!.body).toEqual({ model: 'rerank-v3.5', query: 'q', documents: ['a fairly long document about nothing much', 'short', 'medium length doc'], top_n: 2, max_tokens_per_doc: 512 });
    expect(r.body).toEqual({
      object: 'list',
      results: [
        { index: 1, relevance_score: 0.166667, document: { text: 'short' } },
        { index: 2, relevance_score: 0.055556, document: { text: 'medium length doc' } },
      ],
      model: 'rerank-v3.5',
      id: '07734bd2-2473-4f07-94e1-0d9f0e6843cf',
      usage: { search_units: 1 },
      provider: 'cohere',
    });
  });

  test('cohere: no documents in the answer unless return_documents; an upstream 429 keeps its retry hint', async () => {
    const r = await post(targets.cohere(), { model: 'rerank-v3.5', query: 'q', documents: ['x', 'yy'] });
    expect(r.body.results).toEqual([
      { index: 0, relevance_score: 0.5 },
      { index: 1, relevance_score: 0.333333 },
    ]);
    const limited = await post(targets.cohere(), { model: 'rerank-v3.5', query: 'fail', documents: ['x'] });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('3');
    expect(limited.body.error.message).toBe('You are using a Trial key');
  });

  test('jina: top_n, parameters merged, documents not asked back, spec shape', async () => {
    const r = await post(targets.jina(), { model: 'jina/jina-reranker-v2-base-multilingual', query: 'q', documents: DOCS, top_n: 2, return_documents: true, parameters: { truncation: true } });
    expect(r.status).toBe(200);
    expect(jina.requests.at(-1)!.body).toEqual({ model: 'jina-reranker-v2-base-multilingual', query: 'q', documents: ['a fairly long document about nothing much', 'short', 'medium length doc'], return_documents: false, top_n: 2, truncation: true });
    expect(r.body.object).toBe('list');
    expect(r.body.provider).toBe('jina');
    expect(r.body.model).toBe('jina-reranker-v2-base-multilingual');
    expect(r.body.usage).toEqual({ search_units: 1 });
    expect(typeof r.body.id).toBe('string');
    expect(r.body.results.map((x: any) => [x.index, x.document.text])).toEqual([
      [1, 'short'],
      [2, 'medium length doc'],
    ]);
  });

  test('voyage: top_n → top_k, truncation passed, data[] read, sorted descending', async () => {
    const r = await post(targets.voyage(), { model: 'rerank-2', query: 'q', documents: DOCS, top_n: 3, truncation: false });
    expect(r.status).toBe(200);
    expect(voyage.requests.at(-1)!.body).toEqual({ model: 'rerank-2', query: 'q', documents: ['a fairly long document about nothing much', 'short', 'medium length doc'], return_documents: false, top_k: 3, truncation: false });
    const scores = r.body.results.map((x: any) => x.relevance_score);
    expect([...scores].sort((a: number, b: number) => b - a)).toEqual(scores);
    expect(r.body.results.map((x: any) => x.index)).toEqual([1, 2, 0]);
    expect(r.body.results[0].document).toBeUndefined();
  });

  test('FastAPI-style errors keep their detail and status; a bad key is 401', async () => {
    const limited = await post(targets.voyage(), { model: 'rerank-2', query: 'overload', documents: ['a'] });
    expect(limited.status).toBe(429);
    expect(limited.body.error).toMatchObject({ message: 'Rate limit exceeded', type: 'voyage_error', code: '429' });
    expect(limited.headers.get('retry-after-ms')).toBe('4000');
    const bad = await post({ ...targets.jina(), api_key: 'wrong' }, { model: 'm', query: 'q', documents: ['a'] });
    expect(bad.status).toBe(401);
    expect(bad.body.error.message).toBe('Invalid API key');
  });

  test('a rerank provider that is not loaded is a 400 unknown_provider', async () => {
    const r = await post({ provider: 'cohere', api_key: COHERE_KEY, custom_host: co.baseURL }, { model: 'm', query: 'q', documents: ['a'] });
    expect(r.status).toBe(200);
    const local = await serveGateway({ plugins: [config(), rerank({ providers: ['jina'] }), cohere({ rerank: false })] });
    try {
      const res = await fetch(`${local.url}/v1/rerank`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-gateway-config': JSON.stringify({ provider: 'voyage', api_key: 'k' }) }, body: JSON.stringify({ model: 'm', query: 'q', documents: ['a'] }) });
      expect(res.status).toBe(400);
      expect(((await res.json()) as any).error.code).toBe('unknown_provider');
    } finally {
      await local.close();
    }
  });
});
