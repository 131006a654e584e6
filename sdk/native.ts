import { performance } from 'node:perf_hooks';
import type { Readable } from 'node:stream';
import {
  baseURL,
  GatewayError,
  type GatewayResponse,
  type PluginAPI,
  type Provider,
  type RequestContext,
  type Target,
  type UpstreamRequest,
  type UpstreamResponse,
  upstreamBodyError,
} from '../core/index.js';
import { errorAnswer, readJson } from './openai/translate.js';

/**
 * Calls to a provider's own resource APIs (files, batches, fine-tuning jobs:
 * `Provider.resources`), for the plugins that shape them. These are
 * management calls a client makes rarely and retries itself: they go out
 * once, not through the strategy and interceptors, but they are recorded on
 * the request as its attempt, so the log names the provider and status.
 */

/** Which resource API a call needs. */
export type ResourceKind = 'files' | 'batches' | 'fineTuning' | 'realtime';

/** A concrete provider and its target, as a request's selection resolved to. */
export interface NativeTarget {
  /** The provider adapter that serves the call. */
  provider: Provider;
  /** The leaf as resolved (slug → provider and credentials). Never log it. */
  target: Target;
}

/**
 * The target a request selects (config, `x-gateway-provider`, a virtual key…),
 * as the `resolveProvider` hook gives it; null when it selects none.
 */
export async function selectedTarget(api: PluginAPI, ctx: RequestContext): Promise<Target | null> {
  if (!api.hooks.resolveProvider.isUsed()) return null;
  const target = await api.hooks.resolveProvider.promise(ctx);
  if (target === undefined) return null;
  ctx.target = target;
  return target;
}

/**
 * The provider a single-target selection resolves to (a slug or virtual key
 * through `resolveTarget`), or null for a strategy tree (loadbalance,
 * fallback…), which only the gateway itself can run.
 */
export async function resolveLeaf(api: PluginAPI, ctx: RequestContext, target: Target): Promise<NativeTarget | null> {
  if (target.strategy !== undefined || Array.isArray(target.targets)) return null;
  ctx.leafTarget = target;
  const resolved = api.hooks.resolveTarget.isUsed() ? await api.hooks.resolveTarget.promise(target, ctx) : target;
  if (typeof resolved?.provider !== 'string') throw new GatewayError('provider_required', 'The selected target names no provider.', { param: 'x-gateway-provider' });
  ctx.resolvedTarget = resolved;
  const provider = api.providers.require(resolved.provider, 'provider');
  ctx.provider = provider;
  ctx.targetPath = '0';
  return { provider, target: resolved };
}

/** Whether a provider serves a resource API natively, and in which wire format (`openai`, `mistral`); null when not. */
export function nativeFormat(provider: Provider, kind: ResourceKind): string | null {
  return provider.resources?.[kind] ?? null;
}

/** One call to a resource API: an OpenAI-style path with its query, relative to the API root (`/files/f1/content`). */
export interface NativeCall {
  /** HTTP method. */
  method: 'GET' | 'POST' | 'DELETE';
  /** The path with its query, relative to the API root, e.g. `/files/f1/content` or `/batches?limit=2`. */
  path: string;
  /** Headers to send besides the provider's auth headers (a name in both: this value wins). */
  headers?: Record<string, string>;
  /** A stream is sent as read (an upload); its length must be in `headers` (`content-length`). */
  body?: Buffer | string | Readable | null;
}

/** Sends a call to the provider's resource API; resolves with the upstream answer, its body unread. */
export async function sendNative(api: PluginAPI, ctx: RequestContext, native: NativeTarget, call: NativeCall): Promise<UpstreamResponse> {
  const { provider, target } = native;
  const url = provider.resources?.url !== undefined ? provider.resources.url(call.path, target, ctx) : baseURL(target, provider, ctx) + call.path;
  const headers: Record<string, string> = { ...provider.authHeaders(target, ctx), ...call.headers };
  if (ctx.upstreamHeaders !== null) Object.assign(headers, ctx.upstreamHeaders);
  const body = call.body ?? null;
  // `prepare` (a token, a signature) sees the request without a stream body: none of the resource providers signs the body.
  const request: UpstreamRequest = { method: call.method, url, headers, body: typeof body === 'string' || Buffer.isBuffer(body) ? body : null };
  if (provider.prepare !== undefined) await provider.prepare(request, target, ctx);
  const started = performance.now();
  const attempt = { target: '0', provider: provider.name, status: null as number | null, startMs: started - ctx.startedAt, latencyMs: 0, error: null as string | null };
  ctx.attempts.push(attempt);
  try {
    const upstream = await api.upstream.send({ ...request, body }, ctx.signal);
    attempt.status = upstream.status;
    return upstream;
  } catch (err) {
    attempt.error = err instanceof GatewayError ? err.code : ((err as Error)?.name ?? 'error');
    throw err;
  } finally {
    attempt.latencyMs = performance.now() - started;
    ctx.upstreamLatencyMs = (ctx.upstreamLatencyMs ?? 0) + attempt.latencyMs;
  }
}

const str = (value: unknown): string | null => (typeof value === 'string' && value !== '' ? value : typeof value === 'number' ? String(value) : null);

/**
 * A provider's error answer in the gateway envelope, with the upstream status:
 * OpenAI's envelope as it is, Azure's (`{error:{code,message}}`), Mistral's
 * (`{message, type, code}` or FastAPI's `{detail}`) and anything else mapped to it.
 */
export function nativeError(upstream: UpstreamResponse, json: unknown): GatewayResponse {
  const o = (json !== null && typeof json === 'object' ? json : {}) as Record<string, unknown>;
  const inner = (o.error !== null && typeof o.error === 'object' ? o.error : o) as Record<string, unknown>;
  let message = str(inner.message) ?? (typeof o.error === 'string' ? o.error : null);
  if (message === null && o.detail !== undefined) message = typeof o.detail === 'string' ? o.detail : JSON.stringify(o.detail).slice(0, 1000);
  const type = str(inner.type) ?? (upstream.status >= 500 ? 'server_error' : 'invalid_request_error');
  return errorAnswer(upstream, { message: message ?? `The provider answered ${upstream.status}.`, type, code: str(inner.code), param: str(inner.param) });
}

/**
 * Reads a resource API's JSON answer: the value for a 2xx, else the error
 * answer to send back as it is ({@link nativeError}).
 */
export async function readNative(upstream: UpstreamResponse): Promise<{ ok: true; value: Record<string, unknown> } | { ok: false; response: GatewayResponse }> {
  if (upstream.status < 200 || upstream.status >= 300) {
    let json: unknown = null;
    try {
      json = await readJson(upstream);
    } catch {
      /* an error page that is not JSON: the status says enough */
    }
    return { ok: false, response: nativeError(upstream, json) };
  }
  let value: unknown;
  try {
    value = await readJson(upstream);
  } catch (err) {
    // A body that stalls or breaks off is a 504 or 502, as on any route, not a 500.
    throw upstreamBodyError(err) ?? err;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new GatewayError('upstream_invalid_response', `The provider answered ${upstream.status} with JSON that is not an object.`);
  }
  return { ok: true, value: value as Record<string, unknown> };
}
