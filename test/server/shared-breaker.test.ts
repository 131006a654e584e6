import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { DEFAULT_CONFIG } from '../../server/default-config.js';
import { startProcess, type GatewayProcess } from '../helpers/process.js';
import { DATABASE_URL, dropSchema, REDIS_URL, requireService, uniquePrefix, uniqueSchema } from '../helpers/services.js';
import { startMockOpenAI, type MockUpstream } from '../mocks/openai-upstream.js';

/**
 * Two replicas of one deployment: the breaker's state in Redis, the workspaces in PostgreSQL (a
 * circuit is a workspace's, docs/security.md: replicas share it because they share the workspaces).
 */
describe('a breaker shared by two gateway processes through Redis', async () => {
  const available = (await requireService('Redis', REDIS_URL)) && (await requireService('PostgreSQL', DATABASE_URL));
  const schema = uniqueSchema('shared_breaker');
  let mock: MockUpstream;
  const processes: GatewayProcess[] = [];

  beforeAll(async () => {
    if (!available) return;
    mock = await startMockOpenAI();
    const plugins = DEFAULT_CONFIG.plugins.map((p) => (p.name === 'breaker' ? { name: 'breaker', options: { store: 'redis' } } : p.name === 'sqlite' ? { name: 'postgres' } : p));
    const serverConfig = { ...DEFAULT_CONFIG, plugins: [{ name: 'redis', options: { url: REDIS_URL, keyPrefix: uniquePrefix('shared-breaker') } }, ...plugins] };
    const file = join(await mkdtemp(join(tmpdir(), 'gw-breaker-')), 'gateway.json');
    await writeFile(file, JSON.stringify(serverConfig));
    const env = { GATEWAY_API_KEYS: 'breaker-key-1', DATABASE_URL, GATEWAY_DATABASE_SCHEMA: schema, GATEWAY_ENCRYPTION_KEY: 'c'.repeat(64) };
    for (let i = 0; i < 2; i++) processes.push(await startProcess(['--config', file], env));
  }, 60_000);

  afterAll(async () => {
    for (const p of processes) {
      p.child.kill('SIGTERM');
      await p.exited;
    }
    await mock?.close();
    if (available) await dropSchema(schema);
  });

  test.skipIf(!available)('failures seen by one process open the breaker for the other', async () => {
    const config = { provider: 'openai', api_key: 'sk-shared', custom_host: mock.baseURL, override_params: { model: 'error-503' }, cb_config: { failure_threshold: 2, cooldown_interval: 30_000 } };
    const send = async (p: GatewayProcess) => {
      const res = await fetch(`http://127.0.0.1:${p.port}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-gateway-api-key': 'breaker-key-1', 'x-gateway-config': JSON.stringify(config) },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
      });
      return { status: res.status, body: await res.json() };
    };
    const [a, b] = processes as [GatewayProcess, GatewayProcess];
    expect((await send(a)).status).toBe(503);
    expect((await send(a)).status).toBe(503);
    const before = mock.requests.length;
    const fromB = await send(b);
    expect(fromB.status).toBe(503);
    expect(fromB.body.error.code).toBe('circuit_open');
    expect(mock.requests.length).toBe(before);
  }, 30_000);
});
