/**
 * The gateway's error model: one error class carrying a stable code, and one
 * table mapping each code to its HTTP status and OpenAI-style error `type`.
 * The core holds its own codes; plugins add theirs (`GatewayPlugin.errorCodes`),
 * registered when the gateway boots. Only the HTTP layer turns a
 * {@link GatewayError} into a response.
 */

/** What an error code means on the wire: its HTTP status and the envelope's `type`. */
export interface ErrorCodeSpec {
  /** HTTP status, 400 to 599. */
  status: number;
  /** The envelope's `error.type`, e.g. `invalid_request_error`. */
  type: string;
}

/** The core's own codes. Clients may match on these; never rename one. */
export const CORE_ERROR_CODES = Object.freeze({
  invalid_json: { status: 400, type: 'invalid_request_error' },
  invalid_request: { status: 400, type: 'invalid_request_error' },
  invalid_header: { status: 400, type: 'invalid_request_error' },
  json_too_deep: { status: 400, type: 'invalid_request_error' },
  unknown_provider: { status: 400, type: 'invalid_request_error' },
  provider_required: { status: 400, type: 'invalid_request_error' },
  route_not_supported: { status: 400, type: 'invalid_request_error' },
  host_not_allowed: { status: 400, type: 'invalid_request_error' },
  unauthorized: { status: 401, type: 'authentication_error' },
  forbidden: { status: 403, type: 'permission_error' },
  not_found: { status: 404, type: 'invalid_request_error' },
  method_not_allowed: { status: 405, type: 'invalid_request_error' },
  conflict: { status: 409, type: 'invalid_request_error' },
  request_timeout: { status: 408, type: 'timeout_error' },
  payload_too_large: { status: 413, type: 'invalid_request_error' },
  headers_too_large: { status: 431, type: 'invalid_request_error' },
  unsupported_media_type: { status: 415, type: 'invalid_request_error' },
  rate_limited: { status: 429, type: 'rate_limit_error' },
  client_closed_request: { status: 499, type: 'client_error' },
  internal_error: { status: 500, type: 'server_error' },
  upstream_unreachable: { status: 502, type: 'upstream_error' },
  upstream_invalid_response: { status: 502, type: 'upstream_error' },
  service_unavailable: { status: 503, type: 'server_error' },
  upstream_timeout: { status: 504, type: 'timeout_error' },
} as const satisfies Record<string, ErrorCodeSpec>);

export type CoreErrorCode = keyof typeof CORE_ERROR_CODES;

/** A core code, or one a plugin registered (checked when the error is built). */
export type ErrorCode = CoreErrorCode | (string & {});

interface CodeEntry extends ErrorCodeSpec {
  owner: string;
}

/*
 * One table per process, kept under a global symbol: a plugin package that
 * ends up with its own copy of the SDK (a nested node_modules) still builds
 * errors against the codes the gateway registered.
 */
const TABLE_KEY = Symbol.for('ai-gateway.error-codes');
const holder = globalThis as { [TABLE_KEY]?: Map<string, CodeEntry> };
const table: Map<string, CodeEntry> = (holder[TABLE_KEY] ??= new Map());
for (const [code, spec] of Object.entries(CORE_ERROR_CODES)) if (!table.has(code)) table.set(code, { ...spec, owner: 'core' });

const CODE_NAME = /^[a-z][a-z0-9_]{0,63}$/;

/**
 * Throws when a plugin's error code cannot be registered: a bad name, status
 * or type, a core code, or a code another plugin registered with another
 * meaning (in this gateway or another one of the process). Registering the
 * same code with the same meaning again is allowed.
 */
export function checkErrorCode(code: string, spec: ErrorCodeSpec, owner: string): void {
  if (!CODE_NAME.test(code)) throw new Error(`plugin "${owner}": error code "${code}" must be lower-case letters, digits and _ (at most 64), starting with a letter`);
  if (!Number.isInteger(spec.status) || spec.status < 400 || spec.status > 599) throw new Error(`plugin "${owner}": error code "${code}" needs an HTTP status from 400 to 599`);
  if (typeof spec.type !== 'string' || spec.type === '') throw new Error(`plugin "${owner}": error code "${code}" needs a type (e.g. invalid_request_error)`);
  const known = table.get(code);
  if (known === undefined) return;
  if (known.owner === 'core') throw new Error(`plugin "${owner}": error code "${code}" is one of the core's own`);
  if (known.status !== spec.status || known.type !== spec.type) {
    throw new Error(`plugin "${owner}": error code "${code}" is already registered by "${known.owner}" as ${known.status} ${known.type}`);
  }
}

/**
 * Registers a plugin's error code (after {@link checkErrorCode}). Called by
 * `createGateway` once every plugin's codes passed the check, so a gateway
 * that fails to boot registers none.
 */
export function registerErrorCode(code: string, spec: ErrorCodeSpec, owner: string): void {
  checkErrorCode(code, spec, owner);
  if (!table.has(code)) table.set(code, { status: spec.status, type: spec.type, owner });
}

/** The status and type of a code, or undefined when no one registered it. */
export function errorCodeSpec(code: string): ErrorCodeSpec | undefined {
  return table.get(code);
}

/** The body every gateway-generated error is sent in. */
export interface ErrorEnvelope {
  error: { message: string; type: string; param: string | null; code: string | null };
}

const BRAND = Symbol.for('ai-gateway.GatewayError');

/** An error the gateway raises on purpose. `message` is shown to the client, so it must never hold a secret. */
export class GatewayError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly type: string;
  readonly param: string | null;
  /** Extra response headers, e.g. `retry-after` on 429/503. */
  readonly headers: Record<string, string> | undefined;
  readonly [BRAND] = true;

  /**
   * @throws Error when `code` is neither a core code nor registered by a loaded plugin:
   *   a programming error, which the pipeline answers as a 500 and logs.
   */
  constructor(
    code: ErrorCode,
    message: string,
    options: { param?: string | null; cause?: unknown; headers?: Record<string, string>; status?: number } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    const spec = table.get(code);
    if (spec === undefined) throw new Error(`unknown error code "${code}": declare it in the plugin's errorCodes`);
    this.name = 'GatewayError';
    this.code = code;
    this.status = options.status ?? spec.status;
    this.type = spec.type;
    this.param = options.param ?? null;
    this.headers = options.headers;
  }

  /** True for a GatewayError from any copy of the SDK. */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as { [BRAND]?: unknown })[BRAND] === true;
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
