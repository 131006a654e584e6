import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { mcpAuthRouter, getOAuthProtectedResourceMetadataUrl } from '@modelcontextprotocol/sdk/server/auth/router.js';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import { InvalidTokenError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { OAuthServerProvider } from '@modelcontextprotocol/sdk/server/auth/provider.js';
import type { OAuthClientInformationFull, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import * as z from 'zod';

/** A request as the upstream saw it (headers and the JSON-RPC method). */
export interface SeenMcpRequest {
  method: string;
  headers: IncomingHttpHeaders;
  rpc: string | null;
  tool: string | null;
}

export interface McpUpstream {
  /** The Streamable HTTP endpoint: `<origin>/mcp`. */
  url: string;
  origin: string;
  requests: SeenMcpRequest[];
  /** Requests the upstream saw cancelled (the `slow` tool's abort), by JSON-RPC request id. */
  cancelled: Array<string | number>;
  /** Upstream sessions currently open, and those ended by a DELETE. */
  sessions: () => string[];
  deleted: string[];
  close(): Promise<void>;
}

/**
 * One MCP server of the official SDK with the tools the tests call:
 * `echo`, `add`, `secret` (kept out of allow-lists), `fail` (throws: an
 * `isError` result), `slow` (waits `ms`, records a cancellation), `progress`
 * (progress notifications, then a result: an event stream), `whoami` (an
 * email address, for output guardrails); a resource `memo://hello` and a
 * prompt `greet`. `crash` is answered HTTP 500 before the SDK sees it.
 */
function buildServer(record: { cancelled: Array<string | number> }): McpServer {
  const server = new McpServer({ name: 'test-upstream', version: '1.0.0' });
  const text = (t: string) => ({ content: [{ type: 'text' as const, text: t }] });
  server.registerTool('echo', { description: 'Echoes its text', inputSchema: { text: z.string() } }, async ({ text: t }) => text(`echo: ${t}`));
  server.registerTool('add', { description: 'Adds two numbers', inputSchema: { a: z.number(), b: z.number() } }, async ({ a, b }) => text(String(a + b)));
  server.registerTool('secret', { description: 'Not for everyone' }, async () => text('the launch codes'));
  server.registerTool('fail', { description: 'Always fails' }, async () => {
    throw new Error('the tool broke');
  });
  server.registerTool('crash', { description: 'The HTTP layer answers 500' }, async () => text('never'));
  server.registerTool('whoami', { description: 'An email address' }, async () => text('You are alice@example.com'));
  server.registerTool('slow', { description: 'Waits', inputSchema: { ms: z.number() } }, async ({ ms }, extra) => {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      extra.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        record.cancelled.push(extra.requestId);
        resolve();
      });
    });
    return text('slow done');
  });
  server.registerTool('progress', { description: 'Reports progress', inputSchema: { steps: z.number() } }, async ({ steps }, extra) => {
    const token = extra._meta?.progressToken;
    for (let i = 1; i <= steps; i++) {
      if (token !== undefined) await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: steps } });
      await new Promise((r) => setTimeout(r, 5));
    }
    return text(`${steps} steps done`);
  });
  server.registerResource('hello', 'memo://hello', { description: 'A memo', mimeType: 'text/plain' }, async (uri) => ({ contents: [{ uri: uri.href, text: 'hello from a resource' }] }));
  server.registerPrompt('greet', { description: 'Greets', argsSchema: { name: z.string() } }, ({ name }) => ({ messages: [{ role: 'user', content: { type: 'text', text: `Greet ${name}` } }] }));
  return server;
}

/** Serves the SDK's Streamable HTTP transport, one transport and server per session; `before` may answer a request itself. */
function mcpHandler(record: { cancelled: Array<string | number>; requests: SeenMcpRequest[]; deleted: string[] }) {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const handle = async (req: IncomingMessage, res: ServerResponse, body: unknown) => {
    const rpc = body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as { method?: string; params?: { name?: string } }) : null;
    record.requests.push({ method: req.method ?? '', headers: req.headers, rpc: rpc?.method ?? null, tool: rpc?.method === 'tools/call' ? (rpc.params?.name ?? null) : null });
    if (rpc?.method === 'tools/call' && rpc.params?.name === 'crash') {
      res.writeHead(500, { 'content-type': 'text/plain' }).end('internal failure');
      return;
    }
    const sid = req.headers['mcp-session-id'];
    const id = Array.isArray(sid) ? sid[0] : sid;
    let transport = id === undefined ? undefined : transports.get(id);
    if (transport === undefined) {
      if (id !== undefined || rpc?.method !== 'initialize') {
        res.writeHead(id === undefined ? 400 : 404, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'No valid session' } }));
        return;
      }
      const created = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sessionId) => void transports.set(sessionId, created),
      });
      created.onclose = () => {
        if (created.sessionId !== undefined) transports.delete(created.sessionId);
      };
      await buildServer(record).connect(created);
      transport = created;
    }
    if (req.method === 'DELETE' && id !== undefined) record.deleted.push(id);
    await transport.handleRequest(req, res, body ?? undefined);
  };
  return { handle, transports };
}

async function readJsonBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text === '' ? null : JSON.parse(text);
}

/** An MCP server on 127.0.0.1 at `/mcp`; with `bearer`, requests without `authorization: Bearer <bearer>` get 401. */
export async function startMcpUpstream(options: { bearer?: string } = {}): Promise<McpUpstream> {
  const record = { cancelled: [] as Array<string | number>, requests: [] as SeenMcpRequest[], deleted: [] as string[] };
  const { handle, transports } = mcpHandler(record);
  const server: Server = createServer((req, res) => {
    (async () => {
      if (!req.url?.startsWith('/mcp')) {
        res.writeHead(404).end();
        return;
      }
      if (options.bearer !== undefined && req.headers.authorization !== `Bearer ${options.bearer}`) {
        res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"unauthorized"}');
        return;
      }
      const body = req.method === 'POST' ? await readJsonBody(req) : null;
      await handle(req, res, body);
    })().catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: `${origin}/mcp`,
    origin,
    requests: record.requests,
    cancelled: record.cancelled,
    deleted: record.deleted,
    sessions: () => [...transports.keys()],
    async close() {
      for (const t of transports.values()) await t.close().catch(() => undefined);
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

export interface OAuthMcpUpstream extends McpUpstream {
  /** Access and refresh tokens issued, and refresh grants seen. */
  issued: { access: string[]; refresh: string[]; refreshGrants: number; registrations: number; clientSecrets: string[] };
  /** Makes every access token issued so far invalid (as if expired or revoked at the server). */
  revokeAccessTokens(): void;
}

/**
 * An MCP server protected by OAuth 2.1 with the SDK's own server-side auth:
 * protected resource metadata, authorization server metadata, dynamic client
 * registration, an authorization endpoint that approves at once (redirecting
 * with a code, as after a user's consent), PKCE-checked token exchange and
 * refresh, and bearer checks on `/mcp`.
 */
export async function startOAuthMcpUpstream(): Promise<OAuthMcpUpstream> {
  const record = { cancelled: [] as Array<string | number>, requests: [] as SeenMcpRequest[], deleted: [] as string[] };
  const { handle, transports } = mcpHandler(record);
  const clients = new Map<string, OAuthClientInformationFull>();
  const codes = new Map<string, { clientId: string; challenge: string; redirectUri: string; resource?: string }>();
  const access = new Map<string, { clientId: string; expiresAt: number }>();
  const refresh = new Map<string, string>();
  const issued = { access: [] as string[], refresh: [] as string[], refreshGrants: 0, registrations: 0, clientSecrets: [] as string[] };
  const tokens = (clientId: string): OAuthTokens => {
    const a = randomBytes(16).toString('hex');
    const r = randomBytes(16).toString('hex');
    access.set(a, { clientId, expiresAt: Math.floor(Date.now() / 1000) + 3600 });
    refresh.set(r, clientId);
    issued.access.push(a);
    issued.refresh.push(r);
    return { access_token: a, token_type: 'bearer', expires_in: 3600, refresh_token: r, scope: 'tools' };
  };
  const provider: OAuthServerProvider = {
    clientsStore: {
      getClient: (id) => clients.get(id),
      registerClient: (client) => {
        issued.registrations++;
        const full = client as OAuthClientInformationFull;
        clients.set(full.client_id, full);
        if (full.client_secret !== undefined) issued.clientSecrets.push(full.client_secret);
        return full;
      },
    },
    async authorize(client, params, res) {
      const code = randomBytes(16).toString('hex');
      codes.set(code, { clientId: client.client_id, challenge: params.codeChallenge, redirectUri: params.redirectUri, resource: params.resource?.href });
      const target = new URL(params.redirectUri);
      target.searchParams.set('code', code);
      if (params.state !== undefined) target.searchParams.set('state', params.state);
      res.redirect(302, target.href);
    },
    async challengeForAuthorizationCode(_client, code) {
      const c = codes.get(code);
      if (c === undefined) throw new Error('unknown code');
      return c.challenge;
    },
    async exchangeAuthorizationCode(client, code) {
      const c = codes.get(code);
      if (c === undefined || c.clientId !== client.client_id) throw new Error('unknown code');
      codes.delete(code);
      return tokens(client.client_id);
    },
    async exchangeRefreshToken(client, token) {
      if (refresh.get(token) !== client.client_id) throw new Error('unknown refresh token');
      refresh.delete(token);
      issued.refreshGrants++;
      return tokens(client.client_id);
    },
    async verifyAccessToken(token) {
      const t = access.get(token);
      if (t === undefined) throw new InvalidTokenError('unknown or revoked token');
      return { token, clientId: t.clientId, scopes: ['tools'], expiresAt: t.expiresAt };
    },
  };

  const app = express();
  const server: Server = createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const mcpUrl = new URL(`${origin}/mcp`);
  const noLimit = { rateLimit: false as const };
  app.use(
    mcpAuthRouter({
      provider,
      issuerUrl: new URL(origin),
      resourceServerUrl: mcpUrl,
      scopesSupported: ['tools'],
      authorizationOptions: noLimit,
      tokenOptions: noLimit,
      clientRegistrationOptions: noLimit,
      revocationOptions: noLimit,
    }),
  );
  app.all('/mcp', requireBearerAuth({ verifier: provider, resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(mcpUrl) }), express.json(), (req, res) => {
    handle(req, res, req.method === 'POST' ? req.body : null).catch((err: unknown) => {
      if (!res.headersSent) res.status(500).end(String(err));
    });
  });
  return {
    url: mcpUrl.href,
    origin,
    requests: record.requests,
    cancelled: record.cancelled,
    deleted: record.deleted,
    sessions: () => [...transports.keys()],
    issued,
    revokeAccessTokens: () => access.clear(),
    async close() {
      for (const t of transports.values()) await t.close().catch(() => undefined);
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
