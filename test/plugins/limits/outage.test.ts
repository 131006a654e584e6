import { createServer as createTcpServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { GatewayPlugin } from '../../../core/index.js';
import { REDIS_URL, requireService, uniquePrefix } from '../../helpers/services.js';
import { startMockOpenAI, type MockUpstream } from '../../mocks/openai-upstream.js';
import { chat, limitHeadersOf, limitsGateway, type LimitsGateway } from './helpers.js';

const clock = { now: Date.parse('2026-03-11T10:00:00Z') };
let mock: MockUpstream;
beforeAll(async () => {
  mock = await startMockOpenAI();
});
afterAll(async () => {
  await mock?.close();
});

/** One fail-open and one fail-closed policy, each for the requests whose metadata names it. */
async function policies(gw: LimitsGateway) {
  const open = await gw.admin('POST', '/policies/rate-limits', { name: 'open', type: 'requests', unit: 'rpm', value: 100, conditions: [{ key: 'metadata.case', value: 'open' }] });
  const closed = await gw.admin('POST', '/policies/rate-limits', { name: 'closed', type: 'requests', unit: 'rpm', value: 100, fail_open: false, conditions: [{ key: 'metadata.case', value: 'closed' }] });
  return { open, closed };
}
const send = (gw: LimitsGateway, which: string) => chat(gw, mock.baseURL, { headers: { 'x-gateway-metadata': JSON.stringify({ case: which }) } });
const warnings = (gw: LimitsGateway) => gw.logs.lines().filter((l) => typeof l.msg === 'string' && l.msg.includes('counter store is unreachable'));

/** A port on loopback that nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createTcpServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

describe('Redis unreachable (a closed port)', () => {
  test('fail-open policies let requests through, fail-closed ones answer 503 at once; one warning per interval', async () => {
    const gw = await limitsGateway({ clock, redis: { url: `redis://127.0.0.1:${await closedPort()}`, prefix: 'unused:' }, limits: { store: 'redis' } });
    try {
      const { closed } = await policies(gw);
      const started = Date.now();
      for (let i = 0; i < 3; i++) {
        const open = await send(gw, 'open');
        expect(open.status).toBe(200);
        expect(limitHeadersOf(open.headers)).toEqual({});
        const refused = await send(gw, 'closed');
        expect(refused.status).toBe(503);
        expect(refused.body.error).toMatchObject({ code: 'limit_store_unavailable', type: 'server_error' });
        expect(refused.body.error.message).toContain(closed.id);
        expect(refused.headers.get('retry-after')).toBe('5');
      }
      expect(Date.now() - started).toBeLessThan(5000);
      expect(warnings(gw)).toHaveLength(1);
      // The next interval warns again, saying how many it left out.
      clock.now += 60_000;
      await send(gw, 'open');
      expect(warnings(gw)).toHaveLength(2);
      expect(warnings(gw)[1]!.suppressed).toBe(5);
    } finally {
      clock.now = Date.parse('2026-03-11T10:00:00Z');
      await gw.close();
    }
  });
});

describe('Redis that stops answering (connected, silent)', () => {
  let server: Server;
  const sockets = new Set<Socket>();
  beforeAll(async () => {
    // Answers the connection's INFO ready check, then nothing: the limit script never gets a reply.
    server = createTcpServer((socket) => {
      sockets.add(socket);
      socket.on('data', (data) => {
        if (data.toString().toLowerCase().includes('info')) {
          const info = '# Server\r\nredis_version:7.0.0\r\nloading:0\r\n';
          socket.write(`$${Buffer.byteLength(info)}\r\n${info}\r\n`);
        }
      });
      socket.on('error', () => undefined);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => server.close(r));
  });

  test('a check never hangs: after the command timeout the policies fail open or closed as they say', async () => {
    const port = (server.address() as AddressInfo).port;
    const gw = await limitsGateway({ clock, redis: { url: `redis://127.0.0.1:${port}`, prefix: 'silent:' }, limits: { store: 'redis' } });
    try {
      await policies(gw);
      const started = Date.now();
      const [open, closed] = await Promise.all([send(gw, 'open'), send(gw, 'closed')]);
      expect(Date.now() - started).toBeLessThan(5000);
      expect(open.status).toBe(200);
      expect(closed.status).toBe(503);
      expect(warnings(gw)[0]!.err).toMatch(/timed out/i);
    } finally {
      await gw.close();
    }
  });
});

describe('Redis connection lost, then back', () => {
  test('counting degrades while the connection is down and resumes when it is back', async (ctx) => {
    if (!(await requireService('Redis', REDIS_URL))) ctx.skip();
    const prefix = uniquePrefix('limits-outage');
    let client: Redis | null = null;
    // Reaches the gateway's own Redis connection (the redis store plugin's), to cut it.
    const grab: GatewayPlugin = {
      name: 'grab-redis',
      apply(api) {
        api.onReady(() => {
          client = (api.stores.get('redis') as { client: Redis }).client;
        });
      },
    };
    const gw = await limitsGateway({ clock, redis: { url: REDIS_URL, prefix }, limits: { store: 'redis' }, extra: [grab] });
    try {
      await policies(gw);
      expect((await send(gw, 'closed')).headers.get('x-ratelimit-remaining-requests')).toBe('99');
      client!.disconnect();
      expect((await send(gw, 'closed')).status).toBe(503);
      expect((await send(gw, 'open')).status).toBe(200);
      // The store may already be reconnecting by itself (a request while it was down can start it): connect only
      // when it is not, then wait until it is ready.
      const c = client!;
      if (c.status === 'end' || c.status === 'close') await c.connect().catch(() => undefined);
      if (c.status !== 'ready') await new Promise<void>((resolve) => c.once('ready', () => resolve()));
      const back = await send(gw, 'closed');
      expect([back.status, back.headers.get('x-ratelimit-remaining-requests')]).toEqual([200, '98']);
    } finally {
      await gw.close();
      const { Redis: Client } = await import('ioredis');
      const c = new Client(REDIS_URL);
      const keys = await c.keys(`${prefix}*`);
      if (keys.length > 0) await c.del(...keys);
      await c.quit();
    }
  });
});
