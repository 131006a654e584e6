import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GatewayError, type AuthInfo, type GatewayPlugin } from '../../../core/index.js';
import type { CacheStore } from '../../../plugins/cache/types.js';

/**
 * A test auth plugin: `x-gateway-api-key` → the AuthInfo listed for it, so a
 * test can give two keys two workspaces (or one workspace).
 */
export function workspaceAuth(keys: Record<string, string | null>): GatewayPlugin {
  return {
    name: 'test-workspace-auth',
    apply(api) {
      api.hooks.auth.tap('test-workspace-auth', (ctx) => {
        const key = ctx.header('x-gateway-api-key');
        if (key === undefined || !(key in keys)) throw new GatewayError('unauthorized', 'unknown test key');
        return { keyId: `test:${key}`, workspaceId: keys[key]!, scopes: ['*'] } satisfies AuthInfo;
      });
    },
  };
}

export const DIMENSIONS = 256;

/** Bag of words hashed into 256 dimensions: lower-cased runs of letters and digits, each counted once per occurrence. */
export function bagOfWords(text: string): number[] {
  const vector = new Array<number>(DIMENSIONS).fill(0);
  for (const word of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
    const slot = createHash('sha256').update(word).digest().readUInt32BE(0) % DIMENSIONS;
    vector[slot]! += 1;
  }
  return vector;
}

export interface MockEmbeddings {
  url: string;
  baseURL: string;
  /** Inputs seen, in order. */
  inputs: string[];
  /** When set, every request gets this status with an error body. */
  failWith: number | null;
  close(): Promise<void>;
}

/** A deterministic OpenAI-style embeddings server: `POST /v1/embeddings` answers `bagOfWords(input)`. */
export async function startMockEmbeddings(): Promise<MockEmbeddings> {
  const state = { inputs: [] as string[], failWith: null as number | null };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as { input?: string | string[]; model?: string };
      const inputs = Array.isArray(body.input) ? body.input : [String(body.input ?? '')];
      state.inputs.push(...inputs);
      if (req.url !== '/v1/embeddings' || state.failWith !== null) {
        const status = state.failWith ?? 404;
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'mock embeddings failure', type: 'server_error', param: null, code: null } }));
        return;
      }
      const data = inputs.map((input, index) => ({ object: 'embedding', index, embedding: bagOfWords(input) }));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ object: 'list', data, model: body.model, usage: { prompt_tokens: 4, total_tokens: 4 } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return Object.assign(state, {
    url,
    baseURL: `${url}/v1`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}

/** POSTs JSON to a gateway route and reads the answer as text. */
export async function post(url: string, path: string, body: unknown, headers: Record<string, string>) {
  const res = await fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const text = await res.text();
  return { res, status: res.status, text, cacheStatus: res.headers.get('x-gateway-cache-status'), json: () => JSON.parse(text) };
}

/** Lets the cache finish a save: it runs on a later turn of the event loop, after the response ended. */
export async function settle(ms = 30): Promise<void> {
  await new Promise((r) => setTimeout(r, ms));
}

/** Polls `check` until it returns true (a save finished, a log line was written), failing after `timeoutMs`. */
export async function until(check: () => boolean | Promise<boolean>, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A store wrapper that counts writes, registered under the name the cache plugin looks up (`cache-memory` by default). */
export function countingStore(inner: CacheStore, name = 'cache-memory') {
  const counts = { sets: 0, candidates: 0 };
  const store: CacheStore = {
    name: inner.name,
    get: (key) => inner.get(key),
    set: async (key, answer, ttlMs) => {
      await inner.set(key, answer, ttlMs);
      counts.sets++;
    },
    candidates: (scope, limit) => inner.candidates(scope, limit),
    addCandidate: async (scope, candidate, limit, ttlMs) => {
      await inner.addCandidate(scope, candidate, limit, ttlMs);
      counts.candidates++;
    },
  };
  const plugin: GatewayPlugin = { name: `test-store-${name}`, apply: (api) => api.stores.add(name, store) };
  return { store, counts, plugin };
}

export interface MockChatAndEmbeddings {
  url: string;
  baseURL: string;
  /** Requests seen, in order: path, authorization header and parsed body. */
  requests: Array<{ path: string; authorization: string | undefined; body: Record<string, any> }>;
  close(): Promise<void>;
}

/**
 * One OpenAI-style upstream for both calls a semantic lookup makes: `POST /v1/embeddings` answers
 * `bagOfWords(input)`, `POST /v1/chat/completions` a fixed chat completion (JSON, with usage).
 */
export async function startMockChatAndEmbeddings(): Promise<MockChatAndEmbeddings> {
  const requests: MockChatAndEmbeddings['requests'] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, any>;
      requests.push({ path: req.url ?? '', authorization: req.headers.authorization, body });
      let answer: unknown;
      if (req.url === '/v1/embeddings') {
        const inputs: string[] = Array.isArray(body.input) ? body.input : [String(body.input ?? '')];
        answer = { object: 'list', data: inputs.map((input, index) => ({ object: 'embedding', index, embedding: bagOfWords(input) })), model: body.model, usage: { prompt_tokens: 4, total_tokens: 4 } };
      } else if (req.url === '/v1/chat/completions') {
        answer = {
          id: `chatcmpl-${requests.length}`,
          object: 'chat.completion',
          created: 1_700_000_000,
          model: body.model,
          choices: [{ index: 0, message: { role: 'assistant', content: 'Paris.' }, logprobs: null, finish_reason: 'stop' }],
          usage: { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 },
        };
      } else {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'not found', type: 'invalid_request_error', param: null, code: null } }));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    baseURL: `${url}/v1`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
