/**
 * Highest `retry.attempts` a config may ask for. The spec gives no cap, but
 * every attempt is a full upstream call that a client can trigger with one
 * header, so the gateway bounds the fan-out. The config schema refuses more
 * (so the client learns its config is not doing what it says), and the retry
 * plugin never makes more whatever target it is handed.
 */
export const MAX_RETRY_ATTEMPTS = 5;
