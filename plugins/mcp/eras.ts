import { performance } from 'node:perf_hooks';
import { isObject, type RequestContext } from '../../sdk/index.js';
import { readOwnAnswer } from './answers.js';
import { mcpError } from './errors.js';
import { META, MODERN_VERSION, type Envelope } from './revision.js';
import type { McpConnection, McpServerConfig } from './store/types.js';
import type { McpUpstream } from './upstream.js';

/** What an upstream speaks: 2026-07-28 (with its `server/discover` result), or only the session revisions. */
export type UpstreamEra = { modern: true; discover: Record<string, unknown> } | { modern: false };

/** How long a verdict is kept (a server upgraded or rolled back is noticed within this). */
const ERA_TTL_MS = 5 * 60_000;
/** Longest `server/discover` answer read. */
const DISCOVER_BYTES = 256 * 1024;
/** Verdicts kept at most (one per server URL). */
const MAX_VERDICTS = 10_000;

/**
 * Whether an HTTP status is how a server refuses a request of a revision it does not speak: a 4xx, but for 401 and
 * 403 (authorization, not the revision). A 5xx, like a timeout, says nothing of the revision.
 */
export function refusesRevision(status: number): boolean {
  return status >= 400 && status < 500 && status !== 401 && status !== 403;
}

/** The gateway's identity in the requests it makes on its own. */
export const GATEWAY_CLIENT_INFO = Object.freeze({ name: 'ai-gateway', version: '1.0.0' });

/**
 * Which revision each upstream speaks, found the way MCP's own clients find it: `server/discover` at 2026-07-28
 * first; a valid result offering 2026-07-28 means stateless requests, and any other 4xx (a session server's "not
 * initialized", "method not found", "unsupported version") means the session revisions. A 5xx, a timeout, or
 * authorization that is needed is not a verdict: it is the request's failure (thrown by the call). Kept per
 * instance, per server URL, for five minutes.
 */
export class UpstreamEras {
  readonly #upstream: McpUpstream;
  readonly #verdicts = new Map<string, { era: UpstreamEra; expires: number }>();
  #probes = 0;

  constructor(upstream: McpUpstream) {
    this.#upstream = upstream;
  }

  async of(ctx: RequestContext, server: McpServerConfig, connection: McpConnection, envelope: Envelope | null, timeoutMs: number): Promise<UpstreamEra> {
    const key = `${server.id}\n${server.url}`;
    const known = this.#verdicts.get(key);
    if (known !== undefined && known.expires > performance.now()) return known.era;
    const era = await this.#probe(ctx, server, connection, envelope, timeoutMs);
    if (this.#verdicts.size >= MAX_VERDICTS) this.#verdicts.clear();
    this.#verdicts.set(key, { era, expires: performance.now() + ERA_TTL_MS });
    return era;
  }

  /** Forgets what a server speaks (it answered as if it spoke otherwise). */
  forget(server: McpServerConfig): void {
    this.#verdicts.delete(`${server.id}\n${server.url}`);
  }

  async #probe(ctx: RequestContext, server: McpServerConfig, connection: McpConnection, envelope: Envelope | null, timeoutMs: number): Promise<UpstreamEra> {
    const id = `gateway-discover-${++this.#probes}`;
    const meta: Record<string, unknown> = { [META.protocolVersion]: MODERN_VERSION, [META.clientCapabilities]: envelope?.capabilities ?? {}, [META.clientInfo]: envelope?.clientInfo ?? GATEWAY_CLIENT_INFO };
    const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id, method: 'server/discover', params: { _meta: meta } }));
    const deadline = performance.now() + timeoutMs;
    const upstream = await this.#upstream.call(ctx, server, connection, { method: 'POST', body, session: null, timeoutMs, headers: { 'mcp-protocol-version': MODERN_VERSION, 'mcp-method': 'server/discover' } });
    if (upstream.status >= 300) {
      upstream.body.discard();
      if (upstream.status >= 400 && !refusesRevision(upstream.status)) {
        throw mcpError('mcp_upstream_error', `The MCP server "${server.name}" answered server/discover with HTTP ${upstream.status}.`);
      }
      return { modern: false };
    }
    const answer = await readOwnAnswer(upstream, id, DISCOVER_BYTES, deadline);
    const result = answer?.result;
    if (isObject(result) && Array.isArray(result.supportedVersions) && result.supportedVersions.includes(MODERN_VERSION)) return { modern: true, discover: result };
    return { modern: false };
  }
}
