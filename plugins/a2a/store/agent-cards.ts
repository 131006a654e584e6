import * as v from 'valibot';
import { GatewayError, issuePath, readText, type UpstreamClient, upstreamUrlProblem } from '../../../sdk/index.js';
import type { AgentServerConfig } from './types.js';
import { a2aError } from '../errors.js';

/**
 * Fetching and validating an A2A agent card. The card is the agent's own
 * description (its name, skills, capabilities) and says where its JSON-RPC
 * endpoint is: `url` in an A2A 0.3 card (when its preferred transport is
 * JSON-RPC, else an `additionalInterfaces` entry), a `supportedInterfaces`
 * entry with `protocolBinding: "JSONRPC"` in an A2A 1.0 card.
 */

/** Where an agent publishes its card, under its base URL; the second is the name A2A used before 0.3. */
export const CARD_PATHS = ['/.well-known/agent-card.json', '/.well-known/agent.json'] as const;
/** A card is a description, not a payload: anything bigger is refused. */
export const MAX_CARD_BYTES = 256 * 1024;
/** How long fetching a card may take before its headers arrive. */
export const CARD_TIMEOUT_MS = 10_000;

const Str = v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'));
const Strings = v.array(v.string('must be a string'), 'must be a list of strings');
const Interface = v.looseObject({ url: v.optional(v.string('must be a string')), transport: v.optional(v.string()), protocolBinding: v.optional(v.string()) });

/** The fields every card has, in 0.3 and 1.0 alike; other fields are kept as the agent sent them. */
const CardSchema = v.looseObject({
  name: Str,
  description: v.string('must be a string'),
  version: Str,
  url: v.optional(v.string('must be a string')),
  protocolVersion: v.optional(v.string('must be a string')),
  preferredTransport: v.optional(v.string('must be a string')),
  additionalInterfaces: v.optional(v.array(Interface, 'must be a list of interfaces')),
  supportedInterfaces: v.optional(v.array(Interface, 'must be a list of interfaces')),
  capabilities: v.looseObject({ streaming: v.optional(v.boolean('must be a boolean')) }, 'must be an object'),
  defaultInputModes: Strings,
  defaultOutputModes: Strings,
  skills: v.array(
    v.looseObject({ id: Str, name: Str, description: v.optional(v.string('must be a string')), tags: v.optional(Strings) }, 'must be a skill object'),
    'must be a list of skills',
  ),
});

/** A validated card and what the gateway reads from it. */
export interface ValidCard {
  card: Record<string, unknown>;
  endpoint: string;
  streaming: boolean;
}

const invalid = (name: string, why: string) => a2aError('agent_card_invalid', `The agent card of "${name}" is invalid: ${why}.`);

/**
 * Checks a card and finds its JSON-RPC endpoint.
 * @throws GatewayError `agent_card_invalid` naming the field, or saying it offers no JSON-RPC interface.
 */
export function validateCard(value: unknown, serverName: string): ValidCard {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid(serverName, 'it is not a JSON object');
  const result = v.safeParse(CardSchema, value);
  if (!result.success) {
    const issue = result.issues[0];
    throw invalid(serverName, `${issuePath(issue) || 'the card'}: ${issue.message}`);
  }
  const card = result.output;
  const endpoint = jsonRpcEndpoint(card);
  if (endpoint === null) throw invalid(serverName, 'it offers no JSON-RPC interface (the gateway forwards A2A over JSON-RPC)');
  const problem = upstreamUrlProblem(endpoint);
  if (problem !== null) throw invalid(serverName, `its JSON-RPC endpoint ${problem}`);
  return { card: value as Record<string, unknown>, endpoint, streaming: card.capabilities.streaming === true };
}

function jsonRpcEndpoint(card: v.InferOutput<typeof CardSchema>): string | null {
  const isJsonRpc = (name: string | undefined) => name?.toUpperCase() === 'JSONRPC';
  for (const i of card.supportedInterfaces ?? []) if (isJsonRpc(i.protocolBinding) && i.url) return i.url;
  if (card.url !== undefined && (card.preferredTransport === undefined || isJsonRpc(card.preferredTransport))) return card.url;
  for (const i of card.additionalInterfaces ?? []) if (isJsonRpc(i.transport) && i.url) return i.url;
  return null;
}

/** The URLs a card is looked for at: the registered URL itself when it names a `.json` file, else the well-known paths under it. */
export function cardUrls(url: string): string[] {
  const parsed = new URL(url);
  if (parsed.pathname.endsWith('.json')) return [url];
  const base = `${parsed.origin}${parsed.pathname.replace(/\/+$/, '')}`;
  return CARD_PATHS.map((p) => `${base}${p}${parsed.search}`);
}

/**
 * Fetches an agent's card through the pooled client (and so the outbound host policy) and validates it.
 * @throws GatewayError `agent_card_unavailable` (unreachable, timed out, not 200, not JSON) or `agent_card_invalid`.
 */
export async function fetchAgentCard(upstream: UpstreamClient, server: AgentServerConfig): Promise<ValidCard> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (server.auth.type === 'header') headers[server.auth.name] = server.auth.value;
  const urls = cardUrls(server.url);
  let status = 0;
  for (const url of urls) {
    let response;
    try {
      response = await upstream.send({ method: 'GET', url, headers, body: null }, AbortSignal.timeout(CARD_TIMEOUT_MS * 2), CARD_TIMEOUT_MS);
    } catch (err) {
      if (err instanceof GatewayError && err.code === 'host_not_allowed') throw err;
      const why = err instanceof GatewayError ? err.message : 'the request failed';
      throw a2aError('agent_card_unavailable', `The agent card of "${server.name}" could not be fetched: ${why}`, { cause: err });
    }
    status = response.status;
    if (status === 404 && url !== urls.at(-1)) {
      response.body.discard();
      continue;
    }
    if (status !== 200) {
      response.body.discard();
      break;
    }
    let text: string;
    try {
      text = await readText(response.body, MAX_CARD_BYTES);
    } catch (err) {
      throw a2aError('agent_card_unavailable', `The agent card of "${server.name}" could not be read: ${err instanceof GatewayError ? err.message : 'the answer broke off'}`, { cause: err });
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw invalid(server.name, 'it is not JSON');
    }
    return validateCard(json, server.name);
  }
  throw a2aError('agent_card_unavailable', `The agent card of "${server.name}" could not be fetched: the agent answered HTTP ${status} at ${urls.length > 1 ? 'its well-known paths' : 'its URL'}.`);
}
