import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { fieldSchema, type GatewayPlugin } from '../../../core/index.js';
import { config } from '../../../plugins/config/index.js';
import { controlPlane } from '../../../plugins/control-plane/index.js';
import { providerRegistry } from '../../../plugins/provider-registry/index.js';
import { openai } from '../../../plugins/providers/openai/index.js';
import { sqliteStore } from '../../../plugins/stores/sqlite/index.js';
import { serveGateway } from '../../helpers/serve.js';

/*
 * Integrations seal what the loaded plugins declare as credentials,
 * not a list of their own: a third-party provider's secret field is sealed and
 * masked like api_key, its other fields stay in clear.
 */

const ADMIN = 'admin-declared-secrets-0123456789';
const SECRET = 'acme-token-0123456789-SECRET';
let gw: Awaited<ReturnType<typeof serveGateway>>;
let dataDir: string;

const acme: GatewayPlugin = {
  name: 'acme',
  targetFields: { acme_token: { schema: fieldSchema.string(), credential: true }, acme_region: { schema: fieldSchema.string() } },
  apply(api) {
    api.providers.add('acme', { name: 'acme', baseURL: 'http://127.0.0.1:1/v1', authHeaders: () => ({}), routes: {} });
  },
};

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'gw-cp-declared-'));
  gw = await serveGateway({ plugins: [sqliteStore({ dataDir }), controlPlane({ bootstrapKey: ADMIN, dataDir, announce: () => undefined }), config(), providerRegistry({ dataDir }), openai(), acme] });
  await gw.gateway.ready;
});
afterAll(() => gw.close());

test("a plugin's declared credential is sealed and masked; its other fields are not", async () => {
  const res = await fetch(`${gw.url}/v1/integrations`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': ADMIN },
    body: JSON.stringify({ name: 'Acme', ai_provider_id: 'acme', configurations: { acme_token: SECRET, acme_region: 'eu' } }),
  });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  expect(text).not.toContain(SECRET);
  expect(JSON.parse(text).configurations).toEqual({ acme_token: `****${SECRET.slice(-4)}`, acme_region: 'eu' });
});
