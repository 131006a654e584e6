import type { ServerResponse } from 'node:http';
import type { ContractMock, Scenario } from '../../../server/testing/index.js';
import { sendJson, startRecordingServer, writeEvents } from '../../../server/testing/index.js';

/**
 * The contract mock for the Gemini API (Google AI Studio), per
 * shared/providers/vertex.md §3–§6 and §8: `/v1beta/models/{model}:generateContent`,
 * `:streamGenerateContent?alt=sse` (events separated by `\r\n\r\n`) and
 * `:batchEmbedContents`, with the key in `x-goog-api-key`.
 */

export const GOOGLE_STATUS: Readonly<Record<number, string>> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

/** Google's error envelope. */
export function sendGoogleError(res: ServerResponse, code: number, message: string, headers: Record<string, string> = {}, details?: unknown[]): void {
  sendJson(res, code, { error: { code, message, status: GOOGLE_STATUS[code] ?? 'UNKNOWN', ...(details ? { details } : {}) } }, headers);
}

const USAGE = { promptTokenCount: 9, cachedContentTokenCount: 3, candidatesTokenCount: 2, totalTokenCount: 11, promptTokensDetails: [{ modality: 'TEXT', tokenCount: 9 }] };
const FINISH = { stop: 'STOP', length: 'MAX_TOKENS', content_filter: 'SAFETY' } as const;

/** One SSE event as Gemini frames it (CRLF). */
const event = (value: unknown) => `data: ${JSON.stringify(value)}\r\n\r\n`;

/**
 * Answers a Gemini generate call for a scenario: JSON or SSE. `n` candidates
 * are returned when the request asks for `candidateCount`.
 */
export function answerGemini(res: ServerResponse, scenario: Scenario, stream: boolean, request: any, model: string): void {
  const s = scenario;
  if (s.kind === 'error') {
    const headers: Record<string, string> = s.status === 429 ? { 'retry-after': '7' } : {};
    const details = s.status === 429 ? [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '7s' }] : undefined;
    return sendGoogleError(res, s.status, `Mock error ${s.status}`, headers, details);
  }
  const base = { modelVersion: `${model}-001`, responseId: 'mock-response-id' };
  const call = { functionCall: { name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: 'c2lnbmF0dXJl' };
  if (!stream) {
    const finish = s.kind === 'text' ? FINISH[s.finish ?? 'stop'] : 'STOP';
    const parts = s.kind === 'tool_call' ? [call] : [{ text: 'Hello!' }];
    const n = request?.generationConfig?.candidateCount ?? 1;
    const candidates = Array.from({ length: n }, (_, index) => ({ content: { role: 'model', parts }, finishReason: finish, index }));
    return sendJson(res, 200, { candidates, usageMetadata: USAGE, ...base });
  }
  const chunk = (parts: unknown[], finishReason?: string, usage: object = { promptTokenCount: 9, candidatesTokenCount: 1, totalTokenCount: 10 }) =>
    event({ candidates: [{ content: { role: 'model', parts }, ...(finishReason ? { finishReason } : {}), index: 0 }], usageMetadata: usage, ...base });
  if (s.kind === 'stream_error') {
    return writeEvents(res, [chunk([{ text: 'Hel' }]), event({ error: { code: 500, message: 'Mock stream failure', status: 'INTERNAL' } })]);
  }
  if (s.kind === 'tool_call') return writeEvents(res, [chunk([call], 'STOP', USAGE)]);
  writeEvents(res, [chunk([{ text: 'Hello' }]), chunk([{ text: '!' }], FINISH[s.finish ?? 'stop'], USAGE)]);
}

/** Parses a Gemini model path: `{prefix}/models/{model}:{verb}[?query]`. */
export function parseModelPath(path: string, prefix: string): { model: string; verb: string; query: string } | null {
  const q = path.indexOf('?');
  const pathname = q === -1 ? path : path.slice(0, q);
  if (!pathname.startsWith(prefix)) return null;
  const m = /^\/models\/([^/:]+):([A-Za-z]+)$/.exec(pathname.slice(prefix.length));
  return m === null ? null : { model: decodeURIComponent(m[1]!), verb: m[2]!, query: q === -1 ? '' : path.slice(q + 1) };
}

export interface GoogleContractMock extends ContractMock {
  apiKey: string;
}

export async function startGoogleContractMock(apiKey = 'goog-contract-key'): Promise<GoogleContractMock> {
  let scenario: Scenario = { kind: 'text' };
  const rec = await startRecordingServer((req, res, seen) => {
    const route = parseModelPath(seen.path, '/v1beta');
    if (route === null || req.method !== 'POST') return sendGoogleError(res, 404, `Mock: no route ${req.method} ${seen.path}`);
    if (/(^|&)key=/.test(route.query)) return sendGoogleError(res, 400, 'Mock: the key must not be in the URL');
    if (req.headers['x-goog-api-key'] !== apiKey) return sendGoogleError(res, 401, 'API key not valid. Please pass a valid API key.');
    if (route.verb === 'batchEmbedContents') {
      const requests = Array.isArray(seen.body?.requests) ? seen.body.requests : [];
      return sendJson(res, 200, { embeddings: requests.map((_: unknown, i: number) => ({ values: [i, 0.5, -0.25] })) });
    }
    if (route.verb === 'generateContent') return answerGemini(res, scenario, false, seen.body, route.model);
    if (route.verb === 'streamGenerateContent') {
      if (route.query !== 'alt=sse') return sendGoogleError(res, 400, 'Mock: streams need alt=sse');
      return answerGemini(res, scenario, true, seen.body, route.model);
    }
    sendGoogleError(res, 404, `Mock: unknown verb ${route.verb}`);
  });
  return {
    baseURL: rec.url,
    requests: rec.requests,
    apiKey,
    next(s) {
      scenario = s;
    },
    close: rec.close,
  };
}
