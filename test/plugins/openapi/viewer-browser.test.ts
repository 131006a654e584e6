import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { type GatewayPlugin, jsonResponse } from '../../../sdk/index.js';
import { staticAuth } from '../../../plugins/auth-static/index.js';
import { health } from '../../../plugins/health/index.js';
import { openapi } from '../../../plugins/openapi/index.js';
import { launchChromium } from '../../helpers/browser.js';
import { serveGateway } from '../../helpers/serve.js';

// The viewer in a real browser: it renders under its CSP, asks nothing of another host, and "Authorize" then "Try it out" call a keyed route.
const KEY = 'viewer-test-key-0001';
const whoami: GatewayPlugin = {
  name: 'test-whoami',
  apply(api) {
    api.routes.add({
      name: 'test.whoami',
      method: 'GET',
      path: '/v1/test-whoami',
      kind: 'handler',
      body: 'none',
      doc: { summary: 'Who is calling', tags: ['Test'] },
      handler: (ctx) => jsonResponse(200, { key: ctx.auth?.keyId ?? null }),
    });
  },
};

let gw: Awaited<ReturnType<typeof serveGateway>>;
let browser: BrowserContext | null;
beforeAll(async () => {
  gw = await serveGateway({ plugins: [health(), staticAuth({ keys: [KEY] }), openapi(), whoami] });
  browser = await launchChromium();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await gw?.close();
});

test('renders the document, offline and within its CSP; Authorize and Try it out send the key', async () => {
  if (browser === null) return;
  const page = await browser.newPage();
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (err) => problems.push(`pageerror: ${err.message}`));
  const elsewhere: string[] = [];
  page.on('request', (r) => {
    if (!r.url().startsWith(gw.url) && !/^(data|blob):/.test(r.url())) elsewhere.push(r.url());
  });

  await page.goto(`${gw.url}/docs`);
  const op = page.locator('[id^="operations-Test-"]');
  await op.waitFor({ timeout: 20_000 });
  expect(await page.locator('.opblock').count()).toBe(6);

  await page.locator('.auth-wrapper button.authorize').click();
  await page.locator('.modal-ux input').first().fill(KEY);
  await page.locator('.modal-ux button.authorize').first().click();
  await page.locator('.modal-ux button.btn-done').click();

  await op.locator('.opblock-summary').click();
  await op.locator('button.try-out__btn').click();
  await op.locator('button.execute').click();
  const status = op.locator('.live-responses-table .response .response-col_status');
  await status.waitFor({ timeout: 10_000 });
  expect((await status.textContent())?.trim()).toBe('200');
  expect(await op.locator('.live-responses-table .response .response-col_description').textContent()).toContain('"key": "static:');

  expect(elsewhere).toEqual([]);
  expect(problems).toEqual([]);
}, 60_000);
