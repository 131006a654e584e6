import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { buildDashboard, type DashboardBuild } from '../../../plugins/dashboard/build.js';
import { dashboard } from '../../../plugins/dashboard/index.js';
import { serveGateway } from '../../helpers/serve.js';

let built: DashboardBuild;
let gw: Awaited<ReturnType<typeof serveGateway>>;
let missing: Awaited<ReturnType<typeof serveGateway>>;

beforeAll(async () => {
  built = await buildDashboard(await mkdtemp(join(tmpdir(), 'gw-dashboard-')));
  gw = await serveGateway({ plugins: [dashboard({ dir: built.dir })] });
  missing = await serveGateway({ plugins: [dashboard({ dir: join(tmpdir(), 'no-such-dashboard-build') })] });
});

afterAll(async () => {
  await gw?.close();
  await missing?.close();
});

const asset = (ext: string) => built.files.find((f) => f.path.startsWith('assets/') && f.path.endsWith(ext))!.path;

describe('the build', () => {
  test('index.html names the hashed bundle; nothing refers to another host', async () => {
    const html = await readFile(join(built.dir, 'index.html'), 'utf8');
    expect(html).toContain(`./${asset('.js')}`);
    expect(html).toContain(`./${asset('.css')}`);
    for (const f of built.files) {
      const text = await readFile(join(built.dir, f.path), 'utf8');
      // URLs in the bundle are only license texts' and specs' (legal comments are moved to the end); none is fetched.
      expect(text).not.toMatch(/\b(fetch|import)\(\s*["']https?:/);
      expect(text).not.toMatch(/<(script|link)[^>]+(src|href)=["']https?:/);
    }
    expect(built.files.every((f) => f.gzipBytes > 0 && f.gzipBytes < f.bytes)).toBe(true);
  });
});

describe('serving', () => {
  test('/dashboard redirects to /dashboard/, which is the page, without a key, with the security headers', async () => {
    const redirect = await fetch(`${gw.url}/dashboard`, { redirect: 'manual' });
    expect(redirect.status).toBe(308);
    expect(redirect.headers.get('location')).toBe('/dashboard/');
    const res = await fetch(`${gw.url}/dashboard/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    const csp = res.headers.get('content-security-policy')!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(await res.text()).toBe(await readFile(join(built.dir, 'index.html'), 'utf8'));
  });

  test('hashed assets: their type, cached for a year, gzipped when asked, 304 on a matching ETag', async () => {
    for (const [ext, type] of [['.js', 'text/javascript; charset=utf-8'], ['.css', 'text/css; charset=utf-8']] as const) {
      const path = asset(ext);
      const plain = await fetch(`${gw.url}/dashboard/${path}`, { headers: { 'accept-encoding': 'identity' } });
      expect(plain.status).toBe(200);
      expect(plain.headers.get('content-type')).toBe(type);
      expect(plain.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      expect(plain.headers.get('content-encoding')).toBeNull();
      const body = Buffer.from(await plain.arrayBuffer());
      expect(body.equals(await readFile(join(built.dir, path)))).toBe(true);
      // Node's http client, to see the bytes as sent (fetch would decode them).
      const { request } = await import('node:http');
      const zipped = await new Promise<{ encoding: string | undefined; bytes: Buffer }>((resolve, reject) => {
        request(`${gw.url}/dashboard/${path}`, { headers: { 'accept-encoding': 'gzip, deflate' } }, (r) => {
          const chunks: Buffer[] = [];
          r.on('data', (c: Buffer) => chunks.push(c));
          r.on('end', () => resolve({ encoding: r.headers['content-encoding'], bytes: Buffer.concat(chunks) }));
        })
          .on('error', reject)
          .end();
      });
      expect(zipped.encoding).toBe('gzip');
      expect(gunzipSync(zipped.bytes).equals(body)).toBe(true);
      const etag = plain.headers.get('etag')!;
      const again = await fetch(`${gw.url}/dashboard/${path}`, { headers: { 'if-none-match': etag } });
      expect(again.status).toBe(304);
      expect(await again.text()).toBe('');
    }
  });

  test('an unknown file or path is a 404 in the envelope; other methods are refused', async () => {
    const res = await fetch(`${gw.url}/dashboard/assets/nope.js`);
    expect(res.status).toBe(404);
    expect(((await res.json()) as any).error.code).toBe('not_found');
    expect((await fetch(`${gw.url}/dashboard/logs`)).status).toBe(404);
    expect((await fetch(`${gw.url}/dashboard/`, { method: 'POST', body: '{}' })).status).toBe(405);
  });

  test('the sign-in probe in a build without auth: signed in (every call is accepted there), a 200 that is never cached', async () => {
    const res = await fetch(`${gw.url}/dashboard/session`);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(await res.json()).toEqual({ object: 'dashboard.session', signed_in: true, reason: null });
  });

  test('without a build: 503 saying how to build it, and a warning at start', async () => {
    const res = await fetch(`${missing.url}/dashboard/`);
    expect(res.status).toBe(503);
    expect(((await res.json()) as any).error.message).toContain('npm run build');
    expect(missing.logs.text()).toContain('no built dashboard found');
  });
});
