import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { DEFAULT_CONFIG } from '../../server/default-config.js';
import { startTestServer } from '../helpers/gateway.js';
import { startMockOpenAI, type MockUpstream } from '../mocks/openai-upstream.js';

/*
 * Defect 4 of issue 15, and its wider promise: no credential a caller or the
 * operator gives the gateway shows up in an answer, a log line or a stored
 * log entry, whether the request succeeds or fails. Every credential form
 * goes through the real server (the default config: control plane and log
 * store in SQLite files under a temp data dir, the request log captured);
 * then every response, the captured log and every file of the data dir are
 * searched for each secret.
 */

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const PEM = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
/** A run of the key's base64 body: what any copy of the key would contain. */
const PEM_PART = PEM.split('\n')[5]!.slice(8, 56);

const SECRETS = {
  gatewayKey: 'gw-static-SECRETgatewaykey0001',
  bootstrapKey: 'gw-bootstrap-SECRETbootstrap0001',
  unknownGatewayKey: 'gw-unknown-SECRETunknownkey0001',
  providerKey: 'sk-SECRETproviderkey00000000000001',
  configKey: 'cfg-SECRETconfigkey0001',
  badConfigKey: 'cfg-SECRETbadconfigkey0001',
  awsKeyId: 'AKIASECRETKEYID00001',
  awsSecret: 'SECRETawssecretaccesskey/0001+abc',
  awsSession: 'SECRETawssessiontoken0001',
  vertexKey: PEM_PART,
  vertexKeyId: 'SECRETvertexkeyid0001',
  urlPassword: 'SECRETurlpassword0001',
  urlUser: 'SECRETurluser0001',
  slugPassword: 'SECRETslugpassword0001',
  tokenUriPassword: 'SECRETtokenuripassword0001',
} as const;

let mock: MockUpstream;
let closed: number;
let dataDir: string;
let gw: Awaited<ReturnType<typeof startTestServer>>;
const answers: string[] = [];

async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise((r) => srv.close(r));
  return port;
}

beforeAll(async () => {
  mock = await startMockOpenAI();
  closed = await closedPort();
  dataDir = await mkdtemp(join(tmpdir(), 'gw-secrets-'));
  gw = await startTestServer({
    config: {
      ...DEFAULT_CONFIG,
      providers: { 'userinfo-openai': { provider: 'openai', api_key: 'k', custom_host: `http://ops:${SECRETS.slugPassword}@127.0.0.1:${closed}/v1` } },
    },
    env: { GATEWAY_DATA_DIR: dataDir, GATEWAY_API_KEYS: SECRETS.gatewayKey, GATEWAY_BOOTSTRAP_KEY: SECRETS.bootstrapKey },
  });
});

afterAll(async () => {
  await mock.close();
});

const chat = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }] };

/** Sends a request and keeps its status, headers and body for the search. */
async function send(headers: Record<string, string>, path = '/v1/chat/completions'): Promise<number> {
  const res = await fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': SECRETS.gatewayKey, ...headers },
    body: JSON.stringify(chat),
  });
  answers.push(`${res.status} ${JSON.stringify([...res.headers])} ${await res.text()}`);
  return res.status;
}

const config = (c: Record<string, unknown>) => ({ 'x-gateway-config': JSON.stringify(c) });
const account = (extra: Record<string, unknown> = {}) => ({
  type: 'service_account',
  project_id: 'p',
  client_email: 'sa@p.iam.gserviceaccount.com',
  private_key_id: SECRETS.vertexKeyId,
  private_key: PEM,
  token_uri: `http://127.0.0.1:${closed}/token`,
  ...extra,
});

test('every credential form, through requests that succeed and fail, appears in no answer, log line or database file', async () => {
  const bedrock = { provider: 'bedrock', aws_access_key_id: SECRETS.awsKeyId, aws_secret_access_key: SECRETS.awsSecret, aws_session_token: SECRETS.awsSession, aws_region: 'us-east-1' };
  const vertex = { provider: 'vertex-ai', vertex_region: 'us-central1', vertex_project_id: 'p' };
  const sent: Array<[string, number, number]> = [
    // Provider key in Authorization: answered, then an upstream that is down.
    ['provider key, answered', await send({ 'x-gateway-provider': 'openai', 'x-gateway-custom-host': mock.baseURL, authorization: `Bearer ${SECRETS.providerKey}` }), 200],
    ['provider key, upstream down', await send({ 'x-gateway-provider': 'openai', 'x-gateway-custom-host': `http://127.0.0.1:${closed}/v1`, authorization: `Bearer ${SECRETS.providerKey}` }), 502],
    ['provider key, generic proxy down', await send({ 'x-gateway-provider': 'openai', 'x-gateway-custom-host': `http://127.0.0.1:${closed}/v1`, authorization: `Bearer ${SECRETS.providerKey}` }, '/v1/assistants'), 502],
    // Config api_key: answered, upstream down, and a config refused for another field.
    ['config key, answered', await send(config({ provider: 'openai', api_key: SECRETS.configKey, custom_host: mock.baseURL })), 200],
    ['config key, upstream down', await send(config({ provider: 'openai', api_key: SECRETS.configKey, custom_host: `http://127.0.0.1:${closed}/v1` })), 502],
    ['bad config', await send(config({ provider: 'openai', api_key: SECRETS.badConfigKey, retry: { attempts: 99 }, nope: SECRETS.badConfigKey })), 400],
    ['key in a wrongly typed field', await send(config({ provider: 'openai', api_key: SECRETS.badConfigKey, weight: SECRETS.badConfigKey })), 400],
    // AWS keys and session token: the upstream down, a bad region, half a key pair.
    ['bedrock, upstream down', await send(config({ ...bedrock, custom_host: `http://127.0.0.1:${closed}` })), 502],
    ['bedrock, bad region', await send(config({ ...bedrock, aws_region: 7 })), 400],
    ['bedrock, half a key pair', await send(config({ ...bedrock, aws_secret_access_key: undefined, custom_host: `http://127.0.0.1:${closed}` })), 401],
    // A Vertex service account: its token endpoint down, a key that does not parse, a token_uri with user info.
    ['vertex, token endpoint down', await send(config({ ...vertex, vertex_service_account_json: account() })), 502],
    ['vertex, broken key', await send(config({ ...vertex, vertex_service_account_json: account({ private_key: `-----BEGIN PRIVATE KEY-----\n${PEM_PART}\n-----END PRIVATE KEY-----\n` }) })), 401],
    ['vertex, token_uri with user info', await send(config({ ...vertex, vertex_service_account_json: account({ token_uri: `http://sa:${SECRETS.tokenUriPassword}@127.0.0.1:${closed}/token` }) })), 400],
    // URL user info: in the header, in a config, in a slug the operator configured.
    ['user info in the header', await send({ 'x-gateway-provider': 'openai', 'x-gateway-custom-host': `http://${SECRETS.urlUser}:${SECRETS.urlPassword}@127.0.0.1:${closed}/v1` }), 400],
    ['user info in a config', await send(config({ provider: 'openai', api_key: 'k', custom_host: `http://${SECRETS.urlUser}:${SECRETS.urlPassword}@127.0.0.1:${closed}/v1` })), 400],
    ['user info in a slug', await send({ 'x-gateway-provider': '@userinfo-openai' }), 400],
    // Gateway keys: an unknown one, and the bootstrap admin key on an admin route.
    ['unknown gateway key', await send({ 'x-gateway-api-key': SECRETS.unknownGatewayKey, 'x-gateway-provider': 'openai' }), 401],
    ['bootstrap key', await send({ 'x-gateway-api-key': SECRETS.bootstrapKey, 'x-gateway-provider': 'openai', 'x-gateway-custom-host': `http://127.0.0.1:${closed}/v1` }), 502],
  ];
  for (const [what, status, expected] of sent) expect(status, what).toBe(expected);

  // Closing flushes the log store (written by its worker thread) and the logger.
  await gw.close();
  const files = await readdir(dataDir, { recursive: true, withFileTypes: true });
  const stored = await Promise.all(files.filter((f) => f.isFile()).map(async (f) => [join(f.parentPath, f.name), await readFile(join(f.parentPath, f.name))] as const));
  expect(stored.map(([name]) => name).some((name) => name.endsWith('gateway.db'))).toBe(true);
  const logText = gw.logs.text();
  // The log store did record these requests, so the database search means something.
  expect(stored.some(([, bytes]) => bytes.includes('host_not_allowed') || bytes.includes('upstream_unreachable'))).toBe(true);
  expect(logText).toContain('upstream_unreachable');

  const where = (secret: string): string[] => [
    ...answers.filter((a) => a.includes(secret)).map((a) => `answer: ${a.slice(0, 200)}`),
    ...(logText.includes(secret) ? ['the log'] : []),
    ...stored.filter(([, bytes]) => bytes.includes(secret)).map(([name]) => `file ${name}`),
  ];
  for (const [name, secret] of Object.entries(SECRETS)) expect(where(secret), name).toEqual([]);
});
