import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { GatewayPlugin } from '../../../core/index.js';
import { cache } from '../../../plugins/cache/index.js';
import { cacheSimple } from '../../../plugins/cache/simple/index.js';
import { cacheMemory } from '../../../plugins/cache/stores/memory/index.js';
import { config } from '../../../plugins/config/index.js';
import { controlPlane } from '../../../plugins/control-plane/index.js';
import { guardrailChecks } from '../../../plugins/guardrails/checks/index.js';
import { guardrails } from '../../../plugins/guardrails/index.js';
import { limits, type LimitsOptions } from '../../../plugins/limits/index.js';
import { logStore } from '../../../plugins/logs/index.js';
import { logApi } from '../../../plugins/logs/routes/index.js';
import { metrics } from '../../../plugins/metrics/index.js';
import { providerHeaders } from '../../../plugins/provider-headers/index.js';
import { openai } from '../../../plugins/providers/openai/index.js';
import { redisStore } from '../../../plugins/stores/redis/index.js';
import { sqliteStore } from '../../../plugins/stores/sqlite/index.js';
import { timeout } from '../../../plugins/timeout/index.js';
import { trace } from '../../../plugins/trace/index.js';
import { validation } from '../../../plugins/validation/index.js';
import { serveGateway } from '../../helpers/serve.js';

export const ADMIN = 'limits-admin-bootstrap-key-0001';
export type Json = Record<string, any>;

export interface LimitsGateway {
  url: string;
  logs: Awaited<ReturnType<typeof serveGateway>>['logs'];
  close(): Promise<void>;
  /** Calls the admin API with the bootstrap key (or `key`); throws unless 200. */
  admin(method: string, path: string, body?: unknown, key?: string): Promise<Json>;
}

/**
 * A gateway with the control plane on an SQLite file (shareable by a second gateway), validation,
 * guardrails, the cache, the log store, metrics and the limits plugin, all on one fake clock.
 */
export async function limitsGateway(options: {
  clock: { now: number };
  limits?: LimitsOptions;
  dbFile?: string;
  redis?: { url: string; prefix: string };
  extra?: GatewayPlugin[];
}): Promise<LimitsGateway> {
  const dataDir = await mkdtemp(join(tmpdir(), 'gw-limits-'));
  const now = () => options.clock.now;
  const gw = await serveGateway({
    plugins: [
      trace(),
      ...(options.redis === undefined ? [] : [redisStore({ url: options.redis.url, keyPrefix: options.redis.prefix })]),
      sqliteStore({ file: options.dbFile ?? join(dataDir, 'gateway.db') }),
      controlPlane({ bootstrapKey: ADMIN, dataDir, now, announce: () => undefined }),
      config(),
      providerHeaders(),
      validation(),
      guardrailChecks(),
      guardrails(),
      limits({ now, ...options.limits }),
      cacheMemory(),
      cache(),
      cacheSimple(),
      timeout(),
      openai({}),
      logStore({ writer: 'inline', flushIntervalMs: 10 }),
      logApi(),
      metrics({ defaultMetrics: false }),
      ...(options.extra ?? []),
    ],
  });
  await gw.gateway.ready;
  return {
    url: gw.url,
    logs: gw.logs,
    close: () => gw.close(),
    async admin(method, path, body, key = ADMIN) {
      const res = await fetch(`${gw.url}/v1${path}`, {
        method,
        headers: { 'x-gateway-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${text}`);
      return JSON.parse(text) as Json;
    },
  };
}

export interface Answer {
  status: number;
  body: Json;
  headers: Headers;
}

/** A chat request through the gateway to `upstream` (the mock's base URL), with an inline config. */
export async function chat(
  gw: { url: string },
  upstream: string,
  options: { key?: string; body?: Json; config?: Json; headers?: Record<string, string>; content?: string } = {},
): Promise<Answer> {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-gateway-api-key': options.key ?? ADMIN,
      'x-gateway-config': JSON.stringify({ provider: 'openai', api_key: 'sk-test', custom_host: upstream, ...options.config }),
      ...options.headers,
    },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: options.content ?? 'Hello' }], ...options.body }),
  });
  const text = await res.text();
  let body: Json = {};
  try {
    body = JSON.parse(text) as Json;
  } catch {
    body = { text };
  }
  return { status: res.status, body, headers: res.headers };
}

/** The x-ratelimit-* and retry-after headers of an answer. */
export function limitHeadersOf(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, value] of headers) if (k.startsWith('x-ratelimit-') || k === 'retry-after') out[k] = value;
  return out;
}

/** Polls until `check` passes (the log hook settles after the response ended); fails after `ms`. */
export async function eventually<T>(check: () => Promise<T>, ms = 5000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > until) throw err;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}
