// @ts-nocheck -- a plain script run in its own process by the MCP conformance tests (not imported by TypeScript code).
// The client under test for the MCP conformance suite's client scenarios, with the gateway in the middle: the
// suite starts a scenario's MCP server and runs this with the server's URL as the last argument (and the scenario
// in MCP_CONFORMANCE_SCENARIO, its data in MCP_CONFORMANCE_CONTEXT). It registers that server in the gateway
// (GATEWAY_URL, GATEWAY_KEY), then an MCP client of the official SDK talks to the gateway, which is the client the
// scenario's server judges. Where the gateway needs a user (OAuth: the authorization URL of its -32042 answer), this
// plays the user's browser: it follows the redirects, which the suite's authorization server approves at once,
// back to the gateway's callback, and asks again.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';

const serverUrl = process.argv[process.argv.length - 1];
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '';
const context = process.env.MCP_CONFORMANCE_CONTEXT ? JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT) : {};
const gateway = process.env.GATEWAY_URL;
const key = process.env.GATEWAY_KEY;
const log = (...a) => console.error(`[gateway-client:${scenario}]`, ...a);

const auth = scenario.startsWith('auth/')
  ? { type: 'oauth', ...(context.client_id ? { client_id: context.client_id } : {}), ...(context.client_secret ? { client_secret: context.client_secret } : {}) }
  : { type: 'none' };
const created = await fetch(`${gateway}/v1/mcp-servers`, {
  method: 'POST',
  headers: { 'content-type': 'application/json', 'x-gateway-api-key': key },
  body: JSON.stringify({ name: `conformance ${scenario} ${Date.now()}`.slice(0, 100), url: serverUrl, auth }),
});
if (created.status !== 200) {
  log('registering the server failed', created.status, await created.text());
  process.exit(1);
}
const { id } = await created.json();
const endpoint = new URL(`${gateway}/v1/mcp/${id}`);

/** The user's browser: from the authorization URL through the redirects to the gateway's callback. */
async function authorize(url) {
  let at = url;
  for (let hops = 0; hops < 10; hops++) {
    const res = await fetch(at, { redirect: 'manual' });
    const location = res.headers.get('location');
    if (res.status < 300 || res.status >= 400 || location === null) {
      log('authorization ended at', at, res.status);
      return;
    }
    at = new URL(location, at).href;
  }
}

/** Runs `fn`, authorizing the gateway and asking again while it answers that the user must (-32042). */
async function authorized(fn) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (e) {
      const url = e instanceof McpError && e.code === -32042 ? e.data?.elicitations?.[0]?.url : undefined;
      if (url === undefined || attempt >= 4) throw e;
      log('authorizing at', url);
      await authorize(url);
    }
  }
}

const capabilities = scenario === 'elicitation-sep1034-client-defaults' ? { elicitation: { form: { applyDefaults: true } } } : {};
const connect = async () => {
  const client = new Client({ name: 'conformance-through-gateway', version: '1.0.0' }, { capabilities });
  if (capabilities.elicitation) client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: {} }));
  const transport = new StreamableHTTPClientTransport(endpoint, { requestInit: { headers: { 'x-gateway-api-key': key } } });
  await client.connect(transport);
  return client;
};

try {
  const client = await authorized(connect);
  const { tools } = await authorized(() => client.listTools());
  log('tools:', tools.map((t) => t.name).join(', '));
  for (const name of ['add_numbers', 'test-tool', 'test_client_elicitation_defaults', 'test_reconnection']) {
    if (!tools.some((t) => t.name === name)) continue;
    const args = name === 'add_numbers' ? { a: 5, b: 3 } : {};
    const result = await authorized(() => client.callTool({ name, arguments: args }));
    log(name, '->', JSON.stringify(result.content));
  }
  await client.close();
  process.exit(0);
} catch (e) {
  log('error:', e?.stack ?? e);
  process.exit(1);
}
