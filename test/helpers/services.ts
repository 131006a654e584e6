import { Socket } from 'node:net';

export const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
export const DATABASE_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';

const DEFAULT_PORTS: Record<string, number> = { 'redis:': 6379, 'postgres:': 5432, 'postgresql:': 5432 };

/** True when a TCP connection to the URL's host and port opens within a second. */
export async function reachable(url: string): Promise<boolean> {
  const u = new URL(url);
  return new Promise((resolve) => {
    const socket = new Socket();
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once('error', () => done(false));
    socket.connect(Number(u.port || DEFAULT_PORTS[u.protocol] || 80), u.hostname, () => done(true));
  });
}

/**
 * Whether tests needing `service` can run. Absent locally: skip, loudly.
 * Absent under CI=true: fail, because CI must exercise the real service.
 */
export async function requireService(service: string, url: string): Promise<boolean> {
  if (await reachable(url)) return true;
  const message = `${service} is not reachable at ${url}; the tests that need it cannot run`;
  if (process.env.CI === 'true') throw new Error(`${message} (CI=true requires it)`);
  console.warn(`\n!!! SKIPPED: ${message}. Start it to run them.\n`);
  return false;
}

/** A key prefix no other test run uses. */
export function uniquePrefix(name: string): string {
  return `test:${name}:${process.pid}:${Date.now().toString(36)}:${Math.random().toString(36).slice(2, 8)}:`;
}

/** Deletes every Redis key under a test's prefix (its cleanup). */
export async function clearRedisPrefix(prefix: string, url = REDIS_URL): Promise<void> {
  const { Redis } = await import('ioredis');
  const client = new Redis(url);
  try {
    const keys = await client.keys(`${prefix}*`);
    if (keys.length > 0) await client.del(...keys);
  } finally {
    await client.quit();
  }
}

/** A PostgreSQL schema name no other test run uses (lower case, so it needs no quoting). */
export function uniqueSchema(name: string): string {
  return `${name}_${process.pid}_${Date.now().toString(36)}`;
}

/** Drops a test's schema and everything in it. */
export async function dropSchema(schema: string): Promise<void> {
  const { default: pg } = await import('pg');
  const c = new pg.Client({ connectionString: DATABASE_URL });
  await c.connect();
  try {
    await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await c.end();
  }
}
