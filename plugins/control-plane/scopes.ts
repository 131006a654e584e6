import { hasScope } from '../../sdk/index.js';

/**
 * The scope catalogue. A scope is `<resource>.<action>`; grants may use
 * wildcards (`*`, `configs.*`, `*.rotate`), matched by core's `hasScope`.
 */
export const ADMIN_RESOURCES = ['organisation', 'workspaces', 'members', 'api_keys', 'integrations', 'providers', 'configs', 'policies', 'prompts', 'mcp_servers', 'agent_servers'] as const;
export const ACTIONS = ['create', 'read', 'update', 'delete'] as const;

/** Every scope a key may be given. */
export const ALL_SCOPES: readonly string[] = Object.freeze([
  ...ADMIN_RESOURCES.flatMap((r) => ACTIONS.map((a) => `${r}.${a}`)),
  'api_keys.rotate',
  // Making a version the one every caller gets is its own act: a key may edit prompts without it.
  'prompts.publish',
  'completions.write',
  'logs.read',
  'metrics.read',
  'agents.invoke',
]);

const KNOWN = new Set(ALL_SCOPES);
const RESOURCES = new Set<string>([...ADMIN_RESOURCES, 'completions', 'logs', 'metrics', 'agents']);
const ACTION_NAMES = new Set<string>([...ACTIONS, 'rotate', 'publish', 'write', 'invoke']);

/** Whether a scope, possibly with a wildcard, names something in the catalogue. */
export function isKnownScope(scope: string): boolean {
  if (scope === '*' || KNOWN.has(scope)) return true;
  const dot = scope.indexOf('.');
  if (dot === -1) return false;
  const resource = scope.slice(0, dot);
  const action = scope.slice(dot + 1);
  if (action === '*') return RESOURCES.has(resource);
  if (resource === '*') return ACTION_NAMES.has(action);
  return false;
}

const read = (...resources: string[]) => resources.map((r) => `${r}.read`);
const all = (...resources: string[]) => resources.map((r) => `${r}.*`);

/**
 * What a workspace role may do in its workspace; also the default scopes of a key of that role.
 * `policies.*`, `prompts.*`, `mcp_servers.*` and `agent_servers.*` are in no role: a role's scopes only grow
 * at the cost of every existing key that lacks the new ones no longer being able to give that role, so limits,
 * stored prompts, MCP servers and agents are managed by organisation-level keys and by keys granted those scopes
 * explicitly. (Using an MCP server takes `completions.write`, which every role holds, and so do the connection
 * routes, where the spec's role rule decides whose connections a caller may act on; invoking an agent takes
 * `agents.invoke`, which managers and admins hold.)
 */
export const ROLE_SCOPES: Readonly<Record<string, readonly string[]>> = Object.freeze({
  member: Object.freeze(['completions.write', 'logs.read', ...read('workspaces', 'providers', 'configs')]),
  manager: Object.freeze(['completions.write', 'logs.read', 'agents.invoke', 'api_keys.rotate', ...read('workspaces', 'members', 'api_keys', 'integrations'), ...all('providers', 'configs')]),
  admin: Object.freeze(['completions.write', 'logs.read', 'agents.invoke', ...read('workspaces'), ...all('members', 'api_keys', 'integrations', 'providers', 'configs')]),
});

/**
 * `granted` narrowed to what `allowed` permits: a scope `allowed` covers is
 * kept; a wider one (`configs.*`) becomes the allowed scopes it covers
 * (`configs.read`), so a wildcard is narrowed rather than dropped.
 */
export function capScopes(granted: readonly string[], allowed: readonly string[]): string[] {
  const out = new Set<string>();
  for (const s of granted) {
    if (hasScope(allowed, s)) out.add(s);
    else for (const a of allowed) if (hasScope([s], a)) out.add(a);
  }
  return [...out];
}

/** Default scopes by key type, when a create request names none. */
export function defaultScopes(type: string, role: string): readonly string[] {
  if (type === 'organisation-service') return ALL_SCOPES;
  return ROLE_SCOPES[role] ?? ROLE_SCOPES.member!;
}
