#!/usr/bin/env node
// @ts-nocheck -- a plain script run in its own process by the MCP conformance tests (not imported by TypeScript code).
// reference-server.mjs — "everything"-style MCP server for the
// @modelcontextprotocol/conformance@0.1.16 *server* scenarios.
//
// * @modelcontextprotocol/sdk v1 (low-level `Server`), Streamable HTTP transport,
//   plain node:http, bound to 127.0.0.1 only.
// * Endpoint: http://127.0.0.1:<port>/mcp   (port: argv[2] | $PORT | 0 = ephemeral)
// * Prints "MCP_SERVER_URL=<url>" on stdout once listening (handy for test harnesses).
// * Stateful sessions (Mcp-Session-Id), in-memory EventStore (resumability) and
//   retryInterval (SSE `retry:` field) for the SEP-1699 scenarios.
// * DNS-rebinding protection: non-localhost Host/Origin -> HTTP 403.
//
// Names/contents below are the exact expectations read from the scenario code in
// conformance/dist/index.js (0.1.16).

import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import path from 'node:path';

// Resolve the SDK from this directory's node_modules (works from any cwd).
const require = createRequire(import.meta.url);
const sdk = (p) => import(pathToFileURL(require.resolve(`@modelcontextprotocol/sdk/${p}`)).href);
const { Server } = await sdk('server/index.js');
const { StreamableHTTPServerTransport } = await sdk('server/streamableHttp.js');
const T = await sdk('types.js');

const HOST = '127.0.0.1';
const PORT = Number(process.argv[2] ?? process.env.PORT ?? 0);
const log = (...a) => { if (process.env.MCP_REF_DEBUG) console.error('[ref-server]', ...a); };

// 1x1 red PNG, minimal WAV
const PNG_B64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
const WAV_B64 = 'UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=';

// ---------------------------------------------------------------- event store
const events = new Map(); // eventId -> { streamId, message }
let eventSeq = 0;
const eventStore = {
  async storeEvent(streamId, message) {
    const id = `${streamId}::${String(++eventSeq).padStart(10, '0')}`;
    events.set(id, { streamId, message });
    return id;
  },
  async getStreamIdForEventId(eventId) {
    return events.get(eventId)?.streamId ?? eventId.split('::')[0];
  },
  async replayEventsAfter(lastEventId, { send }) {
    const streamId = lastEventId.split('::')[0];
    for (const [id, ev] of events) {
      if (ev.streamId === streamId && id > lastEventId && Object.keys(ev.message).length > 0) {
        await send(id, ev.message);
      }
    }
    return streamId;
  },
};

// ---------------------------------------------------------------- tools
const emptySchema = { type: 'object', properties: {} };
const TOOLS = [
  { name: 'test_simple_text', description: 'Returns simple text content', inputSchema: emptySchema },
  { name: 'test_image_content', description: 'Returns image content', inputSchema: emptySchema },
  { name: 'test_audio_content', description: 'Returns audio content', inputSchema: emptySchema },
  { name: 'test_embedded_resource', description: 'Returns an embedded resource', inputSchema: emptySchema },
  { name: 'test_multiple_content_types', description: 'Returns text, image and resource content', inputSchema: emptySchema },
  { name: 'test_tool_with_logging', description: 'Emits 3 log notifications while running', inputSchema: emptySchema },
  { name: 'test_tool_with_progress', description: 'Emits 3 progress notifications while running', inputSchema: emptySchema },
  { name: 'test_error_handling', description: 'Always returns an isError result', inputSchema: emptySchema },
  { name: 'test_sampling', description: 'Requests sampling/createMessage from the client',
    inputSchema: { type: 'object', properties: { prompt: { type: 'string', description: 'The prompt to send to the LLM' } }, required: ['prompt'] } },
  { name: 'test_elicitation', description: 'Requests elicitation/create from the client',
    inputSchema: { type: 'object', properties: { message: { type: 'string', description: 'The message to show the user' } }, required: ['message'] } },
  { name: 'test_elicitation_sep1034_defaults', description: 'Elicitation with defaults for all primitive types (SEP-1034)', inputSchema: emptySchema },
  { name: 'test_elicitation_sep1330_enums', description: 'Elicitation with all enum schema variants (SEP-1330)', inputSchema: emptySchema },
  { name: 'test_reconnection', description: 'Closes the SSE stream mid-call; result is delivered after the client reconnects (SEP-1699)', inputSchema: emptySchema },
  { name: 'json_schema_2020_12_tool', description: 'Tool with JSON Schema 2020-12 features',
    inputSchema: {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      $defs: { address: { type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } } },
      properties: { name: { type: 'string' }, address: { $ref: '#/$defs/address' } },
      additionalProperties: false,
    } },
];

const text = (t) => ({ content: [{ type: 'text', text: t }] });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function callTool(req, extra) {
  const { name, arguments: args = {} } = req.params;
  switch (name) {
    case 'test_simple_text':
      return text('This is a simple text response for testing.');
    case 'test_image_content':
      return { content: [{ type: 'image', data: PNG_B64, mimeType: 'image/png' }] };
    case 'test_audio_content':
      return { content: [{ type: 'audio', data: WAV_B64, mimeType: 'audio/wav' }] };
    case 'test_embedded_resource':
      return { content: [{ type: 'resource', resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' } }] };
    case 'test_multiple_content_types':
      return { content: [
        { type: 'text', text: 'Multiple content types test:' },
        { type: 'image', data: PNG_B64, mimeType: 'image/png' },
        { type: 'resource', resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json', text: JSON.stringify({ test: 'data', value: 123 }) } },
      ] };
    case 'test_tool_with_logging': {
      const msg = (data) => extra.sendNotification({ method: 'notifications/message', params: { level: 'info', logger: 'reference-server', data } });
      await msg('Tool execution started'); await sleep(50);
      await msg('Tool processing data'); await sleep(50);
      await msg('Tool execution completed');
      return text('Tool with logging executed successfully');
    }
    case 'test_tool_with_progress': {
      const token = req.params._meta?.progressToken;
      for (const p of [0, 50, 100]) {
        if (token !== undefined) {
          await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: p, total: 100 } });
        }
        if (p < 100) await sleep(50);
      }
      return text(`Progress tool completed (token: ${token ?? 'none'})`);
    }
    case 'test_error_handling':
      return { isError: true, content: [{ type: 'text', text: 'This tool intentionally returns an error for testing' }] };
    case 'test_sampling': {
      const r = await extra.sendRequest({ method: 'sampling/createMessage', params: {
        messages: [{ role: 'user', content: { type: 'text', text: String(args.prompt ?? '') } }], maxTokens: 100 } },
        T.CreateMessageResultSchema);
      const c = Array.isArray(r.content) ? r.content.find((x) => x.type === 'text') : r.content;
      return text(`LLM response: ${c?.text ?? '(non-text)'}`);
    }
    case 'test_elicitation': {
      const r = await extra.sendRequest({ method: 'elicitation/create', params: {
        message: String(args.message ?? ''),
        requestedSchema: { type: 'object', properties: {
          username: { type: 'string', description: "User's response" },
          email: { type: 'string', description: "User's email address" } }, required: ['username', 'email'] } } },
        T.ElicitResultSchema);
      return text(`User response: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
    }
    case 'test_elicitation_sep1034_defaults': {
      const r = await extra.sendRequest({ method: 'elicitation/create', params: {
        message: 'Please review and update the form fields with defaults',
        requestedSchema: { type: 'object', properties: {
          name: { type: 'string', description: 'User name', default: 'John Doe' },
          age: { type: 'integer', description: 'User age', default: 30 },
          score: { type: 'number', description: 'User score', default: 95.5 },
          status: { type: 'string', description: 'User status', enum: ['active', 'inactive', 'pending'], default: 'active' },
          verified: { type: 'boolean', description: 'Verification status', default: true } }, required: [] } } },
        T.ElicitResultSchema);
      return text(`Elicitation completed: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
    }
    case 'test_elicitation_sep1330_enums': {
      const r = await extra.sendRequest({ method: 'elicitation/create', params: {
        message: 'Please pick options',
        requestedSchema: { type: 'object', properties: {
          untitledSingle: { type: 'string', description: 'Untitled single-select', enum: ['option1', 'option2', 'option3'] },
          titledSingle: { type: 'string', description: 'Titled single-select', oneOf: [
            { const: 'value1', title: 'First Option' }, { const: 'value2', title: 'Second Option' }, { const: 'value3', title: 'Third Option' }] },
          legacyEnum: { type: 'string', description: 'Legacy titled enum', enum: ['opt1', 'opt2', 'opt3'], enumNames: ['Option One', 'Option Two', 'Option Three'] },
          untitledMulti: { type: 'array', description: 'Untitled multi-select', items: { type: 'string', enum: ['option1', 'option2', 'option3'] } },
          titledMulti: { type: 'array', description: 'Titled multi-select', items: { anyOf: [
            { const: 'value1', title: 'First Choice' }, { const: 'value2', title: 'Second Choice' }, { const: 'value3', title: 'Third Choice' }] } },
        }, required: [] } } },
        T.ElicitResultSchema);
      return text(`Elicitation completed: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
    }
    case 'test_reconnection': {
      // Close this request's SSE stream; the result is stored in the event store
      // and delivered when the client reconnects (GET + Last-Event-ID).
      // The SDK only provides extra.closeSSEStream when resumability is possible
      // (eventStore configured AND client protocol >= 2025-11-25, i.e. a priming
      // event with an id was sent). Otherwise keep the stream open so the result
      // is not lost.
      if (extra.closeSSEStream) extra.closeSSEStream();
      await sleep(100);
      return text('Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure.');
    }
    case 'json_schema_2020_12_tool':
      return text(`Received: ${JSON.stringify(args)}`);
    default:
      throw new T.McpError(T.ErrorCode.InvalidParams, `Unknown tool: ${name}`);
  }
}

// ---------------------------------------------------------------- resources
const RESOURCES = [
  { uri: 'test://static-text', name: 'static-text', description: 'Static text resource', mimeType: 'text/plain' },
  { uri: 'test://static-binary', name: 'static-binary', description: 'Static binary resource (PNG)', mimeType: 'image/png' },
  { uri: 'test://watched-resource', name: 'watched-resource', description: 'Resource that can be subscribed to', mimeType: 'text/plain' },
];
const TEMPLATES = [
  { uriTemplate: 'test://template/{id}/data', name: 'template-data', description: 'Templated JSON resource', mimeType: 'application/json' },
];
function readResource(uri) {
  if (uri === 'test://static-text') return { contents: [{ uri, mimeType: 'text/plain', text: 'This is the content of the static text resource.' }] };
  if (uri === 'test://static-binary') return { contents: [{ uri, mimeType: 'image/png', blob: PNG_B64 }] };
  if (uri === 'test://watched-resource') return { contents: [{ uri, mimeType: 'text/plain', text: 'Watched resource content' }] };
  const m = /^test:\/\/template\/([^/]+)\/data$/.exec(uri);
  if (m) return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify({ id: m[1], templateTest: true, data: `Data for ID: ${m[1]}` }) }] };
  throw new T.McpError(-32002, `Resource not found: ${uri}`);
}

// ---------------------------------------------------------------- prompts
const PROMPTS = [
  { name: 'test_simple_prompt', description: 'A simple prompt without arguments' },
  { name: 'test_prompt_with_arguments', description: 'A prompt with two required arguments', arguments: [
    { name: 'arg1', description: 'First test argument', required: true },
    { name: 'arg2', description: 'Second test argument', required: true }] },
  { name: 'test_prompt_with_embedded_resource', description: 'A prompt embedding a resource', arguments: [
    { name: 'resourceUri', description: 'URI of the resource to embed', required: true }] },
  { name: 'test_prompt_with_image', description: 'A prompt with image content' },
];
function getPrompt({ name, arguments: a = {} }) {
  switch (name) {
    case 'test_simple_prompt':
      return { messages: [{ role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } }] };
    case 'test_prompt_with_arguments':
      return { messages: [{ role: 'user', content: { type: 'text', text: `Prompt with arguments: arg1='${a.arg1}', arg2='${a.arg2}'` } }] };
    case 'test_prompt_with_embedded_resource':
      return { messages: [
        { role: 'user', content: { type: 'resource', resource: { uri: a.resourceUri, mimeType: 'text/plain', text: 'Embedded resource content for testing.' } } },
        { role: 'user', content: { type: 'text', text: 'Please process the embedded resource above.' } }] };
    case 'test_prompt_with_image':
      return { messages: [
        { role: 'user', content: { type: 'image', data: PNG_B64, mimeType: 'image/png' } },
        { role: 'user', content: { type: 'text', text: 'Please analyze the image above.' } }] };
    default:
      throw new T.McpError(T.ErrorCode.InvalidParams, `Unknown prompt: ${name}`);
  }
}

// ---------------------------------------------------------------- per-session server
function createMcpServer() {
  const server = new Server(
    { name: 'mcpconf-reference-server', version: '1.0.0' },
    { capabilities: {
      tools: { listChanged: true },
      resources: { subscribe: true, listChanged: true },
      prompts: { listChanged: true },
      logging: {},          // SDK auto-registers logging/setLevel
      completions: {},
    } },
  );
  const subscriptions = new Set();
  server.setRequestHandler(T.ListToolsRequestSchema, async () => ({ tools: TOOLS }));
  server.setRequestHandler(T.CallToolRequestSchema, (req, extra) => callTool(req, extra));
  server.setRequestHandler(T.ListResourcesRequestSchema, async () => ({ resources: RESOURCES }));
  server.setRequestHandler(T.ListResourceTemplatesRequestSchema, async () => ({ resourceTemplates: TEMPLATES }));
  server.setRequestHandler(T.ReadResourceRequestSchema, async (req) => readResource(req.params.uri));
  server.setRequestHandler(T.SubscribeRequestSchema, async (req) => { subscriptions.add(req.params.uri); return {}; });
  server.setRequestHandler(T.UnsubscribeRequestSchema, async (req) => { subscriptions.delete(req.params.uri); return {}; });
  server.setRequestHandler(T.ListPromptsRequestSchema, async () => ({ prompts: PROMPTS }));
  server.setRequestHandler(T.GetPromptRequestSchema, async (req) => getPrompt(req.params));
  server.setRequestHandler(T.CompleteRequestSchema, async (req) => {
    const { ref, argument } = req.params;
    const pool = ref.type === 'ref/prompt' && ref.name === 'test_prompt_with_arguments'
      ? ['paris', 'park', 'party', 'test', 'testing'] : [];
    const values = pool.filter((v) => v.startsWith(argument.value ?? ''));
    return { completion: { values, total: values.length, hasMore: false } };
  });
  return server;
}

// ---------------------------------------------------------------- HTTP plumbing
const sessions = new Map(); // sessionId -> transport
const LOCAL_HOSTNAMES = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);
function isLocal(hostLike, isOrigin) {
  try {
    const u = new URL(isOrigin ? hostLike : `http://${hostLike}`);
    return LOCAL_HOSTNAMES.has(u.hostname.toLowerCase());
  } catch { return false; }
}
function jsonError(res, status, code, message) {
  if (res.headersSent) return;
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}
async function readBody(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  return Buffer.concat(chunks).toString('utf8');
}
const isInitialize = (b) => (Array.isArray(b) ? b : [b]).some((m) => m && m.method === 'initialize');

const httpServer = http.createServer(async (req, res) => {
  try {
    // DNS rebinding protection (Host and, if present, Origin must be localhost)
    if (!isLocal(req.headers.host ?? '', false) || (req.headers.origin && !isLocal(req.headers.origin, true))) {
      log('rejected host/origin', req.headers.host, req.headers.origin);
      return jsonError(res, 403, -32000, 'Forbidden: invalid Host or Origin header');
    }
    const url = new URL(req.url, `http://${req.headers.host}`);
    if (url.pathname !== '/mcp') { res.writeHead(404).end('Not Found'); return; }

    const sid = req.headers['mcp-session-id'];
    if (req.method === 'POST') {
      const raw = await readBody(req);
      let body;
      try { body = JSON.parse(raw); } catch { return jsonError(res, 400, -32700, 'Parse error'); }
      log('POST', sid ?? '(no session)', Array.isArray(body) ? 'batch' : body.method ?? 'response');
      let transport = sid ? sessions.get(sid) : undefined;
      if (!transport) {
        if (sid) return jsonError(res, 404, -32001, 'Session not found');
        if (!isInitialize(body)) return jsonError(res, 400, -32000, 'Bad Request: no valid session ID');
        transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          eventStore,
          retryInterval: 500,
          onsessioninitialized: (id) => sessions.set(id, transport),
          onsessionclosed: (id) => sessions.delete(id),
        });
        transport.onclose = () => { if (transport.sessionId) sessions.delete(transport.sessionId); };
        const server = createMcpServer();
        await server.connect(transport);
      }
      await transport.handleRequest(req, res, body);
      return;
    }
    if (req.method === 'GET' || req.method === 'DELETE') {
      const transport = sid && sessions.get(sid);
      if (!transport) return jsonError(res, sid ? 404 : 400, -32000, 'Invalid or missing session ID');
      log(req.method, sid, req.headers['last-event-id'] ?? '');
      await transport.handleRequest(req, res);
      return;
    }
    res.writeHead(405, { Allow: 'GET, POST, DELETE' }).end('Method Not Allowed');
  } catch (e) {
    console.error('[ref-server] error', e);
    jsonError(res, 500, -32603, 'Internal server error');
  }
});

httpServer.listen(PORT, HOST, () => {
  const { port } = httpServer.address();
  console.log(`MCP_SERVER_URL=http://${HOST}:${port}/mcp`);
});
const shutdown = () => {
  for (const t of sessions.values()) t.close().catch(() => {});
  httpServer.close(() => process.exit(0));
  setTimeout(() => process.exit(0), 1000).unref();
};
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);
