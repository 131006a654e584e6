import { GatewayError } from '../../sdk/index.js';

/** The `variables` of a request: an object (required on the prompt routes; absent means none on the chat route). */
export function variablesOf(body: Record<string, unknown>, required: boolean): Record<string, unknown> {
  const variables = body.variables;
  if (variables === undefined && !required) return {};
  if (typeof variables !== 'object' || variables === null || Array.isArray(variables)) {
    throw new GatewayError('invalid_request', `Invalid request body: 'variables' ${variables === undefined ? 'is required and must be' : 'must be'} an object of variable names to values.`, { param: 'variables' });
  }
  return variables as Record<string, unknown>;
}

/** The request's choice between the two spellings of the completion bound replaces the template's either. */
const TOKEN_BOUNDS = ['max_tokens', 'max_completion_tokens'] as const;

/**
 * The chat body a prompt completion sends: the rendered template, with every
 * field of the request other than `variables` and `messages` over it (so a
 * request's `temperature`, `max_completion_tokens`, `model`, `tools`, `stream`
 * … win over the saved ones), and the request's `messages`, if any, after
 * the template's (a conversation under a stored system prompt; they are
 * never rendered). `max_tokens` (deprecated) is sent as sent; either bound in
 * the request drops the other one from the template, since providers refuse
 * both together.
 */
export function chatBody(rendered: Record<string, unknown>, request: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...rendered };
  for (const key of Object.keys(request)) {
    // `__proto__` from JSON is an own key: assigning it would set the prototype instead.
    if (key === 'variables' || key === 'messages' || key === '__proto__') continue;
    out[key] = request[key];
  }
  for (const bound of TOKEN_BOUNDS) {
    if (request[bound] === undefined) continue;
    for (const other of TOKEN_BOUNDS) if (other !== bound && request[other] === undefined) delete out[other];
  }
  const extra = request.messages;
  if (extra !== undefined) {
    if (!Array.isArray(extra)) throw new GatewayError('invalid_request', "Invalid request body: 'messages' must be an array of messages (they are added after the prompt's).", { param: 'messages' });
    out.messages = [...(rendered.messages as unknown[]), ...extra];
  }
  return out;
}
