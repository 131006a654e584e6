import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { controlPlane } from '../../../plugins/control-plane/index.js';
import { mcp } from '../../../plugins/mcp/index.js';
import { sqliteStore } from '../../../plugins/stores/sqlite/index.js';
import { serveGateway } from '../../helpers/serve.js';

/**
 * MCP's authorization rules toward an upstream server (2025-11-25), against a hand-made server and authorization
 * server whose every answer the test sets: the unauthenticated first request and its challenge, the protected
 * resource's `resource` checked, the same `resource` text in the authorization and token requests, `application_type`
 * in the registration, `/register` when there is no metadata, the redirect's `iss`, a 403 `insufficient_scope` as a
 * step-up, and a new registration when the server moves to another authorization server.
 */
const ADMIN = 'admin-bootstrap-key-mcp-oauth-rules-01';
type Json = Record<string, any>;

interface Knobs {
  /** The protected resource metadata's `resource`; null: the server's own URL. */
  resource: string | null;
  /** Serve the authorization server's metadata at all (else the client falls back to /authorize, /token, /register). */
  metadata: boolean;
  /** The `iss` the authorization redirect carries: 'right', 'wrong' or 'none'. */
  iss: 'right' | 'wrong' | 'none';
  /** Which of the two authorization servers the resource metadata names. */
  as: 'one' | 'two';
}

async function startUpstream() {
  const knobs: Knobs = { resource: null, metadata: true, iss: 'right', as: 'one' };
  const seen = { mcp: [] as Array<{ auth: string | undefined; method: string }>, register: [] as Json[], authorize: [] as URLSearchParams[], token: [] as URLSearchParams[] };
  const codes = new Map<string, string>();
  const tokens = new Map<string, string>();
  let clients = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const url = new URL(req.url!, origin);
      const json = (status: number, value: unknown, headers: Record<string, string> = {}) => {
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(JSON.stringify(value));
      };
      const asPath = `/as-${knobs.as}`;
      const issuer = `${origin}${asPath}`;
      if (url.pathname === '/custom/prm') {
        return json(200, { resource: knobs.resource ?? `${origin}/mcp`, authorization_servers: [issuer], scopes_supported: ['tools', 'admin'] });
      }
      for (const name of ['one', 'two']) {
        const p = `/as-${name}`;
        const iss = `${origin}${p}`;
        if (url.pathname === `/.well-known/oauth-authorization-server${p}` || url.pathname === `${p}/.well-known/openid-configuration` || url.pathname === `/.well-known/openid-configuration${p}`) {
          if (!knobs.metadata) return json(404, { error: 'not_found' });
          return json(200, {
            issuer: iss, authorization_endpoint: `${iss}/authorize`, token_endpoint: `${iss}/token`, registration_endpoint: `${iss}/register`,
            response_types_supported: ['code'], code_challenge_methods_supported: ['S256'], grant_types_supported: ['authorization_code', 'refresh_token'],
            token_endpoint_auth_methods_supported: ['client_secret_post'], authorization_response_iss_parameter_supported: true,
          });
        }
      }
      // Without metadata, the default endpoints at the authorization server's origin.
      if (url.pathname.endsWith('/register') || url.pathname === '/register') {
        seen.register.push({ ...(JSON.parse(body) as Json), at: url.pathname });
        return json(201, { client_id: `client-${++clients}`, client_secret: `secret-${clients}`, ...(JSON.parse(body) as Json) });
      }
      if (url.pathname.endsWith('/authorize')) {
        seen.authorize.push(url.searchParams);
        const code = randomBytes(8).toString('hex');
        codes.set(code, url.searchParams.get('scope') ?? '');
        const back = new URL(url.searchParams.get('redirect_uri')!);
        back.searchParams.set('code', code);
        back.searchParams.set('state', url.searchParams.get('state')!);
        if (knobs.iss !== 'none') back.searchParams.set('iss', knobs.iss === 'right' ? issuer : `${origin}/elsewhere`);
        res.writeHead(302, { location: back.href });
        return res.end();
      }
      if (url.pathname.endsWith('/token')) {
        const form = new URLSearchParams(body);
        seen.token.push(form);
        const scope = codes.get(form.get('code') ?? '') ?? '';
        const access = randomBytes(8).toString('hex');
        tokens.set(access, scope);
        return json(200, { access_token: access, token_type: 'bearer', expires_in: 3600, scope });
      }
      if (url.pathname === '/mcp' || (url.pathname === '/' && req.method === 'POST')) {
        const message = body === '' ? {} : (JSON.parse(body) as Json);
        const auth = req.headers.authorization;
        seen.mcp.push({ auth, method: message.method });
        const scope = auth?.startsWith('Bearer ') ? tokens.get(auth.slice(7)) : undefined;
        const challenge = (extra: string) => `Bearer ${extra}resource_metadata="${origin}/custom/prm", scope="tools"`;
        if (scope === undefined) return json(401, { error: 'invalid_token' }, { 'www-authenticate': challenge('') });
        if (message.method === 'tools/call' && message.params?.name === 'admin' && !scope.split(' ').includes('admin')) {
          return json(403, { error: 'insufficient_scope' }, { 'www-authenticate': `Bearer error="insufficient_scope", scope="admin", resource_metadata="${origin}/custom/prm"` });
        }
        if (message.id === undefined) {
          res.writeHead(202);
          return res.end();
        }
        if (message.method === 'initialize') return json(200, { jsonrpc: '2.0', id: message.id, result: { protocolVersion: message.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'rules', version: '1' } } });
        return json(200, { jsonrpc: '2.0', id: message.id, result: { content: [{ type: 'text', text: `ran with ${scope}` }] } });
      }
      json(404, { error: 'not_found' });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { origin, url: `${origin}/mcp`, knobs, seen, revoke: () => tokens.clear(), close: () => new Promise<void>((r) => server.close(() => r())) };
}

let gw: Awaited<ReturnType<typeof serveGateway>>;
let up: Awaited<ReturnType<typeof startUpstream>>;
let key = '';
/** The gateway's clock (the MCP plugin's `now`): moved on to let its discovery of a server expire. */
let clock = Date.now();

const call = async (method: string, path: string, auth: string, body?: unknown) => {
  const res = await fetch(`${gw.url}/v1${path}`, { method, headers: { 'x-gateway-api-key': auth, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Json };
};
const rpc = async (server: string, message: Json, session?: string) => {
  const res = await fetch(`${gw.url}/v1/mcp/${server}`, {
    method: 'POST',
    headers: { 'x-gateway-api-key': key, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(session === undefined ? {} : { 'mcp-session-id': session }) },
    body: JSON.stringify(message),
  });
  return { status: res.status, session: res.headers.get('mcp-session-id'), body: (await res.json()) as Json };
};
const initialize = (server: string) => rpc(server, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'rules', version: '1' } } });
/** A new MCP server entry on the upstream (each test starts with no client and no tokens). */
const register = async (url = up.url) => (await call('POST', '/mcp-servers', key, { name: `rules-${randomBytes(4).toString('hex')}`, url, auth: { type: 'oauth' } })).body.id as string;
/** The user's browser: follows the authorization URL to the gateway's callback; the callback's answer. */
const approve = async (authorizationUrl: string) => {
  const approved = await fetch(authorizationUrl, { redirect: 'manual' });
  return fetch(approved.headers.get('location')!);
};

beforeAll(async () => {
  up = await startUpstream();
  gw = await serveGateway({ plugins: [sqliteStore({ file: ':memory:' }), controlPlane({ bootstrapKey: ADMIN, dataDir: await mkdtemp(join(tmpdir(), 'gw-mcp-oauth-')), announce: () => undefined }), mcp({ now: () => clock })] });
  await gw.gateway.ready;
  const workspace = (await call('POST', '/workspaces', ADMIN, { name: 'Rules', slug: 'mcp-oauth-rules' })).body;
  key = (await call('POST', '/api-keys', ADMIN, { type: 'workspace-service', name: 'rules', workspace_id: workspace.id, scopes: ['completions.write', 'mcp_servers.*'] })).body.key;
});
afterAll(async () => {
  await gw?.close();
  await up?.close();
});

describe("MCP's authorization rules toward an upstream server", () => {
  test.each([['a path', () => up.url], ['a bare origin', () => up.origin]])('%s: the first request goes without a token; its challenge names the metadata and the scope; the same resource text in both requests; application_type registered', async (_name, serverUrl) => {
    Object.assign(up.knobs, { resource: serverUrl() === up.origin ? up.origin : null, metadata: true, iss: 'right', as: 'one' });
    const id = await register(serverUrl());
    const before = up.seen.mcp.length;
    const refused = await initialize(id);
    expect(refused.body.error.code).toBe(-32042);
    // The unauthenticated request was made, and its challenge's resource_metadata (not a well-known path) was read.
    expect(up.seen.mcp.slice(before)).toEqual([{ auth: undefined, method: 'initialize' }]);
    const url = new URL(refused.body.error.data.authorization_url);
    expect(url.searchParams.get('scope')).toBe('tools');
    // The gateway's redirect is on loopback here (a developer's machine): registered as native; a public URL is web.
    expect(up.seen.register.at(-1)).toMatchObject({ application_type: 'native', redirect_uris: [`${gw.url}/v1/mcp/oauth/callback`] });
    const done = await approve(url.href);
    expect(done.status).toBe(200);
    expect(url.searchParams.get('resource')).toBe(serverUrl());
    expect(up.seen.token.at(-1)!.get('resource')).toBe(serverUrl());
    const ok = await initialize(id);
    expect(ok.status).toBe(200);
    expect(ok.body.result.serverInfo.name).toBe('rules');
    up.knobs.resource = null;
  });

  test('protected resource metadata for another resource is refused', async () => {
    Object.assign(up.knobs, { resource: 'http://127.0.0.1:9/other', metadata: true, iss: 'right', as: 'one' });
    const id = await register();
    const refused = await initialize(id);
    expect(JSON.stringify(refused.body)).toContain('protected resource metadata is for another resource');
    up.knobs.resource = null;
  });

  test("the redirect's iss must be the authorization server's; a server that always sends one must have", async () => {
    for (const iss of ['wrong', 'none'] as const) {
      Object.assign(up.knobs, { resource: null, metadata: true, iss, as: 'one' });
      const id = await register();
      const refused = await initialize(id);
      const done = await approve(refused.body.error.data.authorization_url);
      expect(done.status, iss).toBeGreaterThanOrEqual(400);
      expect(JSON.stringify(await done.json()), iss).toMatch(iss === 'wrong' ? /another issuer/ : /names no issuer/);
      expect((await initialize(id)).body.error.code, iss).toBe(-32042);
    }
    up.knobs.iss = 'right';
  });

  test("without authorization server metadata, the default endpoints at the authorization server's origin: /register, /authorize", async () => {
    Object.assign(up.knobs, { resource: null, metadata: false, iss: 'none', as: 'one' });
    const id = await register();
    const registrations = up.seen.register.length;
    const refused = await initialize(id);
    expect(refused.body.error.code).toBe(-32042);
    expect(up.seen.register.length).toBe(registrations + 1);
    expect(up.seen.register.at(-1)!.at).toBe('/register');
    expect(new URL(refused.body.error.data.authorization_url).pathname).toBe('/authorize');
    Object.assign(up.knobs, { metadata: true, iss: 'right' });
  });

  test("a 403 insufficient_scope is a step-up: the user authorizes again for the token's scope and the one asked", async () => {
    Object.assign(up.knobs, { resource: null, metadata: true, iss: 'right', as: 'one' });
    const id = await register();
    await approve((await initialize(id)).body.error.data.authorization_url);
    const session = (await initialize(id)).session!;
    const plain = await rpc(id, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: {} } }, session);
    expect(plain.body.result.content[0].text).toBe('ran with tools');
    const stepUp = await rpc(id, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'admin', arguments: {} } }, session);
    expect(stepUp.body.error.code).toBe(-32042);
    const url = new URL(stepUp.body.error.data.authorization_url);
    expect(url.searchParams.get('scope')!.split(' ').sort()).toEqual(['admin', 'tools']);
    await approve(url.href);
    const admin = await rpc(id, { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'admin', arguments: {} } }, session);
    expect(admin.body.result.content[0].text).toBe('ran with tools admin');
  });

  test('the server moves to another authorization server: the gateway registers again there', async () => {
    Object.assign(up.knobs, { resource: null, metadata: true, iss: 'right', as: 'one' });
    const id = await register();
    await approve((await initialize(id)).body.error.data.authorization_url);
    const first = (await call('GET', `/mcp-servers/${id}`, key)).body.auth.client_id as string;
    expect((await initialize(id)).status).toBe(200);
    // The server now names another authorization server, and its tokens from the first are no longer taken.
    up.knobs.as = 'two';
    up.revoke();
    clock += 11 * 60_000;
    const registrations = up.seen.register.length;
    const refused = await initialize(id);
    expect(refused.body.error.code).toBe(-32042);
    expect(new URL(refused.body.error.data.authorization_url).pathname).toBe('/as-two/authorize');
    expect(up.seen.register.length).toBe(registrations + 1);
    const second = (await call('GET', `/mcp-servers/${id}`, key)).body.auth.client_id as string;
    expect(second).not.toBe(first);
    await approve(refused.body.error.data.authorization_url);
    expect((await initialize(id)).status).toBe(200);
    up.knobs.as = 'one';
  });
});
