import { defineErrors } from '../../sdk/index.js';

/** This plugin's error codes: recorded in the log (`error_code`); on the wire, JSON-RPC errors carry them in `data.code`. */
export const mcpError = defineErrors({
  mcp_invalid_message: { status: 400, type: 'invalid_request_error' },
  mcp_session_required: { status: 400, type: 'invalid_request_error' },
  mcp_session_not_found: { status: 404, type: 'invalid_request_error' },
  mcp_tool_not_allowed: { status: 403, type: 'permission_error' },
  mcp_authorization_required: { status: 401, type: 'authentication_error' },
  mcp_authorization_failed: { status: 502, type: 'upstream_error' },
  mcp_guardrails_unavailable: { status: 503, type: 'server_error' },
  mcp_tool_error: { status: 502, type: 'upstream_error' },
  mcp_upstream_error: { status: 502, type: 'upstream_error' },
  mcp_upstream_timeout: { status: 504, type: 'timeout_error' },
});

/** The codes, as the plugin declares them (`errorCodes`). */
export const MCP_ERRORS = mcpError.codes;
