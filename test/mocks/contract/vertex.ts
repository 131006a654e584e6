import { verify, type KeyObject } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { ContractMock, Scenario, SeenNativeRequest } from '../../../server/testing/index.js';
import { answerGemini, parseModelPath, sendGoogleError } from './google.js';
import { COUNTED_TOKENS, sendJson, startRecordingServer, writeEvents } from '../../../server/testing/index.js';

/**
 * The contract mock for Vertex AI (shared/providers/vertex.md §1–§7):
 * - `POST /token`: the OAuth token endpoint. It verifies the JWT assertion
 *   (RS256 signature with the test key, header kid, iss/sub, scope, aud = this
 *   URL, exp − iat ≤ 3600, iat within 5 minutes of now) and issues a fresh
 *   access token each time (`ya29.mock-<n>`).
 * - `…/publishers/google/models/{m}:generateContent | :streamGenerateContent?alt=sse | :predict`
 *   in Gemini's format, and `…/publishers/anthropic/models/{m}:rawPredict | :streamRawPredict`
 *   in Anthropic's Messages format.
 * Every model call needs `Authorization: Bearer <an issued token or the configured apiKey>`
 * (401 in Google's envelope otherwise).
 */

export interface VertexMockOptions {
  /** Public half of the service account's key; the token endpoint verifies assertions with it. */
  publicKey?: KeyObject;
  clientEmail?: string;
  keyId?: string;
  /** A ready bearer token accepted as is (the api_key credential). */
  apiKey?: string;
  project?: string;
  region?: string;
  /** `expires_in` of issued tokens, seconds. */
  expiresIn?: number;
}

export interface VertexContractMock extends ContractMock {
  /** The token endpoint (`token_uri` of the test service account). */
  tokenURL: string;
  /** Token requests received, valid or not. */
  readonly tokenRequests: number;
  /** Tokens issued so far. */
  readonly issued: readonly string[];
  /** Why the last refused assertion was refused. */
  readonly lastTokenError: string | null;
  /** Makes the token endpoint fail: an OAuth error (400) or an HTTP status. */
  failTokens(mode: null | 'invalid_grant' | 500): void;
  /** Delay before the token endpoint answers, ms. */
  tokenDelayMs: number;
  /** Every request received, token requests included. */
  allRequests: SeenNativeRequest[];
}

const SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
const ANTHROPIC_FINISH = { stop: 'end_turn', length: 'max_tokens', content_filter: 'refusal' } as const;
const ANTHROPIC_ERROR: Readonly<Record<number, string>> = { 400: 'invalid_request_error', 401: 'authentication_error', 429: 'rate_limit_error', 500: 'api_error', 503: 'overloaded_error' };

const json = (part: string) => JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as Record<string, any>;

/** Checks a JWT bearer assertion; returns why it is refused, or null. */
function checkAssertion(body: string, opts: VertexMockOptions, tokenURL: string): string | null {
  const form = new URLSearchParams(body);
  if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') return 'unsupported grant_type';
  const jwt = form.get('assertion') ?? '';
  const parts = jwt.split('.');
  if (parts.length !== 3) return 'malformed assertion';
  const [h, c, s] = parts as [string, string, string];
  if (opts.publicKey === undefined || !verify('sha256', Buffer.from(`${h}.${c}`), opts.publicKey, Buffer.from(s, 'base64url'))) return 'Invalid JWT Signature.';
  const header = json(h);
  const claims = json(c);
  if (header.alg !== 'RS256' || header.typ !== 'JWT') return 'bad header';
  if (opts.keyId !== undefined && header.kid !== opts.keyId) return 'bad kid';
  if (claims.iss !== opts.clientEmail || claims.sub !== opts.clientEmail) return 'bad iss/sub';
  if (claims.scope !== SCOPE) return 'bad scope';
  if (claims.aud !== tokenURL) return 'bad aud';
  const now = Date.now() / 1000;
  if (!Number.isInteger(claims.iat) || !Number.isInteger(claims.exp) || claims.exp - claims.iat > 3600 || claims.exp <= claims.iat) return 'Invalid JWT: Token must be a short-lived token (60 minutes)';
  if (Math.abs(claims.iat - now) > 300) return 'Invalid JWT: iat is not in a reasonable timeframe';
  return null;
}

/** Anthropic Messages answers for a scenario (shared/providers/anthropic.md §3–§5). */
function answerAnthropic(res: ServerResponse, s: Scenario, stream: boolean, model: string): void {
  if (s.kind === 'error') {
    const headers: Record<string, string> = s.status === 429 ? { 'retry-after': '7' } : {};
    return sendJson(res, s.status, { type: 'error', error: { type: ANTHROPIC_ERROR[s.status] ?? 'api_error', message: `Mock error ${s.status}` } }, headers);
  }
  const usage = { input_tokens: 6, cache_creation_input_tokens: 0, cache_read_input_tokens: 3, output_tokens: 2 };
  const stop = s.kind === 'tool_call' ? 'tool_use' : s.kind === 'text' ? ANTHROPIC_FINISH[s.finish ?? 'stop'] : 'end_turn';
  const message = { id: 'msg_vertex_mock', type: 'message', role: 'assistant', model };
  if (!stream) {
    const content = s.kind === 'tool_call' ? [{ type: 'tool_use', id: 'toolu_mock1', name: 'get_weather', input: { city: 'Paris' } }] : [{ type: 'text', text: 'Hello!' }];
    return sendJson(res, 200, { ...message, content, stop_reason: stop, stop_sequence: null, usage });
  }
  const ev = (name: string, data: object) => `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`;
  const events = [ev('message_start', { message: { ...message, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } } }), ev('ping', {})];
  if (s.kind === 'stream_error') {
    events.push(
      ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
      ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Hel' } }),
      ev('error', { error: { type: 'overloaded_error', message: 'Mock stream failure' } }),
    );
    return writeEvents(res, events);
  }
  if (s.kind === 'tool_call') {
    events.push(
      ev('content_block_start', { index: 0, content_block: { type: 'tool_use', id: 'toolu_mock1', name: 'get_weather', input: {} } }),
      ev('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: '{"city":' } }),
      ev('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: '"Paris"}' } }),
      ev('content_block_stop', { index: 0 }),
    );
  } else {
    events.push(
      ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
      ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Hello' } }),
      ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: '!' } }),
      ev('content_block_stop', { index: 0 }),
    );
  }
  events.push(ev('message_delta', { delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 2 } }), ev('message_stop', {}));
  writeEvents(res, events);
}

export async function startVertexContractMock(opts: VertexMockOptions = {}): Promise<VertexContractMock> {
  let scenario: Scenario = { kind: 'text' };
  let tokenRequests = 0;
  let failure: null | 'invalid_grant' | 500 = null;
  let lastTokenError: string | null = null;
  const issued: string[] = [];
  const accepted = new Set<string>(opts.apiKey !== undefined ? [opts.apiKey] : []);
  let tokenURL = '';
  const settings = { tokenDelayMs: 0 };
  const rec = await startRecordingServer((req, res, seen) => {
    if (seen.path === '/token') {
      tokenRequests++;
      const answer = () => {
        if (failure === 500) return sendJson(res, 500, { error: 'internal_failure' });
        const refused = failure === 'invalid_grant' ? 'Invalid grant: account not found' : checkAssertion(String(seen.body ?? ''), opts, tokenURL);
        lastTokenError = refused;
        if (refused !== null) return sendJson(res, 400, { error: 'invalid_grant', error_description: refused });
        const token = `ya29.mock-${issued.length + 1}`;
        issued.push(token);
        accepted.add(token);
        sendJson(res, 200, { access_token: token, expires_in: opts.expiresIn ?? 3599, token_type: 'Bearer' });
      };
      return settings.tokenDelayMs > 0 ? void setTimeout(answer, settings.tokenDelayMs) : answer();
    }
    const m = /^\/v1\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/(google|anthropic)(\/models\/.*)$/.exec(seen.path);
    const route = m === null ? null : parseModelPath(m[4]!, '');
    if (m === null || route === null || req.method !== 'POST') return sendGoogleError(res, 404, `Mock: no route ${req.method} ${seen.path}`);
    const auth = req.headers.authorization ?? '';
    if (!auth.startsWith('Bearer ') || !accepted.has(auth.slice(7))) {
      return sendGoogleError(res, 401, 'Request had invalid authentication credentials. Expected OAuth 2 access token.');
    }
    if ((opts.project !== undefined && m[1] !== opts.project) || (opts.region !== undefined && m[2] !== opts.region)) {
      return sendGoogleError(res, 404, `Mock: unknown project or location ${m[1]}/${m[2]}`);
    }
    if (m[3] === 'anthropic') {
      if (route.verb !== 'rawPredict' && route.verb !== 'streamRawPredict') return sendGoogleError(res, 404, `Mock: unknown verb ${route.verb}`);
      const body = seen.body as Record<string, any>;
      // Token counting (vertex.md §7): the Messages body with its model, at the count-tokens model.
      if (route.model === 'count-tokens') {
        if (body?.anthropic_version !== 'vertex-2023-10-16' || typeof body.model !== 'string') return sendJson(res, 400, { type: 'error', error: { type: 'invalid_request_error', message: 'Mock: anthropic_version and model required' } });
        return sendJson(res, 200, { input_tokens: COUNTED_TOKENS });
      }
      if (body?.anthropic_version !== 'vertex-2023-10-16' || body.model !== undefined || typeof body.max_tokens !== 'number') {
        return sendJson(res, 400, { type: 'error', error: { type: 'invalid_request_error', message: 'Mock: anthropic_version vertex-2023-10-16 and max_tokens required, model not allowed' } });
      }
      if ((route.verb === 'streamRawPredict') !== (body.stream === true)) return sendJson(res, 400, { type: 'error', error: { type: 'invalid_request_error', message: 'Mock: stream flag and verb disagree' } });
      return answerAnthropic(res, scenario, body.stream === true, route.model);
    }
    if (route.verb === 'predict') {
      const instances = Array.isArray(seen.body?.instances) ? seen.body.instances : [];
      return sendJson(res, 200, { predictions: instances.map((_: unknown, i: number) => ({ embeddings: { values: [i, 0.5], statistics: { token_count: 4, truncated: false } } })) });
    }
    if (route.verb === 'generateContent') return answerGemini(res, scenario, false, seen.body, route.model);
    if (route.verb === 'streamGenerateContent' && route.query === 'alt=sse') return answerGemini(res, scenario, true, seen.body, route.model);
    sendGoogleError(res, 400, `Mock: unsupported ${route.verb}?${route.query}`);
  });
  tokenURL = `${rec.url}/token`;
  return {
    baseURL: rec.url,
    tokenURL,
    get requests() {
      return rec.requests.filter((r) => r.path !== '/token');
    },
    allRequests: rec.requests,
    get tokenRequests() {
      return tokenRequests;
    },
    get issued() {
      return issued;
    },
    get lastTokenError() {
      return lastTokenError;
    },
    get tokenDelayMs() {
      return settings.tokenDelayMs;
    },
    set tokenDelayMs(ms: number) {
      settings.tokenDelayMs = ms;
    },
    failTokens(mode) {
      failure = mode;
    },
    next(s) {
      scenario = s;
    },
    close: rec.close,
  };
}
