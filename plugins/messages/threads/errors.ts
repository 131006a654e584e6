import { defineErrors } from '../../../sdk/index.js';

/**
 * The thread errors the door raises, with Anthropic's codes: the Messages envelope carries the code as
 * `error.details.error_code`, which is what the Anthropic SDK's thread helpers read to replay the whole
 * conversation under a new thread (errors.ts).
 */
export const threadError = defineErrors({
  thread_not_found: { status: 404, type: 'not_found_error' },
});

/** The codes, as the plugin declares them (`errorCodes`). */
export const THREAD_ERRORS = threadError.codes;

/** Codes answered with `details.error_code` in the Messages envelope. */
export const THREAD_ERROR_CODES: ReadonlySet<string> = new Set(Object.keys(THREAD_ERRORS));

export function threadNotFound(id: string): Error {
  return threadError(
    'thread_not_found',
    `No thread state was found for previous_message_id '${id}' (unknown to this workspace, or expired). Replay the full conversation with thread: {"type": "create"} to start a new thread.`,
    { param: 'thread.previous_message_id' },
  );
}
