import { randomBytes } from 'node:crypto';

/**
 * Fixtures of the authorization matrix (test/server/authorization-matrix.test.ts):
 * real resources of a workspace A, made through the admin API, and the tables
 * that say how each `{param}` of a route's path is filled. A route whose path
 * parameter is in neither table fails the matrix, so a new resource route
 * cannot ship without a tenant check being tried on it.
 */

export type Json = Record<string, any>;

/** Sends one request to the gateway under test; `key` null sends none. */
export type Call = (method: string, path: string, key: string | null, body?: unknown, headers?: Record<string, string>) => Promise<{ status: number; body: Json; text: string }>;

/**
 * Put in the name, description, slug or content of every resource of workspace A,
 * so a body answered to another workspace's key can be searched for it: what no
 * path names cannot be in an answer to B unless A's data leaked.
 */
export const A_MARK = `tnta${randomBytes(5).toString('hex')}`;

/** Headers that send an inference request to the mock upstream (groq: no files or batches of its own, so the gateway keeps and runs them). */
export function upstreamHeaders(baseURL: string): Record<string, string> {
  return { 'x-gateway-provider': 'groq', authorization: 'Bearer sk-authz-matrix-0123456789', 'x-gateway-custom-host': baseURL };
}

/** What the fixtures are: ids of workspace A's resources, and the other workspaces. */
export interface Fixtures {
  workspaceA: string;
  workspaceB: string;
  /** Only for `DELETE /v1/workspaces/{id}` (see ROUTE_PARAM_OVERRIDES). */
  workspaceC: string;
  /** A member of A kept for the member routes (role `member`), never a caller. */
  memberUserId: string;
  /** A workspace-service key of A with no scopes, never a caller: the key routes act on it. */
  victimKeyId: string;
  integrationId: string;
  providerId: string;
  configId: string;
  guardrailId: string;
  rateLimitId: string;
  usageLimitId: string;
  partialId: string;
  promptId: string;
  mcpServerId: string;
  agentServerId: string;
  logId: string;
  responseId: string;
  fileId: string;
  batchId: string;
}

/**
 * How each path parameter naming a resource of workspace A is filled, keyed by
 * the path template up to and including that parameter: `/v1/configs/{id}`
 * also serves `/v1/configs/{id}/versions`. Another workspace's key must get a
 * 404 (or 403) for each, never A's data.
 */
export const TENANT_PARAMS: Readonly<Record<string, (f: Fixtures) => string>> = {
  '/v1/workspaces/{id}': (f) => f.workspaceA,
  '/v1/workspaces/{id}/members/{userId}': (f) => f.memberUserId,
  '/v1/api-keys/{id}': (f) => f.victimKeyId,
  '/v1/integrations/{id}': (f) => f.integrationId,
  '/v1/providers/{id}': (f) => f.providerId,
  '/v1/configs/{id}': (f) => f.configId,
  '/v1/guardrails/{id}': (f) => f.guardrailId,
  '/v1/policies/rate-limits/{id}': (f) => f.rateLimitId,
  '/v1/policies/usage-limits/{id}': (f) => f.usageLimitId,
  '/v1/prompts/partials/{id}': (f) => f.partialId,
  '/v1/prompts/{id}': (f) => f.promptId,
  '/v1/prompts/{promptId}': (f) => f.promptId,
  '/v1/mcp-servers/{id}': (f) => f.mcpServerId,
  '/v1/mcp/{id}': (f) => f.mcpServerId,
  '/v1/agent-servers/{id}': (f) => f.agentServerId,
  '/v1/a2a/{id}': (f) => f.agentServerId,
  '/v1/logs/{id}': (f) => f.logId,
  '/v1/responses/{response_id}': (f) => f.responseId,
  '/v1/files/{file_id}': (f) => f.fileId,
  '/v1/batches/{batch_id}': (f) => f.batchId,
};

/** Path parameters that name nothing a workspace owns: the value used, and why no tenant check applies. */
export const NO_TENANT_PARAMS: Readonly<Record<string, { value: string; reason: string }>> = {
  '/docs/{file}': { value: 'init.js', reason: "the API reference viewer's own files: public" },
  '/dashboard/assets/{file}': { value: 'authz-matrix.js', reason: "the dashboard's static files: public" },
  '/scim/v2/ResourceTypes/{id}': { value: 'User', reason: 'SCIM discovery: the same for the whole organisation' },
  '/scim/v2/Schemas/{id}': { value: 'urn:ietf:params:scim:schemas:core:2.0:User', reason: 'SCIM discovery: the same for the whole organisation' },
  '/scim/v2/Users/{id}': { value: '00000000-0000-4000-8000-000000000000', reason: 'SCIM users are people of the organisation, reached with an organisation-wide SCIM token only' },
  '/scim/v2/Groups/{id}': { value: '00000000-0000-4000-8000-000000000000', reason: 'SCIM groups belong to the organisation, reached with an organisation-wide SCIM token only' },
  '/v1/scim/workspaces/{id}': { value: 'scim-mapping-none', reason: 'SCIM group mappings are organisation-level only (no workspace key reaches them)' },
  '/v1/scim/tokens/{id}': { value: 'scim-token-none', reason: 'SCIM tokens are organisation-level only (no workspace key reaches them)' },
  '/v1/logs/groups/{groupBy}': { value: 'model', reason: 'an enumeration of dimensions, not a resource' },
  '/v1/analytics/groups/{groupBy}': { value: 'model', reason: 'an enumeration of dimensions, not a resource' },
  '/v1/fine_tuning/jobs/{job_id}': { value: 'ftjob-authz-matrix', reason: "fine-tuning jobs live at the provider, reached with the caller's own provider credential; the gateway keeps none" },
  '/v1/{path}': { value: 'authz-matrix/probe', reason: "the generic proxy: the provider's own paths, forwarded with the caller's own provider credential" },
};

/**
 * Per-route exceptions to the tables above, keyed `METHOD template`.
 * Archiving a workspace is the one act whose success (the organisation key's
 * call) would take workspace A, and so every other case, away: it is tried on
 * a workspace of its own.
 */
export const ROUTE_PARAM_OVERRIDES: Readonly<Record<string, Readonly<Record<string, (f: Fixtures) => string>>>> = {
  'DELETE /v1/workspaces/{id}': { id: (f) => f.workspaceC },
};

/**
 * Scopes the narrowest key needs besides the route's own for the request
 * itself to be allowed, keyed `METHOD template`: acting on a member needs the
 * member's role's scopes (grants.ts: no key acts on more power than it holds).
 */
export const EXTRA_SCOPES: Readonly<Record<string, readonly string[]>> = {
  'PUT /v1/workspaces/{id}/members/{userId}': ['completions.write', 'logs.read', 'workspaces.read', 'providers.read', 'configs.read'],
  'DELETE /v1/workspaces/{id}/members/{userId}': ['completions.write', 'logs.read', 'workspaces.read', 'providers.read', 'configs.read'],
};

/**
 * A well-formed body per route (`METHOD template`), so a route that validates
 * before it looks the resource up still reaches the lookup for another
 * workspace's key; routes not listed get `{}`. Never a body that would take a
 * caller or a fixture's owner away (no `status: archived`, no role change).
 */
export const BODIES: Readonly<Record<string, unknown>> = {
  'PUT /v1/workspaces/{id}': { description: 'authz matrix' },
  'PUT /v1/workspaces/{id}/members/{userId}': { role: 'member' },
  'PUT /v1/api-keys/{id}': { description: 'authz matrix' },
  'PUT /v1/integrations/{id}': { description: 'authz matrix' },
  'PUT /v1/integrations/{id}/integration-models': { models: [] },
  'PUT /v1/providers/{id}': { note: 'authz matrix' },
  'PUT /v1/configs/{id}': { name: 'authz matrix' },
  'PUT /v1/guardrails/{id}': { name: 'authz matrix' },
  'PUT /v1/policies/rate-limits/{id}': { name: 'authz matrix' },
  'PUT /v1/policies/usage-limits/{id}': { name: 'authz matrix' },
  'PUT /v1/prompts/partials/{id}': { patch: true, description: 'authz matrix' },
  'POST /v1/prompts/partials/{id}/publish': { version: 1 },
  'PUT /v1/prompts/{id}': { patch: true, description: 'authz matrix' },
  'POST /v1/prompts/{id}/publish': { version: 1 },
  'POST /v1/prompts/{promptId}/render': { variables: {} },
  'POST /v1/prompts/{promptId}/completions': { variables: {} },
  'PUT /v1/mcp-servers/{id}': { description: 'authz matrix' },
  'PUT /v1/agent-servers/{id}': { description: 'authz matrix' },
  'POST /v1/mcp/{id}': { jsonrpc: '2.0', id: 1, method: 'tools/list' },
  'POST /v1/a2a/{id}': { jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 'authz-matrix' } },
  'POST /v1/chat/completions': { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
};

/** The body sent by the callers that lack the scope, besides the well-formed one: broken JSON, which a scope check must not even read. */
export const BROKEN_BODY = '{"authz": [1, 2';

interface Upstreams {
  /** The mock OpenAI API's base URL (`…/v1`). */
  openai: string;
  /** An MCP server's Streamable HTTP endpoint on loopback. */
  mcp: string;
  /** An A2A agent's base URL on loopback. */
  agent: string;
}

/**
 * Makes workspaces A, B and C and A's resources, through the admin API.
 * `admin` is an organisation-level key; `keyOfA` mints a key of A with the
 * scopes given, for what a workspace's own key must make (its policies) and
 * what only requests make (a log entry, a stored response, a file, a batch).
 * Every URL is on loopback.
 */
export async function createFixtures(call: Call, admin: string, upstreams: Upstreams, keyOfA: (workspaceA: string, scopes: readonly string[]) => Promise<string>): Promise<Fixtures> {
  const ok = async (method: string, path: string, body?: unknown, key: string = admin, headers: Record<string, string> = {}): Promise<Json> => {
    const r = await call(method, path, key, body, headers);
    if (r.status !== 200) throw new Error(`fixture ${method} ${path}: ${r.status} ${r.text}`);
    return r.body;
  };
  const [a, b, c] = await Promise.all([
    ok('POST', '/v1/workspaces', { name: `Tenant A ${A_MARK}`, slug: `${A_MARK}-ws`, description: A_MARK }),
    ok('POST', '/v1/workspaces', { name: 'Tenant B', slug: `tntb-${A_MARK.slice(4)}` }),
    ok('POST', '/v1/workspaces', { name: 'Tenant C (archived by the matrix)', slug: `tntc-${A_MARK.slice(4)}` }),
  ]);
  const ws = a.id as string;
  const inA = { workspace_id: ws };
  // Made by a key of A, as a workspace's own policies are: one set by an organisation-level key may be changed only by such a key.
  const policyKey = await keyOfA(ws, ['policies.create']);

  const integration = await ok('POST', '/v1/integrations', {
    ...inA,
    name: `${A_MARK} integration`,
    slug: `${A_MARK}-int`,
    ai_provider_id: 'openai',
    key: 'sk-authz-matrix-integration-0123456789',
    configurations: { custom_host: upstreams.openai },
  });
  const provider = await ok('POST', '/v1/providers', { ...inA, name: `${A_MARK} provider`, slug: `${A_MARK}-p`, integration_id: integration.id });
  const [member, victim, config, guardrail, rateLimit, usageLimit, partial, mcpServer, agentServer] = await Promise.all([
    ok('POST', `/v1/workspaces/${ws}/members`, { email: `${A_MARK}-target@example.com`, name: `${A_MARK} target`, role: 'member' }),
    ok('POST', '/v1/api-keys', { ...inA, type: 'workspace-service', name: `${A_MARK} victim`, scopes: [] }),
    ok('POST', '/v1/configs', { ...inA, name: `${A_MARK} config`, slug: `${A_MARK}-cfg`, config: { provider: `@${provider.slug}` } }),
    ok('POST', '/v1/guardrails', { ...inA, name: `${A_MARK} guardrail`, slug: `${A_MARK}-g`, 'default.contains': { words: [A_MARK], operator: 'any' } }),
    // Limits so high, and on a metadata value no request sends, that they never slow the matrix down.
    ok('POST', '/v1/policies/rate-limits', { name: `${A_MARK} rate`, type: 'requests', unit: 'rpm', value: 1_000_000, conditions: [{ key: 'metadata.authz', value: A_MARK }] }, policyKey),
    ok('POST', '/v1/policies/usage-limits', { name: `${A_MARK} budget`, type: 'tokens', credit_limit: 1_000_000_000, conditions: [{ key: 'metadata.authz', value: A_MARK }] }, policyKey),
    ok('POST', '/v1/prompts/partials', { ...inA, name: `${A_MARK}-partial`, content: `signed ${A_MARK}` }),
    ok('POST', '/v1/mcp-servers', { ...inA, name: `${A_MARK} mcp`, description: A_MARK, url: upstreams.mcp, auth: { type: 'none' } }),
    ok('POST', '/v1/agent-servers', { ...inA, name: `${A_MARK} agent`, description: A_MARK, url: upstreams.agent }),
  ]);
  const prompt = await ok('POST', '/v1/prompts', {
    ...inA,
    name: `${A_MARK} prompt`,
    slug: `${A_MARK}-prompt`,
    provider: `@${provider.slug}`,
    template: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: `Say ${A_MARK} {{> ${partial.name}}}` }] },
  });

  // What only requests make, as a key of A.
  const key = await keyOfA(ws, ['completions.write', 'logs.read']);
  const upstream = upstreamHeaders(upstreams.openai);
  const chat = await call('POST', '/v1/chat/completions', key, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: `log ${A_MARK}` }] }, upstream);
  if (chat.status !== 200) throw new Error(`fixture chat: ${chat.status} ${chat.text}`);
  const response = await ok('POST', '/v1/responses', { model: 'gpt-4o-mini', input: `remember ${A_MARK}` }, key, upstream);
  const form = new FormData();
  form.set('purpose', 'batch');
  const line = { custom_id: A_MARK, method: 'POST', url: '/v1/chat/completions', body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: A_MARK }] } };
  form.set('file', new Blob([`${JSON.stringify(line)}\n`]), `${A_MARK}.jsonl`);
  const file = await call('POST', '/v1/files', key, form, upstream);
  if (file.status !== 200) throw new Error(`fixture file: ${file.status} ${file.text}`);
  const batch = await ok('POST', '/v1/batches', { input_file_id: file.body.id, endpoint: '/v1/chat/completions', completion_window: '24h', metadata: { authz: A_MARK } }, key, upstream);
  // The log store writes in the background: wait for the chat request's entry.
  let logId: string | undefined;
  for (let i = 0; i < 200 && logId === undefined; i++) {
    const logs = await ok('GET', '/v1/logs', undefined, key);
    logId = (logs.data as Json[]).find((e) => e.route === 'chat.completions')?.id;
    if (logId === undefined) await new Promise((r) => setTimeout(r, 25));
  }
  if (logId === undefined) throw new Error('fixture log: the chat request was never logged');

  return {
    workspaceA: ws,
    workspaceB: b.id,
    workspaceC: c.id,
    memberUserId: member.user_id,
    victimKeyId: victim.id,
    integrationId: integration.id,
    providerId: provider.id,
    configId: config.id,
    guardrailId: guardrail.id,
    rateLimitId: rateLimit.id,
    usageLimitId: usageLimit.id,
    partialId: partial.id,
    promptId: prompt.id,
    mcpServerId: mcpServer.id,
    agentServerId: agentServer.id,
    logId,
    responseId: response.id,
    fileId: file.body.id,
    batchId: batch.id,
  };
}
