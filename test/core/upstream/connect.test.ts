import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { GatewayError, HostPolicy, UpstreamClient, type HostResolver, type OutboundOptions } from '../../../core/index.js';
import { policyConnector } from '../../../core/upstream/connect.js';

/*
 * The host policy at connect time. Names are resolved by an injected
 * resolver, and the only real connections go to a server on 127.0.0.1: a
 * name mapped to a private address must be refused before any packet is sent,
 * so no test here ever reaches another address.
 */

let server: Server;
let port: number;
let connections = 0;
let requests = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    requests++;
    // Every answer closes its connection, so each request opens (and checks) a new one.
    res.writeHead(200, { 'content-type': 'text/plain', connection: 'close' }).end('ok');
  });
  server.on('connection', () => connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

/** A resolver from a fixed table; records every name it was asked for. */
function resolver(table: Record<string, string[] | (() => string[])>) {
  const asked: string[] = [];
  const resolve: HostResolver = async (hostname) => {
    asked.push(hostname);
    const entry = table[hostname];
    const addresses = typeof entry === 'function' ? entry() : entry;
    if (addresses === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }) as const);
  };
  return { resolve, asked };
}

function client(outbound: OutboundOptions) {
  return new UpstreamClient({ connections: 4, headersTimeoutMs: 5000, bodyTimeoutMs: 5000, outbound });
}

async function get(c: UpstreamClient, url: string): Promise<number> {
  const res = await c.send({ method: 'GET', url, headers: {}, body: null }, null);
  await res.body.bytes();
  return res.status;
}

async function refusal(c: UpstreamClient, url: string): Promise<GatewayError> {
  const before = { connections, requests };
  const err = await get(c, url).then(
    () => {
      throw new Error(`${url} was not refused`);
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(GatewayError);
  // Nothing reached the server (and nothing else was reached: the only address ever handed out is a refused one).
  expect({ connections, requests }).toEqual(before);
  return err as GatewayError;
}

describe('names are checked on the addresses they resolve to, when a connection opens', () => {
  test('a name that resolves to a private address is refused before connecting: 400 host_not_allowed', async () => {
    const { resolve, asked } = resolver({ 'rebind.test': ['10.0.0.1'] });
    const c = client({ resolve, allowHosts: ['127.0.0.1'] });
    try {
      const err = await refusal(c, `http://rebind.test:${port}/v1/chat/completions`);
      expect(err.code).toBe('host_not_allowed');
      expect(err.status).toBe(400);
      expect(err.message).toContain(`does not connect to rebind.test:${port}: it resolves only to a loopback, private`);
      expect(err.message).toContain(`add "rebind.test:${port}"`);
      expect(err.message).not.toContain('10.0.0.1'); // what an internal name resolves to is not told
      expect(asked).toEqual(['rebind.test']);
    } finally {
      await c.close();
    }
  });

  test('a name that resolves to an allowed address connects (127.0.0.1 allow-listed)', async () => {
    const { resolve, asked } = resolver({ 'ok.test': ['127.0.0.1'] });
    const c = client({ resolve, allowHosts: ['127.0.0.1'] });
    try {
      const before = requests;
      expect(await get(c, `http://ok.test:${port}/x`)).toBe(200);
      expect(requests).toBe(before + 1);
      expect(asked).toEqual(['ok.test']);
    } finally {
      await c.close();
    }
  });

  test('DNS rebinding: the same name, re-resolved to a private address for the next connection, is refused', async () => {
    let answer = '127.0.0.1';
    const { resolve, asked } = resolver({ 'flip.test': () => [answer] });
    const c = client({ resolve, allowHosts: ['127.0.0.1'] });
    try {
      expect(await get(c, `http://flip.test:${port}/first`)).toBe(200);
      answer = '10.0.0.1';
      const err = await refusal(c, `http://flip.test:${port}/second`);
      expect(err.code).toBe('host_not_allowed');
      expect(asked).toEqual(['flip.test', 'flip.test']);
    } finally {
      await c.close();
    }
  });

  test('by default loopback is refused however it is reached: a name, an address, an odd spelling', async () => {
    const { resolve } = resolver({ localhost: ['127.0.0.1', '::1'], 'ok.test': ['127.0.0.1'] });
    const c = client({ resolve });
    try {
      for (const host of ['localhost', 'ok.test', '127.0.0.1', '0x7f.1', '2130706433', '017700000001', '127.1', '[::ffff:127.0.0.1]', '[::1]']) {
        expect((await refusal(c, `http://${host}:${port}/v1`)).code, host).toBe('host_not_allowed');
      }
    } finally {
      await c.close();
    }
  });

  test('an allow-listed name connects to whatever it resolves to; on another port it is checked like any name', async () => {
    const { resolve } = resolver({ 'ollama.test': ['127.0.0.1'] });
    const c = client({ resolve, allowHosts: [`ollama.test:${port}`] });
    try {
      expect(await get(c, `http://ollama.test:${port}/api`)).toBe(200);
      expect((await refusal(c, `http://ollama.test:${port + 1}/api`)).code).toBe('host_not_allowed');
    } finally {
      await c.close();
    }
  });

  test('an address entry with a port allows that address when the URL names it, not a name resolving to it', async () => {
    const { resolve } = resolver({ 'ok.test': ['127.0.0.1'] });
    const c = client({ resolve, allowHosts: [`127.0.0.1:${port}`] });
    try {
      expect(await get(c, `http://127.0.0.1:${port}/x`)).toBe(200);
      expect((await refusal(c, `http://ok.test:${port}/x`)).code).toBe('host_not_allowed');
    } finally {
      await c.close();
    }
  });

  test('allowPrivateHosts connects anywhere', async () => {
    const { resolve } = resolver({ 'ok.test': ['127.0.0.1'] });
    const c = client({ resolve, allowPrivateHosts: true });
    try {
      expect(await get(c, `http://ok.test:${port}/x`)).toBe(200);
      expect(await get(c, `http://127.0.0.1:${port}/x`)).toBe(200);
    } finally {
      await c.close();
    }
  });

  test('a name that does not resolve is unreachable (502), not refused', async () => {
    const { resolve } = resolver({});
    const c = client({ resolve });
    try {
      const err = await refusal(c, `http://nowhere.test:${port}/x`);
      expect(err.code).toBe('upstream_unreachable');
      expect(err.message).toContain('ENOTFOUND');
    } finally {
      await c.close();
    }
  });
});

test('the connector checks an IP literal itself (net.connect does not look it up), whoever called it', async () => {
  const connect = policyConnector(new HostPolicy());
  const before = connections;
  const err = await new Promise<Error | null>((resolve) => connect({ hostname: '127.0.0.1', protocol: 'http:', port: String(port) }, (...args) => resolve(args[0])));
  expect(err).toBeInstanceOf(GatewayError);
  expect((err as GatewayError).code).toBe('host_not_allowed');
  expect(connections).toBe(before);
});
