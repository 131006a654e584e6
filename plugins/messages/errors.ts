import { isObject, anthropic, type GatewayError, type GatewayResponse, readResponseBody, type ErrorFormat } from '../../sdk/index.js';
import { THREAD_ERROR_CODES } from './threads/errors.js';

type Json = Record<string, unknown>;

/** Anthropic's error types: an upstream's own (through a translation) is kept when it is one of these. */
const ANTHROPIC_TYPES: ReadonlySet<unknown> = new Set([
  'invalid_request_error',
  'authentication_error',
  'billing_error',
  'permission_error',
  'not_found_error',
  'request_too_large',
  'rate_limit_error',
  'api_error',
  'timeout_error',
  'overloaded_error',
]);

/** The type an error answer gets: the upstream's when it is Anthropic's, the guardrails' own, else the status's. */
function typeOf(status: number, given: unknown): string {
  if (ANTHROPIC_TYPES.has(given)) return given as string;
  if (given === 'guardrail_error') return given;
  return anthropic.errorTypeForStatus(status);
}

/**
 * Anthropic's envelope has no `param`: the field an error names leads its message instead
 * (`tools[0].type: …`, as Anthropic's own messages read), unless the message already names it.
 */
function withParam(message: string, param: unknown): string {
  return typeof param === 'string' && param !== '' && !message.includes(param) ? `${param}: ${message}` : message;
}

/** Errors the gateway raises, in Anthropic's envelope and status codes (503 → 529). */
export const MESSAGES_ERROR_FORMAT: ErrorFormat = {
  response(error: GatewayError): GatewayResponse {
    const status = anthropic.messagesStatus(error.status);
    const headers: Record<string, string> = { ...(error.headers ?? {}), 'content-type': 'application/json' };
    const body = anthropic.anthropicErrorBody(status, withParam(error.message, error.param), typeOf(error.status, error.type));
    // Anthropic's thread errors carry their code in `details`: what the SDK's thread helpers match on to replay the conversation.
    if (THREAD_ERROR_CODES.has(error.code)) (body.error as Json).details = { error_code: error.code };
    return { status, headers, body: JSON.stringify(body), observers: null };
  },
  event(error: GatewayError): string {
    return `event: error\ndata: ${JSON.stringify(anthropic.anthropicErrorBody(error.status, error.message, typeOf(error.status, error.type)))}\n\n`;
  },
};

/**
 * An error answer (status 400 or more) in Anthropic's envelope: the gateway's
 * (`{"error":{message,type,…}}`, from a translated provider, a guardrail's
 * 446 with its `hook_results`, a plugin's) or a Google-shaped one (Claude on
 * Vertex); one already in Anthropic's shape passes as it is. A 503 becomes
 * Anthropic's 529. Error bodies are small; they are read whole.
 */
export async function toAnthropicError(response: GatewayResponse): Promise<GatewayResponse> {
  const bytes = await readResponseBody(response.body);
  let json: unknown = null;
  try {
    json = JSON.parse(bytes.toString('utf8'));
  } catch {
    /* not JSON: the envelope names the status */
  }
  const status = anthropic.messagesStatus(response.status);
  if (isObject(json) && json.type === 'error' && isObject(json.error)) return { ...response, status, body: bytes };
  const error = isObject(json) && isObject(json.error) ? json.error : isObject(json) ? json : {};
  const message = withParam(typeof error.message === 'string' && error.message !== '' ? error.message : `The upstream answered ${response.status}.`, error.param);
  const body: Json = anthropic.anthropicErrorBody(status, message, typeOf(response.status, error.type));
  if (isObject(json) && json.hook_results !== undefined) body.hook_results = json.hook_results;
  const headers: Record<string, string | string[]> = { ...response.headers, 'content-type': 'application/json' };
  delete headers['content-length'];
  return { status, headers, body: JSON.stringify(body), observers: response.observers };
}
