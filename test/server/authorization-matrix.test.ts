import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { hasScope } from '../../sdk/index.js';
import { ROLE_SCOPES } from '../../plugins/control-plane/scopes.js';
import { BOOTSTRAP_KEY, startTestServer } from '../helpers/gateway.js';
import { startMockOpenAI, type MockUpstream } from '../mocks/openai-upstream.js';
import { startMcpUpstream, type McpUpstream } from '../mocks/mcp-server.js';
import { startA2AAgent, type A2AAgent } from '../mocks/a2a-agent.js';
import {
  A_MARK,
  BODIES,
  BROKEN_BODY,
  createFixtures,
  EXTRA_SCOPES,
  type Fixtures,
  type Json,
  NO_TENANT_PARAMS,
  ROUTE_PARAM_OVERRIDES,
  TENANT_PARAMS,
  upstreamHeaders,
} from '../helpers/authz-fixtures.js';

/**
 * The authorization matrix: every route the running gateway serves, taken from
 * its own OpenAPI document (generated from the route table), called by every
 * kind of caller through the real server, each answer checked against what the
 * route's scope says it must be. A route added without a scope, without a
 * tenant check, or judging input before its scope fails here, by name.
 *
 * The document gives, per operation, the route name (`x-gateway-route`), its
 * scope (`x-gateway-scope`), and who may call it (`security: []` public, the
 * bearer scheme for routes that take their own token). It folds the generic
 * proxy into one template (`/v1/{path}`): the matrix fills it with a path no
 * other route serves (NO_TENANT_PARAMS), which is all the proxy needs.
 */

// One server for the whole file, started while the file is collected: the tests are generated from its route table.
const gw = await startTestServer();
const openapi = (await (await fetch(`${gw.url}/v1/openapi.json`)).json()) as Json;

/**
 * Routes with no scope of their own that any authenticated caller may use.
 * Keyed `METHOD template`, each with why no scope is needed. A new route with
 * neither a scope nor an entry here fails: add a scope, or list it with a reason.
 */
const OPEN_TO_ANY_KEY: Readonly<Record<string, string>> = {
  // The catalogue of models the caller's own workspace can call: nothing beyond what a key may already use (admin-api.md, "GET /v1/models").
  'GET /v1/models': 'lists the models of the caller’s own workspace',
  // The caller's own identity, role and scopes: every key may learn what it is.
  'GET /v1/auth/whoami': 'describes the calling key or session itself',
  // Ends the caller's own single sign-on session; a key has none to end (it gets a 400 saying so), and no scope could guard one's own session.
  'POST /v1/auth/logout': 'ends the caller’s own session',
};

/**
 * Routes whose handler checks the scope itself because either of two will do,
 * so the document carries none: the narrowest key is tried with each.
 */
const SCOPE_CHECKED_BY_HANDLER: Readonly<Record<string, { anyOf: readonly string[]; reason: string }>> = {
  // Users manage their own MCP connections with completions.write; MCP administrators read everyone's with mcp_servers.read (docs/admin-api.md, MCP servers).
  'GET /v1/mcp-servers/{id}/connections': { anyOf: ['completions.write', 'mcp_servers.read'], reason: 'completions.write for one’s own connections, or mcp_servers.read' },
  'DELETE /v1/mcp-servers/{id}/connections': { anyOf: ['completions.write', 'mcp_servers.update'], reason: 'completions.write for one’s own connection, or mcp_servers.update' },
};

/**
 * Routes that answer a workspace key, even one holding the scope, 403 "needs
 * an organisation-level API key", with why. A route answering that and not
 * listed fails, as does a listed one that stops answering it.
 */
const ORGANISATION_ONLY: Readonly<Record<string, string>> = {
  'GET /v1/organisation/settings': 'settings of the whole organisation',
  'PUT /v1/organisation/settings': 'settings of the whole organisation',
  'POST /v1/workspaces': 'a workspace key cannot make a sibling workspace',
  'DELETE /v1/workspaces/{id}': 'archiving takes a workspace from everyone in it',
  'POST /v1/scim/workspaces': 'a SCIM group mapping gives roles in any workspace',
  'GET /v1/scim/workspaces': 'SCIM group mappings cover every workspace',
  'GET /v1/scim/workspaces/{id}': 'SCIM group mappings cover every workspace',
  'DELETE /v1/scim/workspaces/{id}': 'SCIM group mappings cover every workspace',
  'POST /v1/scim/tokens': 'a SCIM token can put anyone in any mapped group',
  'GET /v1/scim/tokens': 'SCIM tokens are organisation-wide',
  'DELETE /v1/scim/tokens/{id}': 'SCIM tokens are organisation-wide',
  'GET /metrics': "its series count every workspace's traffic",
  'GET /v1/metrics': "its series count every workspace's traffic",
};

/**
 * Defects the matrix found and that are not fixed here, by route: the text is
 * added to the failure message; the case keeps failing until the defect is fixed
 * (then remove the entry).
 */
const KNOWN_DEFECTS: Readonly<Record<string, string>> = {};

/** Scopes given to the key "holding only some other scope": the first that does not cover the route's. */
const OTHER_SCOPES = ['agents.invoke', 'logs.read'] as const;

/** Parallel requests at a time (the machine has 2 cores and is shared). */
const CONCURRENCY = 6;

// ---------------------------------------------------------------------------------------------
// The route table, from the document.

type Access = 'public' | 'bearer' | 'key';
interface Operation {
  /** `METHOD template`, e.g. `GET /v1/configs/{id}`. */
  id: string;
  method: string;
  template: string;
  route: string;
  access: Access;
  scope: string | undefined;
  /** The request selects a provider (the inference routes, files, batches, …). */
  inference: boolean;
  /** Errors in the gateway's envelope (else the route's own protocol: Anthropic's, JSON-RPC, SCIM). */
  envelope: boolean;
}

const FORBIDDEN_REF = '#/components/responses/Forbidden';
const UNAUTHORIZED_REF = '#/components/responses/Unauthorized';

const operations: Operation[] = [];
for (const [template, methods] of Object.entries(openapi.paths as Record<string, Record<string, Json>>)) {
  for (const [method, op] of Object.entries(methods)) {
    const security = op.security as Json[] | undefined;
    const schemes = new Set((security ?? []).flatMap((s) => Object.keys(s)));
    const access: Access = Array.isArray(security) && security.length === 0 ? 'public' : schemes.has('bearerToken') && !schemes.has('gatewayKey') ? 'bearer' : 'key';
    const errorRef = (op.responses?.['403'] ?? op.responses?.['401'])?.$ref as string | undefined;
    operations.push({
      id: `${method.toUpperCase()} ${template}`,
      method: method.toUpperCase(),
      template,
      route: op['x-gateway-route'],
      access,
      scope: op['x-gateway-scope'],
      inference: schemes.has('providerKey'),
      envelope: errorRef === FORBIDDEN_REF || errorRef === UNAUTHORIZED_REF,
    });
  }
}

/** What a route needs of a key. */
type Need = { kind: 'public' } | { kind: 'bearer' } | { kind: 'any-key' } | { kind: 'scope'; anyOf: readonly string[] } | { kind: 'unknown' };

function needOf(op: Operation): Need {
  if (op.access === 'public') return { kind: 'public' };
  if (op.access === 'bearer') return { kind: 'bearer' };
  if (op.scope !== undefined) return { kind: 'scope', anyOf: [op.scope] };
  const byHandler = SCOPE_CHECKED_BY_HANDLER[op.id];
  if (byHandler !== undefined) return { kind: 'scope', anyOf: byHandler.anyOf };
  if (OPEN_TO_ANY_KEY[op.id] !== undefined) return { kind: 'any-key' };
  return { kind: 'unknown' };
}

/** How a route's path parameters are filled: a fixture of A (tenant) or a fixed value; `missing` names those with neither. */
function paramsOf(op: Operation): { tenant: boolean; missing: string[]; fill: (f: Fixtures) => string } {
  const segments = op.template.split('/');
  const fills: Array<(f: Fixtures) => string> = [];
  const missing: string[] = [];
  let tenant = false;
  segments.forEach((segment, i) => {
    const m = /^\{(.+)\}$/.exec(segment);
    if (m === null) {
      fills.push(() => segment);
      return;
    }
    const name = m[1]!;
    const prefix = segments.slice(0, i + 1).join('/');
    const override = ROUTE_PARAM_OVERRIDES[op.id]?.[name];
    const fixture = TENANT_PARAMS[prefix];
    const fixed = NO_TENANT_PARAMS[prefix];
    if (override !== undefined || fixture !== undefined) {
      tenant = true;
      const get = override ?? fixture!;
      fills.push((f) => encodeURIComponent(get(f)));
    } else if (fixed !== undefined) {
      // The proxy's `{path}` may span segments: kept as written.
      fills.push(() => (name === 'path' ? fixed.value : encodeURIComponent(fixed.value)));
    } else {
      missing.push(`{${name}} (add "${prefix}" to TENANT_PARAMS with a fixture of workspace A, or to NO_TENANT_PARAMS with the reason it names nothing a workspace owns)`);
      fills.push(() => 'authz-matrix-unfilled');
    }
  });
  return { tenant, missing, fill: (f) => fills.map((fill) => fill(f)).join('/') };
}

// ---------------------------------------------------------------------------------------------
// Callers and what each must get.

type Caller =
  | { kind: 'none' }
  | { kind: 'bad' }
  | { kind: 'empty' }
  | { kind: 'narrow'; workspace: 'A' | 'B'; scopes: readonly string[] }
  | { kind: 'role'; role: string }
  | { kind: 'organisation' }
  | { kind: 'scim' }
  | { kind: 'bad-scim' };

type Expect = 'public' | 'unauthenticated' | 'forbidden' | 'allowed' | 'own-resource' | 'organisation-only' | 'other-tenant';

interface Case {
  name: string;
  op: Operation;
  caller: Caller;
  body: 'valid' | 'broken';
  expect: Expect;
  /** The scopes a forbidden answer is about (the route's, any of them). */
  scopes: readonly string[];
  /** Cases run phase by phase: nothing that may change state runs before a check that needs the state untouched. */
  phase: number;
  path: (f: Fixtures) => string;
}

const setKey = (scopes: readonly string[]) => [...scopes].sort().join(' ');
const callerName = (c: Caller): string => {
  switch (c.kind) {
    case 'none':
      return 'no key';
    case 'bad':
      return 'an unknown key';
    case 'empty':
      return 'a key of A with no scope';
    case 'narrow':
      return `a key of ${c.workspace} with only ${c.scopes.join(', ')}`;
    case 'role':
      return `${/^[aeiou]/.test(c.role) ? 'an' : 'a'} ${c.role}'s user key of A`;
    case 'organisation':
      return 'an organisation-level key';
    case 'scim':
      return 'a SCIM token';
    case 'bad-scim':
      return 'an unknown SCIM token';
  }
};

const cases: Case[] = [];
const unscoped: Operation[] = [];
const unfilled: Array<{ op: Operation; missing: string[] }> = [];
const narrowSets = new Map<string, readonly string[]>();

for (const op of operations) {
  const need = needOf(op);
  const params = paramsOf(op);
  if (params.missing.length > 0) unfilled.push({ op, missing: params.missing });
  const add = (caller: Caller, expect: Expect, phase: number, body: 'valid' | 'broken' = 'valid', scopes: readonly string[] = []) => {
    if (caller.kind === 'narrow') narrowSets.set(setKey(caller.scopes), caller.scopes);
    cases.push({ name: `${op.id} (${op.route}), ${callerName(caller)}${body === 'broken' ? ', broken input' : ''}: ${expect}`, op, caller, body, expect, scopes, phase, path: params.fill });
  };
  const roles = Object.keys(ROLE_SCOPES);
  // Calls that may succeed run last, deletions after everything else, so they take no fixture from a call that needs it.
  const later = op.method === 'DELETE' ? 5 : 4;
  switch (need.kind) {
    case 'public':
      for (const caller of [{ kind: 'none' }, { kind: 'bad' }, { kind: 'role', role: 'member' }, { kind: 'organisation' }] as Caller[]) add(caller, 'public', 1);
      break;
    case 'bearer':
      // The route takes a token of its own (SCIM), never a gateway key: even the organisation's key is a 401 there.
      for (const caller of [{ kind: 'none' }, { kind: 'bad' }, { kind: 'bad-scim' }, { kind: 'organisation' }] as Caller[]) add(caller, 'unauthenticated', 1);
      add({ kind: 'scim' }, 'allowed', 3);
      break;
    case 'any-key':
      add({ kind: 'none' }, 'unauthenticated', 1);
      add({ kind: 'bad' }, 'unauthenticated', 1);
      for (const caller of [{ kind: 'empty' }, ...roles.map((role) => ({ kind: 'role', role })), { kind: 'organisation' }] as Caller[]) add(caller, 'allowed', later);
      // Another workspace's key: let in, and shown nothing of A (judged for every outsider, below).
      add({ kind: 'narrow', workspace: 'B', scopes: [OTHER_SCOPES[0]] }, 'allowed', later);
      break;
    case 'scope': {
      const orgOnly = ORGANISATION_ONLY[op.id] !== undefined;
      const holding = orgOnly ? 'organisation-only' : 'allowed';
      const anyOf = need.anyOf;
      const extra = EXTRA_SCOPES[op.id] ?? [];
      add({ kind: 'none' }, 'unauthenticated', 1);
      add({ kind: 'none' }, 'unauthenticated', 1, 'broken');
      add({ kind: 'bad' }, 'unauthenticated', 1);
      for (const body of ['valid', 'broken'] as const) {
        add({ kind: 'empty' }, 'forbidden', 1, body, anyOf);
        const other = OTHER_SCOPES.find((s) => !anyOf.some((needed) => hasScope([s], needed)))!;
        add({ kind: 'narrow', workspace: 'A', scopes: [other] }, 'forbidden', 1, body, anyOf);
      }
      for (const role of roles) {
        if (anyOf.some((s) => hasScope(ROLE_SCOPES[role]!, s))) add({ kind: 'role', role }, orgOnly ? 'organisation-only' : 'allowed', orgOnly ? 2 : later);
        else for (const body of ['valid', 'broken'] as const) add({ kind: 'role', role }, 'forbidden', 1, body, anyOf);
      }
      // On A's own resource, A's narrowest key must also find it (not a 404), or B's 404 below would prove nothing;
      // a DELETE may find it gone (another caller deleted it first), so there only the refusal is judged.
      const own = params.tenant && !orgOnly && op.method !== 'DELETE' ? 'own-resource' : holding;
      for (const scope of anyOf) add({ kind: 'narrow', workspace: 'A', scopes: [scope, ...extra] }, own, orgOnly ? 2 : later);
      add({ kind: 'narrow', workspace: 'B', scopes: [anyOf[0]!, ...extra] }, params.tenant ? 'other-tenant' : holding, params.tenant || orgOnly ? 2 : later);
      add({ kind: 'organisation' }, 'allowed', later);
      break;
    }
    case 'unknown':
      unscoped.push(op);
      break;
  }
}

// ---------------------------------------------------------------------------------------------
// Running them.

interface Answer {
  status: number;
  text: string;
  body: Json | null;
}

let openaiMock: MockUpstream;
let mcpUpstream: McpUpstream;
let agent: A2AAgent;
let fixtures: Fixtures;
const keys = { A: new Map<string, string>(), B: new Map<string, string>(), roles: new Map<string, string>(), empty: '', scim: '' };
const BAD_KEY = `gwk-${randomBytes(32).toString('base64url')}`;
const answers = new Map<Case, Answer>();

async function request(method: string, path: string, init: { key?: string | null; body?: unknown; headers?: Record<string, string> } = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...(init.key ? { 'x-gateway-api-key': init.key } : {}), ...init.headers };
  let body: BodyInit | undefined;
  if (typeof init.body === 'string') {
    body = init.body;
    headers['content-type'] ??= 'application/json';
  } else if (init.body instanceof FormData) {
    body = init.body;
  } else if (init.body !== undefined) {
    body = JSON.stringify(init.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(`${gw.url}${path}`, { method, headers, body, redirect: 'manual', signal: AbortSignal.timeout(15_000) });
  const text = await res.text();
  let parsed: Json | null = null;
  try {
    parsed = JSON.parse(text) as Json;
  } catch {
    // Not JSON (a page, a redirect, an event stream): judged by its status and text.
  }
  return { status: res.status, text, body: parsed };
}

const call = (method: string, path: string, key: string | null, body?: unknown, headers?: Record<string, string>) =>
  request(method, path, { key, body, headers }).then((a) => ({ status: a.status, body: a.body ?? {}, text: a.text }));

async function pool<T>(items: readonly T[], run: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(CONCURRENCY, items.length) }, async () => {
      while (next < items.length) await run(items[next++]!);
    }),
  );
}

function keyFor(caller: Caller): { key: string | null; headers: Record<string, string> } {
  switch (caller.kind) {
    case 'none':
      return { key: null, headers: {} };
    case 'bad':
      return { key: BAD_KEY, headers: {} };
    case 'empty':
      return { key: keys.empty, headers: {} };
    case 'narrow':
      return { key: keys[caller.workspace].get(setKey(caller.scopes))!, headers: {} };
    case 'role':
      return { key: keys.roles.get(caller.role)!, headers: {} };
    case 'organisation':
      return { key: BOOTSTRAP_KEY, headers: {} };
    case 'scim':
      return { key: null, headers: { authorization: `Bearer ${keys.scim}` } };
    case 'bad-scim':
      return { key: null, headers: { authorization: `Bearer scim-${randomBytes(24).toString('hex')}` } };
  }
}

async function run(c: Case): Promise<void> {
  const { key, headers } = keyFor(c.caller);
  const { op } = c;
  // Inference routes get an upstream (the mock), so the request can go all the way; GET /v1/models would hand such a request to the proxy, another route.
  const upstream = op.inference && needOf(op).kind === 'scope' ? upstreamHeaders(openaiMock.baseURL) : {};
  const hasBody = op.method === 'POST' || op.method === 'PUT' || op.method === 'PATCH';
  const body = !hasBody ? undefined : c.body === 'broken' ? BROKEN_BODY : (BODIES[op.id] ?? {});
  // Broken input is an unknown query parameter as well as broken JSON: a scope check reads neither.
  const query = c.body === 'broken' ? '?authz_bogus=%7B' : '';
  try {
    answers.set(c, await request(op.method, c.path(fixtures) + query, { key, body, headers: { ...upstream, ...headers } }));
  } catch (err) {
    answers.set(c, { status: -1, text: `request failed: ${String(err)}`, body: null });
  }
}

beforeAll(async () => {
  [openaiMock, mcpUpstream, agent] = await Promise.all([startMockOpenAI({ record: false }), startMcpUpstream(), startA2AAgent()]);
  const mint = async (workspace: string, scopes: readonly string[], name: string): Promise<string> => {
    const r = await call('POST', '/v1/api-keys', BOOTSTRAP_KEY, { type: 'workspace-service', name, workspace_id: workspace, scopes });
    if (r.status !== 200) throw new Error(`key ${name} [${scopes.join(', ')}]: ${r.status} ${r.text}`);
    return r.body.key as string;
  };
  fixtures = await createFixtures(call, BOOTSTRAP_KEY, { openai: openaiMock.baseURL, mcp: mcpUpstream.url, agent: agent.url }, (ws, scopes) => mint(ws, scopes, 'fixture maker'));

  const sets = [...narrowSets.values()];
  await pool(
    sets.flatMap((scopes) => (['A', 'B'] as const).map((w) => ({ w, scopes }))),
    async ({ w, scopes }) => {
      keys[w].set(setKey(scopes), await mint(w === 'A' ? fixtures.workspaceA : fixtures.workspaceB, scopes, `narrow ${w}`));
    },
  );
  keys.empty = await mint(fixtures.workspaceA, [], 'no scope');
  await pool(Object.keys(ROLE_SCOPES), async (role) => {
    const m = await call('POST', `/v1/workspaces/${fixtures.workspaceA}/members`, BOOTSTRAP_KEY, { email: `authz-${role}@example.com`, role });
    if (m.status !== 200) throw new Error(`member ${role}: ${m.status} ${m.text}`);
    const k = await call('POST', '/v1/api-keys', BOOTSTRAP_KEY, { type: 'workspace-user', name: `${role}'s key`, workspace_id: fixtures.workspaceA, user_id: m.body.user_id });
    if (k.status !== 200) throw new Error(`${role}'s key: ${k.status} ${k.text}`);
    keys.roles.set(role, k.body.key);
  });
  const scim = await call('POST', '/v1/scim/tokens', BOOTSTRAP_KEY, { name: 'authz matrix' });
  if (scim.status !== 200) throw new Error(`SCIM token: ${scim.status} ${scim.text}`);
  keys.scim = scim.body.token;

  // Phase by phase: refusals first, then other tenants and organisation-only refusals, then the SCIM token,
  // then what may change state (updates, then deletions: a fixture deleted, workspace C archived).
  for (const phase of [1, 2, 3, 4, 5]) await pool(cases.filter((c) => c.phase === phase), run);
}, 120_000);

afterAll(async () => {
  await gw.close();
  await Promise.all([openaiMock?.close(), mcpUpstream?.close(), agent?.close()]);
});

// ---------------------------------------------------------------------------------------------
// Judging the answers.

const ORG_ONLY_MESSAGE = /needs an organisation-level API key/;

/** The message of an error answer, whatever its shape (the gateway's envelope, Anthropic's, JSON-RPC's, SCIM's). */
function messageOf(a: Answer): string {
  const b = a.body;
  if (b === null) return a.text.slice(0, 300);
  return String(b.error?.message ?? b.detail ?? b.message ?? a.text).slice(0, 300);
}

/** Callers that may see nothing of workspace A, whatever the route: no credential, an unknown one, workspace B's keys. */
const outsider = (c: Caller): boolean => c.kind === 'none' || c.kind === 'bad' || c.kind === 'bad-scim' || (c.kind === 'narrow' && c.workspace === 'B');

function judge(c: Case, a: Answer): string | null {
  const what = `${c.op.id} (route ${c.op.route}) for ${callerName(c.caller)} answered ${a.status}: ${messageOf(a)}${KNOWN_DEFECTS[c.op.id] === undefined ? '' : ` [known defect: ${KNOWN_DEFECTS[c.op.id]}]`}`;
  const refused = a.status === 401 || a.status === 403;
  // Lists as much as single resources: B's GET /v1/configs must not hold A's configs.
  if (outsider(c.caller) && a.text.includes(A_MARK)) return `${what}; the answer holds workspace A's data (${A_MARK})`;
  switch (c.expect) {
    case 'public':
      return refused ? `${what}; a public route never refuses a caller` : null;
    case 'unauthenticated':
      if (a.status !== 401) return `${what}; expected 401 (no valid credential)`;
      if (c.op.envelope && a.body?.error?.code !== 'unauthorized') return `${what}; expected the envelope with code "unauthorized", got ${a.text.slice(0, 200)}`;
      return null;
    case 'forbidden': {
      if (a.status === 200) return `${what}; expected 403: the route does not check its scope (${c.scopes.join(' or ')}): give its RouteDefinition a \`scope\``;
      if (a.status === 400) return `${what}; expected 403: the route judged input before its scope (${c.scopes.join(' or ')}): set \`scope\` on the route so the core checks it first`;
      if (a.status !== 403) return `${what}; expected 403 for a key without ${c.scopes.join(' or ')}`;
      if (c.op.envelope) {
        const e = a.body?.error;
        if (e === undefined || !['message', 'type', 'param', 'code'].every((k) => k in e) || e.code !== 'forbidden') return `${what}; expected the envelope {"error":{"message","type","param","code":"forbidden"}}, got ${a.text.slice(0, 200)}`;
      }
      if (!c.scopes.some((s) => a.text.includes(`"${s}"`) || a.text.includes(`\\"${s}\\"`))) return `${what}; the 403 should name the missing scope (${c.scopes.join(' or ')})`;
      return null;
    }
    case 'allowed':
      if (a.status === 403 && ORG_ONLY_MESSAGE.test(a.text)) return `${what}; the route takes organisation-level keys only: list "${c.op.id}" in ORGANISATION_ONLY with the reason`;
      if (refused || a.status < 0) return `${what}; a caller holding ${c.caller.kind === 'narrow' ? c.caller.scopes.join(', ') : 'the scope'} must not be refused`;
      return null;
    case 'own-resource':
      if (refused || a.status < 0) return `${what}; a key of A holding ${c.caller.kind === 'narrow' ? c.caller.scopes.join(', ') : 'the scope'} must not be refused its own workspace's resource`;
      if (a.status === 404) return `${what}; a key of A must find A's own resource (a positive control: without it, workspace B's 404 proves nothing); check the fixture`;
      return null;
    case 'organisation-only':
      if (a.status === 403 && ORG_ONLY_MESSAGE.test(a.text)) return null;
      return `${what}; expected 403 "needs an organisation-level API key" (listed in ORGANISATION_ONLY: remove it if workspace keys may now call it)`;
    case 'other-tenant':
      if (a.status !== 404 && a.status !== 403) return `${what}; expected 404 (or 403) for workspace A's resource asked by workspace B's key${a.status === 200 ? ': the route lacks its tenant check' : ''}`;
      return null;
  }
}

describe('the route table', () => {
  test('comes from the running gateway and holds the routes it serves', () => {
    // Guards against a document that lists nothing, which would make every test below vacuous.
    const names = new Set(operations.map((o) => o.route));
    for (const name of ['chat.completions', 'admin.configs.get', 'admin.api_keys.rotate', 'logs.get', 'proxy', 'health']) expect(names, name).toContain(name);
    expect(cases.length).toBeGreaterThan(operations.length * 4);
  });

  test.each(operations.filter((op) => op.access === 'key').map((op) => [op.id, op] as const))('%s has a scope, or is listed as open to any key', (_, op) => {
    if (unscoped.includes(op)) {
      expect.fail(`${op.id} (route ${op.route}) takes any valid key and declares no scope: give its RouteDefinition a \`scope\`, or list it in OPEN_TO_ANY_KEY (or SCOPE_CHECKED_BY_HANDLER) of this test with the reason`);
    }
  });

  test.each(operations.filter((op) => op.template.includes('{')).map((op) => [op.id, op] as const))('%s has every path parameter filled', (_, op) => {
    const problem = unfilled.find((u) => u.op === op);
    if (problem !== undefined) expect.fail(`${op.id} (route ${op.route}): no fixture for ${problem.missing.join('; ')}`);
  });

  test('the explicit lists name routes that exist, as they are', () => {
    const byId = new Map(operations.map((o) => [o.id, o]));
    for (const id of Object.keys(OPEN_TO_ANY_KEY)) {
      expect(byId.has(id), `OPEN_TO_ANY_KEY names ${id}, which the gateway does not serve`).toBe(true);
      expect(byId.get(id)!.scope, `${id} now has a scope: remove it from OPEN_TO_ANY_KEY`).toBeUndefined();
    }
    for (const id of Object.keys(SCOPE_CHECKED_BY_HANDLER)) {
      expect(byId.has(id), `SCOPE_CHECKED_BY_HANDLER names ${id}, which the gateway does not serve`).toBe(true);
      expect(byId.get(id)!.scope, `${id} now has a scope: remove it from SCOPE_CHECKED_BY_HANDLER`).toBeUndefined();
    }
    for (const id of Object.keys(ORGANISATION_ONLY)) expect(byId.get(id)?.scope, `ORGANISATION_ONLY names ${id}, which is not a scoped route of the gateway`).toBeDefined();
    for (const id of [...Object.keys(KNOWN_DEFECTS), ...Object.keys(ROUTE_PARAM_OVERRIDES), ...Object.keys(EXTRA_SCOPES), ...Object.keys(BODIES)]) expect(byId.has(id), `a fixture table names ${id}, which the gateway does not serve`).toBe(true);
  });
});

describe('every route answers every caller as its scope says', () => {
  test.each(cases.map((c) => [c.name, c] as const))('%s', (_, c) => {
    const a = answers.get(c);
    if (a === undefined) return expect.fail(`${c.name}: not run (see the first failure of beforeAll)`);
    const problem = judge(c, a);
    if (problem !== null) expect.fail(problem);
  });
});
