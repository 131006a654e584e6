import { defineErrors } from '../../sdk/index.js';

/** The codes this plugin answers with, beyond the core's. */
export const batchesError = defineErrors({
  invalid_file: { status: 400, type: 'invalid_request_error' },
});

/** The codes, as the plugin declares them (`errorCodes`). */
export const BATCHES_ERRORS = batchesError.codes;
