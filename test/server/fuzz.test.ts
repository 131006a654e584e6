import { connect } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { DEFAULT_CONFIG } from '../../server/default-config.js';
import { BOOTSTRAP_KEY, GATEWAY_KEY, startTestServer } from '../helpers/gateway.js';
import { startMockOpenAI, type MockUpstream } from '../mocks/openai-upstream.js';

/*
 * A seeded fuzz run against the real server (the default config, a loopback
 * mock upstream): malformed bodies, configs, headers, paths and methods
 * through fetch, and malformed HTTP on raw sockets. For every case:
 * - no 5xx, unless the case means the upstream to fail (an unreachable host,
 *   a mock model that resets or answers 5xx): then only those statuses;
 * - no hang: every answer is complete within a bound;
 * - every error answer is the one envelope {"error":{"message","type","param","code"}}
 *   (the guardrails' 446 adds `hook_results` beside it).
 * A failure prints the seed and the case, so it can be replayed.
 */
const SEED = Number(process.env.FUZZ_SEED ?? 20_261_125);
const HTTP_CASES = 2_400;
const RAW_CASES = 300;
const CONCURRENCY = 8;
const HANG_BOUND_MS = 8_000;
const CLOSED = 'http://127.0.0.1:1/v1';

let mock: MockUpstream;
let gw: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  mock = await startMockOpenAI({ record: false });
  gw = await startTestServer({
    config: {
      ...DEFAULT_CONFIG,
      maxBodyBytes: 256 * 1024,
      upstream: { headersTimeoutMs: 3_000, bodyTimeoutMs: 3_000 },
      server: { headersTimeoutMs: 1_000, requestTimeoutMs: 2_000 },
    },
    env: { GATEWAY_ALLOW_PRIVATE_HOSTS: '1' },
  });
});

afterAll(async () => {
  await gw?.close();
  await mock?.close();
});

/** mulberry32: small, fast, and the same sequence for the same seed everywhere. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

class Gen {
  constructor(readonly next: () => number) {}
  int(max: number): number {
    return Math.floor(this.next() * max);
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }
  /** Printable text, sometimes with unicode, quotes and brackets. */
  text(max = 24): string {
    const alphabet = ['a', 'Z', '0', ' ', '"', '\\', '[', ']', '{', '}', 'é', '漢', '😀', '\n', '$', '.', '-', '_', '/', '%', '(', ')', '*', '+', '?', '|', '^'];
    let out = '';
    for (let i = this.int(max); i > 0; i--) out += this.pick(alphabet);
    return out;
  }
  /** Header-safe text (visible ASCII). */
  token(max = 24): string {
    let out = '';
    for (let i = this.int(max); i > 0; i--) out += String.fromCharCode(33 + this.int(94));
    return out;
  }
  number(): number {
    return this.pick([0, -1, 1, 0.5, 2.1, 128, 129, -0, 1e308, -1e308, Number.MAX_SAFE_INTEGER, 1e-9, 30_000, 4]);
  }
  key(): string {
    return this.pick(['model', 'messages', 'stream', 'n', 'temperature', 'tools', '__proto__', 'constructor', 'prototype', 'toString', '', 'x', this.text(8)]);
  }
  json(depth = 0): unknown {
    const r = this.int(depth > 3 ? 5 : 8);
    if (r === 0) return null;
    if (r === 1) return this.chance(0.5);
    if (r === 2) return this.number();
    if (r === 3 || r === 4) return this.text();
    if (r === 5) return Array.from({ length: this.int(4) }, () => this.json(depth + 1));
    const out: Record<string, unknown> = {};
    for (let i = this.int(4); i > 0; i--) Object.defineProperty(out, this.key(), { value: this.json(depth + 1), enumerable: true, configurable: true, writable: true });
    return out;
  }
}

/** JSON text with every non-ASCII character escaped, so it can travel in a header (header values are bytes). */
const asciiJson = (value: unknown) => JSON.stringify(value).replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

/** What `^(a+)+$` backtracks on for seconds in JavaScript's own engine (each more `a` doubles it); RE2 answers at once. */
const EVIL_INPUT = `${'a'.repeat(30)}!`;

/**
 * Known-hostile combinations, so every run has some: a deep body under a
 * config that re-serialises or keys it, a backtracking pattern with the input
 * it backtracks on, a framing header to forward.
 */
function hostile(g: Gen): { config: Record<string, unknown>; body: string } {
  const leaf = { provider: 'openai', api_key: 'sk-up', custom_host: mock.baseURL };
  const deep = `{"model":"m","messages":[{"role":"user","content":"hi"}],"x":${nested(g.pick([101, 10_000]))}}`;
  const evil = JSON.stringify({ model: EVIL_INPUT, messages: [{ role: 'user', content: EVIL_INPUT }] });
  switch (g.int(5)) {
    case 0:
      return { config: { ...leaf, override_params: { temperature: 0 } }, body: deep };
    case 1:
      return { config: { ...leaf, cache: { mode: 'simple' } }, body: deep };
    case 2:
      return {
        config: { strategy: { mode: 'conditional', conditions: [{ query: { 'params.model': { $regex: '^(a+)+$' } }, then: 'a' }], default: 'b' }, targets: [{ ...leaf, name: 'a' }, { ...leaf, name: 'b' }] },
        body: evil,
      };
    case 3:
      return { config: { ...leaf, before_request_hooks: [{ id: 'h', checks: [{ id: 'default.regexMatch', parameters: { rule: '^(a+)+$' } }] }] }, body: evil };
    default:
      return { config: { ...leaf, override_params: { temperature: 0 }, forward_headers: ['content-length'] }, body: evil };
  }
}

/** `levels` arrays inside one another, as text (JSON.stringify would overflow on deep values). */
const nested = (levels: number, inner = '1') => '['.repeat(levels) + inner + ']'.repeat(levels);

interface HttpCase {
  kind: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
  /** Statuses of 500 and above this case may end with (an upstream it means to fail). */
  allow5xx?: number[];
}

const ROUTES = ['/v1/chat/completions', '/v1/completions', '/v1/embeddings', '/v1/rerank'];

function chatBody(g: Gen, model: string): Record<string, unknown> {
  const body: Record<string, unknown> = { model, messages: [{ role: 'user', content: g.chance(0.8) ? 'hello' : g.text(40) }] };
  if (g.chance(0.3)) body.stream = true;
  if (g.chance(0.2)) body.max_tokens = g.pick([1, 16, 0, -5]);
  return body;
}

/** A model name for the mock: mostly ordinary, sometimes one that makes the mock fail. */
function model(g: Gen): { name: string; fails: boolean } {
  if (g.chance(0.85)) return { name: g.pick(['gpt-4o-mini', 'gpt-4o', 'm', EVIL_INPUT, g.text(10).replace(/^(error-|slow-|reset|garbled|queued)/, 'x')]), fails: false };
  return { name: g.pick(['error-500', 'error-503', 'reset', 'garbled', 'error-429', 'error-400']), fails: true };
}

function body(g: Gen, base: Record<string, unknown>): string {
  switch (g.int(12)) {
    case 0:
      return g.pick(['', '{', '[]', 'null', '"x"', '{"model":', '\u00ef\u00bb\u00bf{}', '{"a":1}{"b":2}', 'NaN', '{"model":"m","messages":[}']);
    case 1:
      return `{"model":"m","messages":[{"role":"user","content":"hi"}],"x":${nested(g.pick([50, 98, 99, 100, 101, 5_000, 20_000]))}}`;
    case 2: {
      const copy: Record<string, unknown> = { ...base };
      copy[g.key()] = g.json();
      return JSON.stringify(copy);
    }
    case 3: {
      const copy: Record<string, unknown> = { ...base };
      delete copy[g.pick(['model', 'messages', 'input', 'prompt'])];
      return JSON.stringify(copy);
    }
    case 4:
      return JSON.stringify(g.json());
    case 5:
      return JSON.stringify({ ...base, messages: g.json() });
    case 6:
      return JSON.stringify({ ...base, messages: [{ role: g.pick(['user', 'system', 'robot', 'tool', 'assistant']), content: g.json() }] });
    case 7:
      return `{"model":"m","messages":[{"role":"user","content":"${'a'.repeat(g.pick([10, 1000, 300 * 1024]))}"}]}`;
    case 8:
      return JSON.stringify({ ...base, tools: Array.from({ length: g.pick([0, 1, 129]) }, () => ({ type: 'function', function: g.json() })) });
    default:
      return JSON.stringify(base);
  }
}

function config(g: Gen, depth = 0): unknown {
  const leaf = (): Record<string, unknown> => {
    // Hosts are the mock or the closed port only: a malformed custom_host is the outbound host policy's to refuse, and
    // a name would be looked up in DNS, which no test may do.
    const l: Record<string, unknown> = { provider: g.pick(['openai', 'openai', 'anthropic', 'nope', '@slug', 1]), api_key: 'sk-up', custom_host: g.chance(0.9) ? mock.baseURL : CLOSED };
    if (g.chance(0.2)) l.override_params = g.chance(0.5) ? { temperature: 0 } : g.json();
    if (g.chance(0.15)) l.forward_headers = [g.pick(['x-tenant', 'content-length', 'host', 'transfer-encoding', 'proxy-x', g.text(6)])];
    if (g.chance(0.15)) l.cache = { mode: g.pick(['simple', 'semantic', 'other']), max_age: g.number() };
    if (g.chance(0.15)) l.retry = { attempts: g.pick([0, 1, 2, -1, 'x']), on_status_codes: [429, 500] };
    if (g.chance(0.1)) l.request_timeout = g.pick([1, 50, 0, 'x']);
    if (g.chance(0.1)) l.before_request_hooks = [{ id: 'h', checks: [{ id: g.pick(['default.regexMatch', 'default.contains', 'default.nothing']), parameters: g.chance(0.5) ? { rule: g.pick(['^(a+)+$', '(a)\\1', '(?=x)', '[', 'hello', g.text(12)]) } : g.json() }], on_fail: { deny: g.chance(0.5) } }];
    if (g.chance(0.1)) l[g.key()] = g.json();
    return l;
  };
  if (depth > 2 || g.chance(0.5)) return leaf();
  const mode = g.pick(['single', 'loadbalance', 'fallback', 'conditional', 'nope']);
  const targets = Array.from({ length: 1 + g.int(3) }, (_, i) => ({ ...(config(g, depth + 1) as object), name: `t${i}` }));
  const strategy: Record<string, unknown> = { mode };
  if (mode === 'conditional' || g.chance(0.1)) {
    strategy.conditions = [{ query: g.chance(0.7) ? { 'params.model': { [g.pick(['$regex', '$eq', '$in', '$gt', '$nope'])]: g.pick(['^(a+)+$', '^gpt', '(a)\\1', ['a'], 3, g.text(8)]) } } : g.json(), then: g.pick(['t0', 't9']) }];
    strategy.default = 't0';
  }
  return { strategy, targets };
}

function httpCase(g: Gen): HttpCase {
  const m = model(g);
  const route = g.pick(ROUTES);
  const base: Record<string, unknown> =
    route === '/v1/embeddings' ? { model: m.name, input: 'hi' } : route === '/v1/completions' ? { model: m.name, prompt: 'hi' } : route === '/v1/rerank' ? { model: m.name, query: 'q', documents: ['a'] } : chatBody(g, m.name);
  const headers: Record<string, string> = { 'content-type': 'application/json', 'x-gateway-api-key': GATEWAY_KEY };
  const c: HttpCase = { kind: 'body', method: 'POST', path: route, headers };
  switch (g.int(6)) {
    case 0:
    case 1: {
      c.kind = 'config';
      if (g.chance(0.1)) {
        const h = hostile(g);
        headers['x-gateway-config'] = asciiJson(h.config);
        c.body = h.body;
        break;
      }
      const cfg = config(g);
      headers['x-gateway-config'] = g.chance(0.9) ? asciiJson(cfg) : g.pick(['{', 'pc-unknown', g.token(30), `{"a":${nested(3_000)}}`]);
      c.body = g.chance(0.7) ? JSON.stringify(base) : body(g, base);
      break;
    }
    case 2: {
      c.kind = 'headers';
      headers['x-gateway-provider'] = g.pick(['openai', 'anthropic', 'nope', '', g.token(10)]);
      headers.authorization = g.pick(['Bearer sk-up', 'Bearer', 'Basic eA==', g.token(20)]);
      headers['x-gateway-custom-host'] = g.chance(0.8) ? mock.baseURL : g.pick([CLOSED, 'nope', 'ftp://127.0.0.1/', `${mock.baseURL}\\x`]);
      for (let i = g.int(4); i > 0; i--) {
        const name = g.pick(['x-gateway-metadata', 'x-gateway-trace-id', 'x-gateway-span-id', 'x-gateway-cache-namespace', 'x-gateway-cache-force-refresh', 'x-gateway-virtual-key', 'x-gateway-workspace', 'content-type', 'traceparent', 'x-gateway-forward-headers']);
        // All headers together stay under Node's 16 KiB: a 431 closes the connection while fetch still sends, which fetch reports as a failure (raw cases cover it).
        headers[name] = g.pick([g.token(40), asciiJson(g.json()), `{"a":${nested(g.pick([10, 200, 1_500]))}}`, 'x'.repeat(g.pick([10, 300, 3_000])), '']);
      }
      if (g.chance(0.1)) delete headers['x-gateway-api-key'];
      c.body = body(g, base);
      break;
    }
    case 3: {
      c.kind = 'path';
      // Methods the parser does not know (BREW) are raw-socket cases: fetch reports the early close of its upload instead of the answer.
      c.method = g.pick(['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'PURGE']);
      const segment = () => g.pick(['v1', 'workspaces', 'api-keys', 'models', 'configs', 'logs', 'analytics', 'groups', 'x', '%00', '%2e%2e', '..', '%zz', '%E2%82', encodeURIComponent(g.text(6)), 'a'.repeat(300)]);
      const known = ['/health', '/v1/workspaces', '/v1/api-keys', '/v1/models', '/v1/configs', '/v1/logs', '/v1/analytics/groups/model', '/v1/files', '/v1/chat/completions', '/metrics'];
      c.path = g.chance(0.5) ? g.pick(known) : `/${Array.from({ length: 1 + g.int(4) }, segment).join('/')}`;
      if (g.chance(0.5)) c.path += `?${g.pick(['__proto__', 'constructor', 'page_size', 'current_page', 'status', g.token(6)])}=${g.pick(['1', '-1', '999999999999', '', 'x'])}`;
      if (g.chance(0.5)) headers.authorization = 'Bearer sk-up';
      if (g.chance(0.5)) headers['x-gateway-api-key'] = BOOTSTRAP_KEY;
      if (g.chance(0.3)) {
        headers['x-gateway-provider'] = 'openai';
        headers['x-gateway-custom-host'] = g.chance(0.8) ? mock.baseURL : CLOSED;
      }
      if (c.method !== 'GET' && c.method !== 'HEAD' && g.chance(0.7)) c.body = body(g, base);
      break;
    }
    default:
      c.kind = 'body';
      headers['x-gateway-provider'] = 'openai';
      headers.authorization = 'Bearer sk-up';
      headers['x-gateway-custom-host'] = mock.baseURL;
      c.body = body(g, base);
  }
  c.allow5xx = upstreamFailures(c, m.fails);
  return c;
}

/** The 5xx statuses a case may end with: only when it sends the request to the closed port or to a mock model that fails. */
function upstreamFailures(c: HttpCase, fails: boolean): number[] {
  const closed = Object.values(c.headers).some((v) => v.includes(CLOSED));
  // The mock speaks OpenAI: a provider that expects another format is answered 502 upstream_invalid_response.
  const foreign = Object.values(c.headers).some((v) => v.includes('anthropic'));
  return [...(closed || fails || foreign ? [502, 503, 504] : []), ...(fails ? [500] : [])];
}

/** A problem with one answer, or null. */
function judge(c: HttpCase, status: number, contentType: string | null, text: string): string | null {
  if (status >= 500 && !(c.allow5xx ?? []).includes(status)) return `status ${status}: ${text.slice(0, 300)}`;
  if (status < 400 || c.method === 'HEAD') return null;
  if (!(contentType ?? '').startsWith('application/json')) return `status ${status} with content-type ${contentType}: ${text.slice(0, 200)}`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return `status ${status} with a body that is not JSON: ${text.slice(0, 200)}`;
  }
  return envelopeProblem(parsed, status);
}

function envelopeProblem(parsed: unknown, status: number): string | null {
  const b = parsed as { error?: Record<string, unknown> } & Record<string, unknown>;
  const top = Object.keys(b ?? {}).filter((k) => k !== 'hook_results');
  const keys = Object.keys(b?.error ?? {}).sort();
  if (top.length !== 1 || top[0] !== 'error' || keys.join(',') !== 'code,message,param,type') return `status ${status} without the envelope: ${JSON.stringify(parsed).slice(0, 200)}`;
  if (typeof b.error!.message !== 'string' || typeof b.error!.type !== 'string') return `status ${status}: envelope fields of the wrong type`;
  return null;
}

/** Answers by status class, so the test can tell the run exercised more than the first validation. */
const seen = new Map<string, number>();

async function runHttp(c: HttpCase): Promise<string | null> {
  try {
    const res = await fetch(`${gw.url}${c.path}`, { method: c.method, headers: c.headers, body: c.body, signal: AbortSignal.timeout(HANG_BOUND_MS) });
    const text = await res.text();
    const key = `${c.kind} ${res.status}`;
    seen.set(key, (seen.get(key) ?? 0) + 1);
    return judge(c, res.status, res.headers.get('content-type'), text);
  } catch (err) {
    const e = err as Error & { cause?: Error };
    if (e.name === 'TimeoutError') return `no answer within ${HANG_BOUND_MS} ms`;
    return `the request failed: ${e.message} ${e.cause?.message ?? ''}`;
  }
}

/** Raw HTTP the parser must refuse or handle: the answer (if any) must be an envelope, and the connection must end. */
function rawCase(g: Gen): string {
  const method = g.pick(['GET', 'POST', 'BREW', 'G\u0000T', 'CONNECT', 'get', 'PRI', '']);
  const path = g.pick(['/health', '/v1/chat/completions', '*', 'http://x/', '/\u0001', `/${'a'.repeat(20_000)}`, '']);
  const version = g.pick(['HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'HTTP/9.9', 'HTTX/1.1', '']);
  let head = `${method} ${path} ${version}\r\n`;
  // Sometimes no Host, or two: an HTTP/1.1 request needs exactly one (a 400 in the envelope otherwise).
  const lines = [...g.pick([['host: x'], ['host: x'], ['host: x'], [], ['host: x', 'host: y']]), `x-gateway-api-key: ${GATEWAY_KEY}`];
  for (let i = g.int(4); i > 0; i--) {
    lines.push(
      g.pick([
        'content-length: 5',
        'content-length: -1',
        'content-length: 5\r\ncontent-length: 6',
        'transfer-encoding: chunked',
        'transfer-encoding: chunked\r\ncontent-length: 3',
        'x-bad\u0000: 1',
        'x-bad: a\u0000b',
        ' folded: 1',
        'no-colon',
        `x-big: ${'b'.repeat(g.pick([100, 17_000]))}`,
        'expect: 100-continue',
        'connection: upgrade\r\nupgrade: websocket',
        `x-gateway-config: ${g.pick(['{', '{"a":' + nested(2_000) + '}'])}`,
      ]),
    );
  }
  head += `${lines.join('\r\n')}\r\n\r\n`;
  const tail = g.pick(['', '{"a"', '{"model":"m"}', '3\r\nabc\r\n0\r\n\r\n', 'zz\r\n', '\u0000\u0001\u0002']);
  return head + tail;
}

function runRaw(bytes: string): Promise<string | null> {
  return new Promise((resolve) => {
    const socket = connect(gw.port, '127.0.0.1');
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(`the connection was not closed within ${HANG_BOUND_MS} ms (got ${JSON.stringify(text.slice(0, 80))})`);
    }, HANG_BOUND_MS);
    socket.on('data', (chunk) => (text += chunk.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(rawProblem(text));
    });
    socket.end(Buffer.from(bytes, 'latin1'));
  });
}

function rawProblem(text: string): string | null {
  if (text === '') return null;
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
  if (m === null) return `an answer that is not HTTP: ${JSON.stringify(text.slice(0, 80))}`;
  const status = Number(m[1]);
  if (status >= 500) return `status ${status}: ${text.slice(0, 300)}`;
  if (status < 400) return null;
  const split = text.indexOf('\r\n\r\n');
  const head = text.slice(0, split).toLowerCase();
  if (!head.includes('content-type: application/json')) return `status ${status} without a JSON body: ${JSON.stringify(text.slice(0, 200))}`;
  const length = /content-length: (\d+)/.exec(head);
  const body = length === null ? text.slice(split + 4) : text.slice(split + 4, split + 4 + Number(length[1]));
  try {
    return envelopeProblem(JSON.parse(body), status);
  } catch {
    return `status ${status} with a body that is not JSON: ${JSON.stringify(body.slice(0, 200))}`;
  }
}

/** Runs `work` over `items`, `limit` at a time. */
async function pool<T>(items: T[], limit: number, work: (item: T) => Promise<string | null>): Promise<Array<[T, string]>> {
  const failures: Array<[T, string]> = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) {
        const item = items[next++]!;
        const problem = await work(item);
        if (problem !== null) failures.push([item, problem]);
      }
    }),
  );
  return failures;
}

const describeCase = (c: HttpCase) => `${c.kind}: ${c.method} ${c.path.slice(0, 120)} headers=${JSON.stringify(c.headers).slice(0, 400)} body=${(c.body ?? '').slice(0, 200)}`;

test(`fuzz: ${HTTP_CASES} requests (seed ${SEED}): no 5xx for bad input, no hang, the envelope on every error`, async () => {
  const g = new Gen(prng(SEED));
  const cases = Array.from({ length: HTTP_CASES }, () => httpCase(g));
  const failures = await pool(cases, CONCURRENCY, runHttp);
  expect(failures.slice(0, 8).map(([c, p]) => `${p}\n    in ${describeCase(c)}`)).toEqual([]);
  if (process.env.FUZZ_STATS === '1') console.log([...seen].sort().join('\n'));
  // Not all refused at the door: a good share went upstream and came back, in every kind of case.
  const ok = (kind: string) => [...seen].filter(([k]) => k.startsWith(`${kind} 2`)).reduce((n, [, count]) => n + count, 0);
  for (const kind of ['body', 'config', 'headers', 'path']) expect(ok(kind), `2xx answers to ${kind} cases`).toBeGreaterThanOrEqual(10);
  // The gateway is still serving.
  expect((await fetch(`${gw.url}/health`)).status).toBe(200);
}, 120_000);

test(`fuzz: ${RAW_CASES} raw requests (seed ${SEED}): parser rejections answer in the envelope and every connection ends`, async () => {
  const g = new Gen(prng(SEED + 1));
  const cases = Array.from({ length: RAW_CASES }, () => rawCase(g));
  const failures = await pool(cases, CONCURRENCY, runRaw);
  expect(failures.slice(0, 8).map(([c, p]) => `${p}\n    in ${JSON.stringify(c.slice(0, 300))}`)).toEqual([]);
  expect((await fetch(`${gw.url}/health`)).status).toBe(200);
}, 120_000);
