import { mkdtemp } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { buildDashboard } from '../../../plugins/dashboard/build.js';
import { DEFAULT_CONFIG } from '../../../server/default-config.js';
import { launchChromium } from '../../helpers/browser.js';
import { BOOTSTRAP_KEY, startTestServer } from '../../helpers/gateway.js';
import { startOidcProvider, type TestOidcProvider } from '../../helpers/oidc-provider.js';

/**
 * Single sign-on from the dashboard's sign-in page, in Chromium: the real server with the default config
 * and the sso plugin pointed at an in-process OpenID Connect provider on 127.0.0.1. The callback URL
 * must be known before the gateway (on an ephemeral port) starts, so it names a small loopback server
 * that sends the browser on to the gateway; cookies are per host, not port, so the session set there holds.
 */

let browser: BrowserContext | null = null;
let idp: TestOidcProvider;
let hop: Server;
let gw: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  browser = await launchChromium();
  if (browser === null) return;
  let gatewayUrl = '';
  hop = createServer((req, res) => {
    res.writeHead(307, { location: `${gatewayUrl}${req.url}` });
    res.end();
  });
  await new Promise<void>((r) => hop.listen(0, '127.0.0.1', r));
  const callback = `http://127.0.0.1:${(hop.address() as AddressInfo).port}/v1/auth/sso/callback`;
  idp = await startOidcProvider(callback);
  idp.accounts.set('dana', { email: 'dana@corp.example', email_verified: true, name: 'Dana' });
  idp.loginAs = 'dana';
  const built = await buildDashboard(await mkdtemp(join(tmpdir(), 'gw-dashboard-')));
  const plugins = DEFAULT_CONFIG.plugins.map((p) =>
    p.name === 'sso' ? { name: 'sso', options: { allowHttpIssuer: true } } : p.name === 'dashboard' ? { name: 'dashboard', options: { dir: built.dir } } : p,
  );
  gw = await startTestServer({
    config: { ...DEFAULT_CONFIG, plugins },
    env: { GATEWAY_OIDC_ISSUER: idp.issuer, GATEWAY_OIDC_CLIENT_ID: idp.clientId, GATEWAY_OIDC_CLIENT_SECRET: idp.clientSecret, GATEWAY_OIDC_REDIRECT_URI: callback },
  });
  gatewayUrl = gw.url;
  // Dana is an admin of the default workspace before her first sign-in (matched by email).
  const res = await fetch(`${gw.url}/v1/workspaces/default/members`, {
    method: 'POST',
    headers: { 'x-gateway-api-key': BOOTSTRAP_KEY, 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'dana@corp.example', name: 'Dana', role: 'admin' }),
  });
  expect(res.status).toBe(200);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await gw?.close();
  await idp?.close();
  hop?.close();
});

test('the sign-in page offers single sign-on; the session signs the dashboard in, acts with the CSRF token, and signs out', async () => {
  if (browser === null) return;
  const page = await browser.newPage();
  const hosts = new Set<string>();
  page.on('request', (r) => hosts.add(new URL(r.url()).host));
  // Errors the browser logged for the gateway's pages (a 4xx of the page's own requests is one).
  const consoleErrors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' && m.location().url.startsWith(gw.url)) consoleErrors.push(`${m.text()} (${m.location().url})`);
  });
  await page.goto(`${gw.url}/dashboard/`);
  await page.getByRole('link', { name: 'Sign in with single sign-on' }).click();
  // Provider, callback, and back to the dashboard, signed in as Dana.
  await page.getByTestId('who').waitFor();
  expect(page.url()).toBe(`${gw.url}/dashboard/`);
  expect(await page.getByTestId('who').textContent()).toContain('dana@corp.example');
  // Nothing of hers is kept by the page: the session is an HttpOnly cookie.
  expect(await page.evaluate(() => [document.cookie, sessionStorage.length])).toEqual(['', 0]);
  await page.getByTestId('stat-requests').waitFor();
  // A change made with the session carries the CSRF token (the server refuses it otherwise).
  await page.getByRole('link', { name: 'Admin' }).click();
  await page.getByRole('link', { name: 'Saved configs' }).click();
  await page.getByRole('button', { name: 'New' }).click();
  await page.getByTestId('json-editor').fill(JSON.stringify({ name: 'made by dana', slug: 'by-dana', config: { retry: { attempts: 2 } } }));
  await page.getByRole('button', { name: 'Save' }).click();
  await expect.poll(() => page.getByTestId('list-configs').textContent()).toContain('made by dana');
  const listed = await (await fetch(`${gw.url}/v1/configs`, { headers: { 'x-gateway-api-key': BOOTSTRAP_KEY } })).json();
  expect(listed.data.map((c: { slug: string }) => c.slug)).toContain('by-dana');
  // Signing out ends the session on the server: the page is back at sign-in, and stays there after a reload.
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByLabel('API key').waitFor();
  await page.reload();
  await page.getByLabel('API key').waitFor();
  // Opening the sign-in page without a session, signing in, and signing out left no console error.
  expect(consoleErrors).toEqual([]);
  // Only loopback hosts were asked: the gateway, the hop and the provider.
  for (const host of hosts) expect(host.startsWith('127.0.0.1:'), host).toBe(true);
});
