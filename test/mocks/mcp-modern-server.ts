import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { acceptedContent, createMcpHandler, inputRequired, McpServer } from '@modelcontextprotocol/server';
import * as z from 'zod/v4';

/** A request as the 2026-07-28 upstream saw it. */
export interface SeenModernRequest {
  method: string;
  headers: IncomingHttpHeaders;
  body: Record<string, any> | null;
}

export interface ModernMcpUpstream {
  /** The endpoint: `<origin>/mcp`. */
  url: string;
  requests: SeenModernRequest[];
  /** How many times each tool ran. */
  runs: Record<string, number>;
  /** Tells open subscriptions the tool list changed. */
  toolsChanged(): void;
  close(): Promise<void>;
}

/**
 * An MCP server of the official v2 SDK (`@modelcontextprotocol/server` 2.4.0) that speaks only 2026-07-28
 * (`legacy: 'reject'`: an `initialize` is refused with -32022): stateless, `server/discover`, per-request `_meta`,
 * subscriptions. Tools: `add`, `echo`, `secret` (kept out of allow-lists), `whoami` (an email address, for output
 * guardrails) and `deploy`, which asks the client to confirm (an `input_required` result) before it runs.
 */
export async function startModernMcpUpstream(): Promise<ModernMcpUpstream> {
  const requests: SeenModernRequest[] = [];
  const runs: Record<string, number> = {};
  const ran = (name: string) => (runs[name] = (runs[name] ?? 0) + 1);
  const text = (t: string) => ({ content: [{ type: 'text' as const, text: t }] });
  const factory = () => {
    const server = new McpServer({ name: 'modern-upstream', version: '2.0.0' }, { instructions: 'a 2026-07-28 server', capabilities: { tools: { listChanged: true } } });
    server.registerTool('add', { description: 'Adds two numbers', inputSchema: z.object({ a: z.number(), b: z.number() }) }, async ({ a, b }) => {
      ran('add');
      return text(String(a + b));
    });
    server.registerTool('echo', { description: 'Echoes its text', inputSchema: z.object({ text: z.string() }) }, async ({ text: t }) => {
      ran('echo');
      return text(`echo: ${t}`);
    });
    server.registerTool('secret', { description: 'Not for everyone' }, async () => {
      ran('secret');
      return text('the launch codes');
    });
    server.registerTool('whoami', { description: 'An email address' }, async () => {
      ran('whoami');
      return text('You are alice@example.com');
    });
    server.registerTool('deploy', { description: 'Deploys after a confirmation', inputSchema: z.object({ env: z.string() }) }, async ({ env }, ctx) => {
      const schema = z.object({ confirm: z.boolean() });
      const answer = acceptedContent(ctx.mcpReq.inputResponses, 'confirm', schema);
      if (answer?.confirm !== true) {
        return inputRequired({ inputRequests: { confirm: inputRequired.elicit({ message: `Deploy to ${env}?`, requestedSchema: schema }) }, requestState: `deploy:${env}` });
      }
      ran('deploy');
      return text(`deployed to ${env}`);
    });
    return server;
  };
  const handler = createMcpHandler(factory, { legacy: 'reject' });
  const server: Server = createServer((req, res) => {
    (async () => {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const raw = Buffer.concat(chunks);
      let body: Record<string, any> | null = null;
      try {
        body = raw.length === 0 ? null : JSON.parse(raw.toString('utf8'));
      } catch {
        body = null;
      }
      requests.push({ method: req.method!, headers: req.headers, body });
      const abort = new AbortController();
      res.on('close', () => {
        if (!res.writableFinished) abort.abort();
      });
      const headers: [string, string][] = [];
      for (const [k, v] of Object.entries(req.headers)) for (const x of Array.isArray(v) ? v : [v ?? '']) headers.push([k, x]);
      const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
      const answer = await handler.fetch(new Request(`http://127.0.0.1${req.url}`, { method: req.method, headers, body: hasBody ? raw : undefined, signal: abort.signal }));
      res.writeHead(answer.status, Object.fromEntries(answer.headers));
      if (answer.body === null) return res.end();
      res.flushHeaders();
      Readable.fromWeb(answer.body as import('node:stream/web').ReadableStream).on('error', () => res.destroy()).pipe(res);
    })().catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: `${origin}/mcp`,
    requests,
    runs,
    toolsChanged: () => handler.notify.toolsChanged(),
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
