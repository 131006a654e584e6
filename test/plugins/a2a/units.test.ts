import { afterAll, describe, expect, test } from 'vitest';
import { createGateway } from '../../../sdk/index.js';
import { gatewayCard } from '../../../plugins/a2a/index.js';
import { cardUrls, validateCard } from '../../../plugins/a2a/store/agent-cards.js';

describe('agent cards', () => {
  // The a2a plugin declares these codes; a gateway declaring them registers them for this process.
  const codes = createGateway({
    plugins: [{ name: 'card-codes', errorCodes: { agent_card_invalid: { status: 502, type: 'upstream_error' }, agent_card_unavailable: { status: 502, type: 'upstream_error' } }, apply() {} }],
  });
  afterAll(() => codes.close());
  const base = { name: 'A', description: 'd', version: '1', capabilities: { streaming: true }, defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'], skills: [] };

  test('the JSON-RPC endpoint: a 0.3 card\'s url (or its JSONRPC interface), a 1.0 card\'s JSONRPC interface', () => {
    expect(validateCard({ ...base, url: 'https://a.example/rpc' }, 'a')).toMatchObject({ endpoint: 'https://a.example/rpc', streaming: true });
    expect(validateCard({ ...base, url: 'https://a.example/grpc', preferredTransport: 'GRPC', additionalInterfaces: [{ url: 'https://a.example/rpc', transport: 'JSONRPC' }] }, 'a').endpoint).toBe('https://a.example/rpc');
    expect(validateCard({ ...base, supportedInterfaces: [{ url: 'https://a.example/rest', protocolBinding: 'HTTP+JSON' }, { url: 'https://a.example/v1', protocolBinding: 'JSONRPC' }] }, 'a').endpoint).toBe('https://a.example/v1');
    expect(() => validateCard({ ...base, url: 'ftp://a.example/rpc' }, 'a')).toThrow(/JSON-RPC endpoint must be an http or https URL/);
    expect(() => validateCard({ ...base, skills: 'none', url: 'https://a.example' }, 'a')).toThrow(/skills: must be a list of skills/);
    expect(() => validateCard([], 'a')).toThrow(/not a JSON object/);
  });

  test('where a card is looked for: the well-known paths under the URL, or the URL itself when it names a .json file', () => {
    expect(cardUrls('https://a.example/agents/x/')).toEqual(['https://a.example/agents/x/.well-known/agent-card.json', 'https://a.example/agents/x/.well-known/agent.json']);
    expect(cardUrls('https://a.example/card.json')).toEqual(['https://a.example/card.json']);
  });

  test("the gateway's card points at the gateway, asks for its key, and drops the agent's signatures", () => {
    const card = gatewayCard({ ...base, url: 'https://a.example/rpc', additionalInterfaces: [{ url: 'x', transport: 'GRPC' }], securitySchemes: { bearer: { type: 'http' } }, signatures: [{ s: 1 }] }, 'https://gw/v1/a2a/id');
    expect(card).toMatchObject({ url: 'https://gw/v1/a2a/id', preferredTransport: 'JSONRPC', security: [{ gateway_api_key: [] }] });
    expect(card.signatures).toBeUndefined();
    expect(card.additionalInterfaces).toBeUndefined();
    const v1 = gatewayCard({ ...base, supportedInterfaces: [{ url: 'https://a.example/v1', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }], securityRequirements: [{}] }, 'https://gw/v1/a2a/id');
    expect(v1.supportedInterfaces).toEqual([{ url: 'https://gw/v1/a2a/id', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }]);
    expect(v1.securityRequirements).toBeUndefined();
  });
});
