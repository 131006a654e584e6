/**
 * The gateway's error model: one error class carrying a stable code, and one
 * table mapping each code to its HTTP status and OpenAI-style error `type`.
 * Only the HTTP layer turns a {@link GatewayError} into a response.
 */

/** Stable error codes. Clients may match on these; never rename one. */
export const ERROR_CODES = {
  invalid_json: { status: 400, type: 'invalid_request_error' },
  invalid_request: { status: 400, type: 'invalid_request_error' },
  invalid_header: { status: 400, type: 'invalid_request_error' },
  unknown_provider: { status: 400, type: 'invalid_request_error' },
  provider_required: { status: 400, type: 'invalid_request_error' },
  route_not_supported: { status: 400, type: 'invalid_request_error' },
  unauthorized: { status: 401, type: 'authentication_error' },
  forbidden: { status: 403, type: 'permission_error' },
  not_found: { status: 404, type: 'invalid_request_error' },
  method_not_allowed: { status: 405, type: 'invalid_request_error' },
  conflict: { status: 409, type: 'invalid_request_error' },
  request_timeout: { status: 408, type: 'timeout_error' },
  payload_too_large: { status: 413, type: 'invalid_request_error' },
  guardrail_denied: { status: 446, type: 'guardrail_error' },
  unsupported_media_type: { status: 415, type: 'invalid_request_error' },
  rate_limited: { status: 429, type: 'rate_limit_error' },
  client_closed_request: { status: 499, type: 'client_error' },
  internal_error: { status: 500, type: 'server_error' },
  upstream_unreachable: { status: 502, type: 'upstream_error' },
  upstream_invalid_response: { status: 502, type: 'upstream_error' },
  service_unavailable: { status: 503, type: 'server_error' },
  circuit_open: { status: 503, type: 'server_error' },
  upstream_timeout: { status: 504, type: 'timeout_error' },
} as const satisfies Record<string, { status: number; type: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** The body every gateway-generated error is sent in. */
export interface ErrorEnvelope {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/** An error the gateway raises on purpose. `message` is shown to the client, so it must never hold a secret. */
export class GatewayError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly type: string;
  readonly param: string | null;
  /** Extra response headers, e.g. `retry-after` on 429/503. */
  readonly headers: Record<string, string> | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    options: { param?: string | null; cause?: unknown; headers?: Record<string, string>; status?: number } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'GatewayError';
    this.code = code;
    this.status = options.status ?? ERROR_CODES[code].status;
    this.type = ERROR_CODES[code].type;
    this.param = options.param ?? null;
    this.headers = options.headers;
  }

  toEnvelope(): ErrorEnvelope {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

/** Turns anything thrown into a GatewayError; unknown errors become a 500 with a fixed message (no stack, no internals). */
export function toGatewayError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  return new GatewayError('internal_error', 'The gateway hit an internal error. The request id is in x-gateway-trace-id.', { cause: err });
}
