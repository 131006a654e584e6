import { defineErrors } from '../../sdk/index.js';

/** The error codes this door raises. */
export const responsesError = defineErrors({
  context_length_exceeded: { status: 400, type: 'invalid_request_error' },
  previous_response_not_found: { status: 404, type: 'invalid_request_error' },
  /** A plain GET of the WebSocket mode's path. */
  upgrade_required: { status: 426, type: 'invalid_request_error' },
});

/** The codes, as the plugin declares them (`errorCodes`). */
export const RESPONSES_ERRORS = responsesError.codes;
