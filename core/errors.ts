/**
 * The gateway's error model: one error class carrying a stable code, and a
 * table per gateway mapping each code to its HTTP status and OpenAI-style
 * error `type`. The core's codes are the same in every gateway; plugins
 * declare theirs (`GatewayPlugin.errorCodes`), checked per gateway at boot,
 * and build their errors with the factory `defineErrors` gives them, so an
 * error carries the meaning its plugin declared. There is no process-wide
 * table: two gateways in one process may give a code two meanings. Only the
 * HTTP layer turns a {@link GatewayError} into a response.
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

/** One of the core's own error codes (the keys of {@link CORE_ERROR_CODES}). */
export type CoreErrorCode = keyof typeof CORE_ERROR_CODES;

/** A core code, or one a plugin registered (checked when the error is built). */
export type ErrorCode = CoreErrorCode | (string & {});

/** The core's codes as a map: the same in every gateway (it never changes); plugins' codes live in each gateway's table. */
const CORE_TABLE: ReadonlyMap<string, ErrorCodeSpec> = new Map(Object.entries(CORE_ERROR_CODES));

const CODE_NAME = /^[a-z][a-z0-9_]{0,63}$/;

/**
 * Throws when a plugin's error code cannot be declared: a bad name, status or
 * type, or a core code. Whether two plugins of one gateway give a code two
 * meanings is the gateway's check (`createGateway`); two gateways of one
 * process may give it two, each keeps its own table.
 */
export function checkErrorCode(code: string, spec: ErrorCodeSpec, owner: string): void {
  if (!CODE_NAME.test(code)) throw new Error(`plugin "${owner}": error code "${code}" must be lower-case letters, digits and _ (at most 64), starting with a letter`);
  if (typeof spec !== 'object' || spec === null || !Number.isInteger(spec.status) || spec.status < 400 || spec.status > 599) {
    throw new Error(`plugin "${owner}": error code "${code}" needs an HTTP status from 400 to 599`);
  }
  if (typeof spec.type !== 'string' || spec.type === '') throw new Error(`plugin "${owner}": error code "${code}" needs a type (e.g. invalid_request_error)`);
  if (CORE_TABLE.has(code)) throw new Error(`plugin "${owner}": error code "${code}" is one of the core's own`);
}

/** The body every gateway-generated error is sent in. */
export interface ErrorEnvelope {
  /** The error: a message for people, its `type` and `code` for programs, and the `param` at fault (or null). */
  error: { message: string; type: string; param: string | null; code: string | null };
}

/** What a {@link GatewayError} may carry besides its code and message. */
export interface GatewayErrorOptions {
  /** Where in the request the problem is (a header, a body field). */
  param?: string | null;
  /** The underlying error, kept as the error's `cause` for logs (the client sees only the envelope). */
  cause?: unknown;
  /** Extra response headers, e.g. `retry-after` on 429/503. */
  headers?: Record<string, string>;
  /** Overrides the code's status for this one error. */
  status?: number;
  /**
   * The code's meaning, when it is not one of the core's: what the plugin declared. The factory
   * {@link defineErrors} returns passes it; without it a plugin code is resolved against the
   * gateway's table when the error is answered.
   */
  spec?: ErrorCodeSpec;
}

const BRAND = Symbol.for('ai-gateway.GatewayError');

/** The meaning a code without a known spec has until the gateway resolves it: a 500, as a programming error answers. */
const UNRESOLVED: ErrorCodeSpec = Object.freeze({ status: 500, type: 'server_error' });

/** An error the gateway raises on purpose. `message` is shown to the client, so it must never hold a secret. */
export class GatewayError extends Error {
  /** The stable code clients match on, e.g. `invalid_request`; the envelope's `error.code`. */
  readonly code: ErrorCode;
  /** The HTTP status it is answered with. */
  readonly status: number;
  /** The envelope's `error.type`, e.g. `invalid_request_error`. */
  readonly type: string;
  /** Where in the request the problem is (a header, a body field); null when nowhere in particular. */
  readonly param: string | null;
  /** Extra response headers, e.g. `retry-after` on 429/503. */
  readonly headers: Record<string, string> | undefined;
  /**
   * False when the code is neither a core code nor came with its spec (`new GatewayError('plugin_code', …)`
   * without `spec`): status and type are a 500's until the gateway that answers it looks the code up in
   * its own table (`resolveErrorCode`); a code that table does not hold either is answered as an
   * internal error, and the log names the code.
   */
  readonly resolved: boolean;
  /**
   * Marks a GatewayError across copies of the SDK (see `Symbol.hasInstance`).
   *
   * @internal
   */
  readonly [BRAND] = true;

  /** Never throws, whatever the code: it is built on the error path. */
  constructor(code: ErrorCode, message: string, options: GatewayErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    const spec = options.spec ?? CORE_TABLE.get(code);
    this.name = 'GatewayError';
    this.code = code;
    this.resolved = spec !== undefined;
    this.status = options.status ?? (spec ?? UNRESOLVED).status;
    this.type = (spec ?? UNRESOLVED).type;
    this.param = options.param ?? null;
    this.headers = options.headers;
  }

  /** True for a GatewayError from any copy of the SDK. */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as { [BRAND]?: unknown })[BRAND] === true;
  }

  /** The gateway's envelope for this error, `{"error":{"message","type","param","code"}}` (a route's `errorFormat` may answer in its own shape). */
  toEnvelope(): ErrorEnvelope {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

/**
 * A plugin's error factory: `err(code, message, options?)` builds a {@link GatewayError} that carries
 * the status and type the plugin declared for `code`, whichever gateway answers it. `codes` is what
 * the plugin declares as its `errorCodes`.
 */
export interface ErrorFactory<K extends string> {
  (code: K, message: string, options?: Omit<GatewayErrorOptions, 'spec'>): GatewayError;
  /** The declared codes: set them as the plugin's `errorCodes`. */
  readonly codes: Readonly<Record<K, ErrorCodeSpec>>;
}

/**
 * Declares a plugin's error codes once and returns the factory that raises them:
 *
 * ```ts
 * const teaError = defineErrors({ teapot_refused: { status: 418, type: 'teapot_error' } });
 * export const teapot = (): GatewayPlugin => ({ name: 'teapot', errorCodes: teaError.codes, apply(api) { … throw teaError('teapot_refused', 'No coffee.'); } });
 * ```
 *
 * The codes are checked (name, status, type, not a core code) when a gateway boots with the plugin.
 */
export function defineErrors<K extends string>(codes: Readonly<Record<K, ErrorCodeSpec>>): ErrorFactory<K> {
  const frozen = Object.freeze({ ...codes });
  const factory = (code: K, message: string, options: Omit<GatewayErrorOptions, 'spec'> = {}): GatewayError => new GatewayError(code, message, { ...options, spec: frozen[code] });
  return Object.assign(factory, { codes: frozen });
}

/**
 * The error as the gateway with table `codes` answers it. A resolved error is itself; one built
 * without its spec takes this gateway's meaning of the code; a code this gateway does not know
 * either becomes a 500 `internal_error` (the original stays its cause), and `onUnknown` is told
 * the code so it can be logged.
 */
export function resolveErrorCode(e: GatewayError, codes: ReadonlyMap<string, ErrorCodeSpec>, onUnknown?: (code: string) => void): GatewayError {
  if (e.resolved) return e;
  const spec = codes.get(e.code);
  if (spec !== undefined) {
    // A status other than the unresolved 500 was the raiser's override: it stays.
    const status = e.status === UNRESOLVED.status ? spec.status : e.status;
    return new GatewayError(e.code, e.message, { param: e.param, headers: e.headers, cause: e.cause, status, spec: { status: spec.status, type: spec.type } });
  }
  onUnknown?.(e.code);
  return new GatewayError('internal_error', 'The gateway hit an internal error. The request id is in x-gateway-trace-id.', { cause: e });
}

/** Turns anything thrown into a GatewayError; unknown errors become a 500 with a fixed message (no stack, no internals). */
export function toGatewayError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  return new GatewayError('internal_error', 'The gateway hit an internal error. The request id is in x-gateway-trace-id.', { cause: err });
}
