import { mkdtemp } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { controlPlane } from '../../../plugins/control-plane/index.js';
import { logStore } from '../../../plugins/logs/index.js';
import { mcp } from '../../../plugins/mcp/index.js';
import { sqliteStore } from '../../../plugins/stores/sqlite/index.js';
import { clientConformance, serverConformance, startReferenceServer, type ScenarioResult } from '../../helpers/mcp-conformance.js';
import { serveGateway } from '../../helpers/serve.js';

/*
 * The official MCP conformance suite (@modelcontextprotocol/conformance 0.1.16) against the gateway.
 *
 * Server mode: the suite's server scenarios of each wire revision it has (2025-06-18, 2025-11-25) against the
 * gateway's MCP endpoint, with the loopback reference server (test/mocks/mcp-reference-server.mjs) as the
 * upstream, and against that reference server directly: every scenario the reference passes passes through the
 * gateway, but for those listed in THROUGH_GATEWAY with the reason.
 *
 * Client mode: the suite's client scenarios, each with its own server, against the gateway as the client (the
 * command registers the scenario's server and drives the official SDK client through the gateway): each passes
 * but for those listed in CLIENT_NOT_APPLICABLE with the reason. 0.1.16 has no 2026-07-28 scenario; that revision
 * is shown by test/plugins/mcp/revisions.test.ts.
 */

const ADMIN = 'admin-bootstrap-key-mcp-conformance1';

/** Server scenarios that differ through the gateway, by design, with the reason (docs/mcp.md, "Conformance"). */
const THROUGH_GATEWAY: Record<string, string> = {
  'dns-rebinding-protection':
    'scoped by the suite to servers without authentication: every gateway request needs a gateway key, which a page rebound to the gateway does not have (cookies stay with the real host name), and the gateway is served under any host name behind proxies, so it does not judge Host',
};

/** Client scenarios the gateway does not take part in, with the reason (docs/mcp.md, "Conformance"). */
const CLIENT_NOT_APPLICABLE: Record<string, string> = {
  'auth/client-credentials-jwt': 'an extension grant (SEP-1046): the gateway authorizes per user with the authorization code grant',
  'auth/client-credentials-basic': 'an extension grant (SEP-1046): the gateway authorizes per user with the authorization code grant',
  'auth/cross-app-access-complete-flow': 'an extension (SEP-990): the gateway holds no identity-provider token to exchange',
};

const CLIENT_SCENARIOS = [
  'initialize',
  'tools_call',
  'elicitation-sep1034-client-defaults',
  'sse-retry',
  'auth/metadata-default',
  'auth/metadata-var1',
  'auth/metadata-var2',
  'auth/metadata-var3',
  'auth/basic-cimd',
  'auth/scope-from-www-authenticate',
  'auth/scope-from-scopes-supported',
  'auth/scope-omitted-when-undefined',
  'auth/scope-step-up',
  'auth/scope-retry-limit',
  'auth/token-endpoint-auth-basic',
  'auth/token-endpoint-auth-post',
  'auth/token-endpoint-auth-none',
  'auth/pre-registration',
  'auth/2025-03-26-oauth-metadata-backcompat',
  'auth/2025-03-26-oauth-endpoint-fallback',
  'auth/resource-mismatch',
  'auth/offline-access-scope',
  'auth/offline-access-not-supported',
  'auth/client-credentials-jwt',
  'auth/client-credentials-basic',
  'auth/cross-app-access-complete-flow',
];

const summary = (rs: ScenarioResult[]) => rs.map((r) => `${r.failed + r.warnings === 0 ? 'pass' : 'FAIL'} ${r.scenario} (${r.passed}/${r.passed + r.failed + r.warnings})${r.problems.length > 0 ? `\n    ${r.problems.join('\n    ')}` : ''}`).join('\n');

describe('the MCP conformance suite against the gateway', () => {
  let gw: Awaited<ReturnType<typeof serveGateway>>;
  let reference: Awaited<ReturnType<typeof startReferenceServer>>;
  let proxy: Server;
  let proxied = '';
  let key = '';

  beforeAll(async () => {
    reference = await startReferenceServer();
    const dir = await mkdtemp(join(tmpdir(), 'gw-mcp-conformance-'));
    gw = await serveGateway({
      plugins: [
        sqliteStore({ file: join(dir, 'gateway.db') }),
        controlPlane({ bootstrapKey: ADMIN, dataDir: dir, announce: () => undefined }),
        logStore({ writer: 'inline', flushIntervalMs: 10, retentionDays: 0 }),
        // The suite's authorization server for auth/basic-cimd expects this client id; the URL is only an identifier
        // sent to that loopback server, never fetched (by the gateway or by the suite).
        mcp({ clientMetadataUrl: 'https://conformance-test.local/client-metadata.json' }),
      ],
    });
    await gw.gateway.ready;
    const post = async (path: string, k: string, body: unknown) => {
      const res = await fetch(`${gw.url}/v1${path}`, { method: 'POST', headers: { 'x-gateway-api-key': k, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const json = (await res.json()) as Record<string, any>;
      expect(res.status, JSON.stringify(json)).toBe(200);
      return json;
    };
    const ws = await post('/workspaces', ADMIN, { name: 'Conformance', slug: 'mcp-conformance' });
    key = (await post('/api-keys', ADMIN, { type: 'workspace-service', name: 'conformance', workspace_id: ws.id, scopes: ['completions.write', 'mcp_servers.*'] })).key;
    const server = await post('/mcp-servers', key, { name: 'reference', url: reference.url });
    // The suite's server mode cannot send a gateway key: a loopback hop adds it, and passes everything else as sent.
    const target = new URL(gw.url);
    proxy = createServer((req, res) => {
      const up = request({ host: target.hostname, port: target.port, method: req.method, path: `/v1/mcp/${server.id}`, headers: { ...req.headers, host: target.host, 'x-gateway-api-key': key } }, (answer) => {
        res.writeHead(answer.statusCode!, answer.headers);
        answer.pipe(res);
      });
      up.on('error', () => res.destroy());
      req.pipe(up);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    proxied = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/mcp`;
  }, 60_000);

  afterAll(async () => {
    proxy?.closeAllConnections();
    await new Promise((r) => proxy?.close(r));
    await gw?.close();
    await reference?.close();
  });

  for (const version of ['2025-06-18', '2025-11-25']) {
    test(`server scenarios of ${version}: the gateway passes every one the reference server passes`, async () => {
      const direct = await serverConformance(reference.url, version);
      const through = await serverConformance(proxied, version);
      console.log(`MCP conformance ${version}, reference server directly:\n${summary(direct.results)}\nthrough the gateway:\n${summary(through.results)}`);
      expect(through.results.length, through.output).toBe(direct.results.length);
      expect(through.results.length).toBeGreaterThan(20);
      for (const r of direct.results) {
        const via = through.results.find((x) => x.scenario === r.scenario);
        expect(via, r.scenario).toBeDefined();
        if (r.failed > 0 || r.scenario in THROUGH_GATEWAY) continue;
        expect(via!.failed, `${r.scenario}: ${via!.problems.join('; ')}`).toBe(0);
      }
    }, 600_000);
  }

  test('client scenarios: the gateway is the client the suite\'s servers judge', async () => {
    const command = `${process.execPath} ${fileURLToPath(new URL('../../mocks/mcp-conformance-client.mjs', import.meta.url))}`;
    const outcomes: ScenarioResult[] = [];
    for (const scenario of CLIENT_SCENARIOS) {
      if (scenario in CLIENT_NOT_APPLICABLE) {
        console.log(`n/a ${scenario}: ${CLIENT_NOT_APPLICABLE[scenario]}`);
        continue;
      }
      const run = await clientConformance(command, scenario, { GATEWAY_URL: gw.url, GATEWAY_KEY: key });
      if (run.results.length === 0) outcomes.push({ scenario, passed: 0, failed: 1, warnings: 0, problems: [run.output.slice(-2000)] });
      else outcomes.push(...run.results);
    }
    console.log(`MCP conformance, client scenarios through the gateway:\n${summary(outcomes)}`);
    expect(outcomes.length).toBe(CLIENT_SCENARIOS.length - Object.keys(CLIENT_NOT_APPLICABLE).length);
    for (const r of outcomes) {
      expect(r.failed + r.warnings, `${r.scenario}: ${r.problems.join('; ')}`).toBe(0);
    }
  }, 1_200_000);
});
