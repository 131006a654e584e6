import * as v from 'valibot';
import { GatewayError } from '../../../sdk/index.js';
import { json, McpAuthSchema, upstreamServerRoutes, type AdminRoute } from '../../../sdk/admin/index.js';
import { connectionRoutes } from './connections.js';
import type { McpServerRow } from './repository.js';
import type { McpStore } from './store.js';

// MCP tool names are short identifiers; any printable name up to 256 characters is accepted, so an allow-list never refuses a real tool.
const ToolName = v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'), v.maxLength(256, 'must be at most 256 characters'), v.regex(/^[^\s\x00-\x1f]+$/, 'must not contain spaces or control characters'));
const AllowedTools = v.pipe(
  v.array(ToolName, 'must be a list of tool names'),
  v.maxLength(1000, 'holds at most 1000 tools'),
  v.check((list) => new Set(list).size === list.length, 'names a tool twice'),
);
const Hooks = v.pipe(v.array(v.unknown(), 'must be a list of guardrails'), v.maxLength(50, 'holds at most 50 guardrails'));

/** An MCP server's fields beyond every upstream server's, in both bodies. */
const FIELDS = {
  allowed_tools: v.nullish(AllowedTools),
  input_guardrails: v.nullish(Hooks),
  output_guardrails: v.nullish(Hooks),
};

type GuardrailsColumn = { input_guardrails?: unknown[]; output_guardrails?: unknown[] };

/**
 * The guardrails column: the lists, checked with the guardrails plugin's own
 * compiler (a bad one is the 400 a config would get, naming the field).
 */
function guardrailsColumn(store: McpStore, input: readonly unknown[] | null | undefined, output: readonly unknown[] | null | undefined): string | null {
  const lists: Record<string, readonly unknown[]> = {};
  if (input != null && input.length > 0) lists.input_guardrails = input;
  if (output != null && output.length > 0) lists.output_guardrails = output;
  const fields = Object.keys(lists);
  if (fields.length === 0) return null;
  const runner = store.guardrails;
  if (runner === undefined) {
    throw new GatewayError('invalid_request', 'Invalid request body: guardrails on tool calls need the guardrails plugin, which this gateway does not load.', { param: fields[0]! });
  }
  try {
    runner.check(lists);
  } catch (err) {
    if (!(err instanceof GatewayError)) throw err;
    const message = err.message.replace(/^Invalid config: /, '');
    const field = fields.find((f) => message.startsWith(f)) ?? fields[0]!;
    throw new GatewayError('invalid_request', `Invalid request body: ${message}`, { param: field });
  }
  return JSON.stringify(lists);
}

/**
 * The admin routes of MCP servers (`/v1/mcp-servers`), served by the `mcp`
 * plugin beside the control plane's, and of each user's connection to one.
 */
export const mcpServerRoutes: AdminRoute<McpStore>[] = [
  ...upstreamServerRoutes<McpServerRow, McpStore, typeof FIELDS>({
    name: 'mcp_servers',
    path: '/mcp-servers',
    tag: 'MCP servers',
    object: 'mcp-server',
    serves: 'mcp',
    auth: McpAuthSchema,
    aad: 'mcp-server',
    oauth: true,
    fields: FIELDS,
    columns(store, body, row) {
      const columns: Record<string, unknown> = {};
      if (row === null || body.allowed_tools !== undefined) columns.allowed_tools = body.allowed_tools == null ? null : JSON.stringify(body.allowed_tools);
      if (row === null || body.input_guardrails !== undefined || body.output_guardrails !== undefined) {
        // An update that sends one list keeps the other.
        const current = row === null ? {} : (json<GuardrailsColumn>(row.guardrails) ?? {});
        columns.guardrails = guardrailsColumn(
          store,
          body.input_guardrails !== undefined ? body.input_guardrails : current.input_guardrails,
          body.output_guardrails !== undefined ? body.output_guardrails : current.output_guardrails,
        );
      }
      return columns;
    },
    present(row) {
      const guardrails = json<GuardrailsColumn>(row.guardrails);
      return { allowed_tools: json<string[]>(row.allowed_tools), input_guardrails: guardrails?.input_guardrails ?? null, output_guardrails: guardrails?.output_guardrails ?? null };
    },
    // Tokens were issued for the server as it was, and sessions opened on it: a new URL or auth, or archiving, ends them all.
    retire: (store, row) => store.revokeAll(row),
    docs: {
      create: {
        summary: 'Register an MCP server',
        description: 'Its URL, how the gateway authenticates to it (none, a static header, OAuth 2.1 per user), the tools it may call and the guardrails on tool calls. Served at `/v1/mcp/{id}`.',
      },
      list: 'List MCP servers',
      get: 'Get an MCP server',
      update: 'Update an MCP server',
      remove: 'Delete an MCP server',
    },
  }),
  ...connectionRoutes,
];
