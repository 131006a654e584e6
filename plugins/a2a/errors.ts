import { defineErrors } from '../../sdk/index.js';

export const a2aError = defineErrors({
  a2a_invalid_message: { status: 400, type: 'invalid_request_error' },
  a2a_method_not_allowed: { status: 400, type: 'invalid_request_error' },
  a2a_agent_error: { status: 502, type: 'upstream_error' },
  a2a_upstream_error: { status: 502, type: 'upstream_error' },
  a2a_upstream_timeout: { status: 504, type: 'timeout_error' },
  agent_card_unavailable: { status: 502, type: 'upstream_error' },
  agent_card_invalid: { status: 502, type: 'upstream_error' },
});

/** The codes, as the plugin declares them (`errorCodes`). */
export const A2A_ERRORS = a2aError.codes;
