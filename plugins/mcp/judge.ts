import { type GatewayResponse, type GuardrailRunner, isObject, JSONRPC, jsonRpcErrorBody, type JsonRpcId, type RequestContext } from '../../sdk/index.js';
import { rpcAnswer, upstreamFailure } from './answers.js';
import type { RelayedMessage } from './events.js';
import type { McpServerConfig } from './store/types.js';
import { mcpError } from './errors.js';

/*
 * What the MCP gateway judges: a tool call against the server's allow-list
 * and input guardrails before it is forwarded, and the answer (the
 * `tools/list` result filtered to the allowed tools, a tool's result through
 * the output guardrails) before it goes out.
 */

/** The route name a guardrail check sees for a tool call. */
const TOOL_CALL_ROUTE = 'mcp.tools.call';

/** A request the gateway forwards, with what it needs to judge the answer. */
export interface Forwarded {
  id: JsonRpcId;
  method: string;
  /** `tools/call`: the tool's name. */
  tool: string | null;
  params: Record<string, unknown>;
}

/** The allow-list and the input guardrails of a tool call; a refusal is the answer, null lets it go on. */
export async function checkToolCall(ctx: RequestContext, server: McpServerConfig, request: Forwarded, runner: GuardrailRunner | undefined): Promise<GatewayResponse | null> {
  const name = request.params.name;
  if (typeof name !== 'string' || name === '') {
    ctx.error = mcpError('mcp_invalid_message', 'tools/call needs params.name, the tool to call.');
    return rpcAnswer(request.id, JSONRPC.INVALID_PARAMS, 'Invalid params: tools/call needs params.name, the tool to call.');
  }
  request.tool = name;
  ctx.logFields.tool_name = name;
  if (server.allowedTools !== null && !server.allowedTools.has(name)) {
    // Worded as MCP servers word an unknown tool: whether it exists upstream is not the caller's to learn.
    const text = `Unknown tool: "${name.slice(0, 128)}" is not available through this gateway.`;
    ctx.error = mcpError('mcp_tool_not_allowed', text);
    return rpcAnswer(request.id, JSONRPC.INVALID_PARAMS, text);
  }
  const lists = server.guardrails;
  if (lists?.input_guardrails === undefined || lists.input_guardrails.length === 0) return null;
  if (runner === undefined) return upstreamFailure(ctx, request.id, `The MCP server "${server.name}" has guardrails, and this gateway does not load the guardrails plugin: the call is refused.`, null, 'mcp_guardrails_unavailable');
  const args = request.params.arguments;
  const verdict = await runner.run(ctx, lists, 'input', { text: argumentText(args), request: { name, arguments: isObject(args) ? args : {} }, response: null, route: TOOL_CALL_ROUTE });
  ctx.logFields.hook_results = { before_request_hooks: verdict.results, after_request_hooks: [] };
  if (!verdict.denied) return null;
  ctx.error = verdict.error!;
  return rpcAnswer(request.id, JSONRPC.SERVER_ERROR, verdict.error!.message, denialData(ctx, verdict.error!.code));
}

/** Output guardrails on a tool's result: the result, or the denial that replaces it. */
async function checkResult(ctx: RequestContext, server: McpServerConfig, request: Forwarded, answer: RelayedMessage, runner: GuardrailRunner | undefined): Promise<RelayedMessage> {
  const lists = server.guardrails;
  if (lists?.output_guardrails === undefined || lists.output_guardrails.length === 0 || !isObject(answer.result)) return answer;
  if (runner === undefined) {
    ctx.error = mcpError('mcp_guardrails_unavailable', `The MCP server "${server.name}" has guardrails, and this gateway does not load the guardrails plugin: the result is withheld.`);
    return jsonRpcErrorBody(request.id, { code: JSONRPC.INTERNAL_ERROR, message: ctx.error.message });
  }
  const result = answer.result;
  const verdict = await runner.run(ctx, lists, 'output', { text: resultText(result), request: { name: request.tool, arguments: request.params.arguments ?? {} }, response: result, route: TOOL_CALL_ROUTE });
  const before = (ctx.logFields.hook_results as { before_request_hooks?: unknown[] } | undefined)?.before_request_hooks ?? [];
  ctx.logFields.hook_results = { before_request_hooks: before, after_request_hooks: verdict.results };
  if (!verdict.denied) return answer;
  ctx.error = verdict.error!;
  return jsonRpcErrorBody(request.id, { code: JSONRPC.SERVER_ERROR, message: verdict.error!.message, data: denialData(ctx, verdict.error!.code) });
}

/** The answer, before it goes out: allow-list filtering, output guardrails, and what the log records. */
export async function judgeAnswer(ctx: RequestContext, server: McpServerConfig, request: Forwarded, answer: RelayedMessage, runner: GuardrailRunner | undefined): Promise<RelayedMessage> {
  if (request.method === 'tools/list' && server.allowedTools !== null && isObject(answer.result) && Array.isArray(answer.result.tools)) {
    const allowed = server.allowedTools;
    return { ...answer, result: { ...answer.result, tools: answer.result.tools.filter((t: unknown) => isObject(t) && typeof t.name === 'string' && allowed.has(t.name)) } };
  }
  if (request.method !== 'tools/call') {
    if (isObject(answer.error)) ctx.error = mcpError('mcp_upstream_error', `The MCP server answered ${request.method} with an error: ${String(answer.error.message ?? '').slice(0, 500)}`);
    return answer;
  }
  if (isObject(answer.error)) {
    ctx.error = mcpError('mcp_tool_error', `The MCP server refused the call of "${request.tool}": ${String(answer.error.message ?? '').slice(0, 500)}`);
    return answer;
  }
  if (isObject(answer.result) && answer.result.isError === true) {
    ctx.error = mcpError('mcp_tool_error', `The tool "${request.tool}" reported an error: ${resultText(answer.result).slice(0, 500)}`);
  }
  return checkResult(ctx, server, request, answer, runner);
}

function denialData(ctx: RequestContext, code: string) {
  return { status: 446, type: 'guardrail_error', code, hook_results: ctx.logFields.hook_results ?? null };
}

/** What an input check reads of a tool call: the string values of its arguments, one per line (keys and numbers left out). */
export function argumentText(args: unknown): string {
  const out: string[] = [];
  const walk = (v: unknown, depth: number) => {
    if (depth > 64) return;
    if (typeof v === 'string') out.push(v);
    else if (Array.isArray(v)) for (const x of v) walk(x, depth + 1);
    else if (isObject(v)) for (const x of Object.values(v)) walk(x, depth + 1);
  };
  walk(args, 0);
  return out.join('\n');
}

/** What an output check reads of a tool's result: its text content, one block per line; else its structured content as JSON. */
export function resultText(result: Record<string, unknown>): string {
  const parts: string[] = [];
  if (Array.isArray(result.content)) {
    for (const c of result.content) {
      if (!isObject(c)) continue;
      if (c.type === 'text' && typeof c.text === 'string') parts.push(c.text);
      else if (c.type === 'resource' && isObject(c.resource) && typeof c.resource.text === 'string') parts.push(c.resource.text);
    }
  }
  if (parts.length === 0 && result.structuredContent !== undefined) parts.push(JSON.stringify(result.structuredContent));
  return parts.join('\n');
}
