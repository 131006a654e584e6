import { mkdir, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { buildDashboard } from '../../../plugins/dashboard/build.js';
import { DEFAULT_CONFIG } from '../../../server/default-config.js';
import { launchChromium } from '../../helpers/browser.js';
import { GATEWAY_KEY, startTestServer } from '../../helpers/gateway.js';
import { startMockOpenAI, type MockUpstream } from '../../mocks/openai-upstream.js';

/**
 * The dashboard in headless Chromium against the real server (the default config, the
 * dashboard built from source into a temp dir) and a mock OpenAI upstream. With
 * DASHBOARD_SCREENSHOTS=1 each page is saved to docs/images/ (the README shows them).
 */

const SCREENSHOTS = process.env.DASHBOARD_SCREENSHOTS === '1' ? join(import.meta.dirname, '../../../docs/images') : null;

let mock: MockUpstream;
let gw: Awaited<ReturnType<typeof startTestServer>>;
let browser: BrowserContext | null = null;
let page: Page;
/** Every URL the page asked for: all must be this gateway's. */
const requested: string[] = [];
/** What the browser logged as errors (a failed request of the page's own is one: Chromium logs every 4xx), and uncaught exceptions. */
const consoleErrors: string[] = [];
/** The secret of a key made in the admin test, with the logs.read scope only. */
let readerKey = '';

const OK_CALLS = 5;
const FAILED_CALLS = 2;

async function api(path: string, init: RequestInit = {}): Promise<any> {
  const res = await fetch(`${gw.url}${path}`, { ...init, headers: { 'content-type': 'application/json', 'x-gateway-api-key': GATEWAY_KEY, ...(init.headers ?? {}) } });
  return res.json();
}

async function shot(name: string): Promise<void> {
  if (SCREENSHOTS === null) return;
  await mkdir(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `dashboard-${name}.png`), fullPage: true });
}

beforeAll(async () => {
  browser = await launchChromium();
  if (browser === null) return;
  const built = await buildDashboard(await mkdtemp(join(tmpdir(), 'gw-dashboard-')));
  mock = await startMockOpenAI();
  gw = await startTestServer({
    config: { ...DEFAULT_CONFIG, plugins: DEFAULT_CONFIG.plugins.map((p) => (p.name === 'dashboard' ? { name: 'dashboard', options: { dir: built.dir } } : p)) },
  });
  // A known set of model calls: five answers and two upstream 500s, all through provider openai.
  // The failing ones go through a fallback (of one target), so their detail shows a routing decision.
  const fallback = JSON.stringify({ strategy: { mode: 'fallback' }, targets: [{ provider: 'openai', api_key: 'sk-upstream-0001', custom_host: mock.baseURL }] });
  const call = (model: string, i: number) =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-gateway-api-key': GATEWAY_KEY,
        'x-gateway-trace-id': `dash-${model}-${i}`,
        ...(model.startsWith('error-') ? { 'x-gateway-config': fallback } : { 'x-gateway-provider': 'openai', authorization: 'Bearer sk-upstream-0001', 'x-gateway-custom-host': mock.baseURL }),
      },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: `hello ${i}` }] }),
    }).then((r) => r.text());
  for (let i = 0; i < OK_CALLS; i++) await call('gpt-4o-mini', i);
  for (let i = 0; i < FAILED_CALLS; i++) await call('error-500', i);
  // The log store writes on its own thread: wait until all seven are readable.
  for (let tries = 0; ; tries++) {
    const listed = await api('/v1/logs?provider=openai&limit=50');
    if (listed.data.length >= OK_CALLS + FAILED_CALLS) break;
    if (tries > 200) throw new Error('the calls never reached the log');
    await new Promise((r) => setTimeout(r, 25));
  }
  page = await browser.newPage();
  await page.setViewportSize({ width: 1280, height: 900 });
  page.on('request', (r) => requested.push(r.url()));
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(`${m.text()} (${m.location().url})`);
  });
  page.on('pageerror', (err) => consoleErrors.push(`uncaught: ${err.message}`));
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await gw?.close();
  await mock?.close();
});

describe('dashboard in Chromium', () => {
  test('sign in with an API key; a wrong key is refused with the reason', async () => {
    if (browser === null) return;
    await page.goto(`${gw.url}/dashboard`);
    expect(page.url()).toBe(`${gw.url}/dashboard/`);
    await shot('sign-in');
    await page.getByLabel('API key').fill('not-a-key-0000');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByTestId('error').textContent()).toContain('not accepted');
    await page.getByLabel('API key').fill(GATEWAY_KEY);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByTestId('stat-requests').waitFor();
    // The key lives in this tab's session storage only.
    expect(await page.evaluate(() => [sessionStorage.getItem('gateway.dashboard.key'), localStorage.getItem('gateway.dashboard.key')])).toEqual([GATEWAY_KEY, null]);
    // Opening the sign-in page, a refused key and signing in left nothing in the console: the page's probe
    // answers 200 whether or not the key is accepted, and whoami (a 401 to a stranger) is asked only after it.
    expect(consoleErrors).toEqual([]);
  });

  test('overview: narrowed to provider openai, the numbers are the known calls and the analytics route', async () => {
    if (browser === null) return;
    const answer = page.waitForResponse((r) => r.url().includes('/v1/analytics/timeseries') && r.url().includes('provider=openai'));
    await page.getByLabel('Provider').fill('openai');
    await page.getByRole('button', { name: 'Apply' }).click();
    const res = await answer;
    const shown = (await res.json()) as { totals: Record<string, number> };
    const stat = async (id: string) => (await page.getByTestId(`stat-${id}`).locator('.stat-value').textContent())!;
    await expect.poll(() => stat('requests')).toBe(String(OK_CALLS + FAILED_CALLS));
    expect(await stat('errors')).toBe(String(FAILED_CALLS));
    expect(await stat('tokens')).toBe(String(OK_CALLS * 11));
    // The same query asked directly gives the same totals (nothing else goes to provider openai).
    const url = new URL(res.url());
    const direct = await api(`${url.pathname}${url.search}`);
    expect(direct.totals).toEqual(shown.totals);
    expect(shown.totals).toMatchObject({ requests: OK_CALLS + FAILED_CALLS, errors: FAILED_CALLS, total_tokens: OK_CALLS * 11 });
    expect(shown.totals.cost).toBeGreaterThan(0);
    const costText = await stat('cost');
    expect(costText.startsWith('$')).toBe(true);
    // Five charts drawn by uPlot.
    expect(await page.locator('figure.chart canvas').count()).toBe(5);
    // The range picker asks again for the last hour.
    const hour = page.waitForResponse((r) => r.url().includes('/v1/analytics/timeseries'));
    await page.getByRole('button', { name: 'Last hour' }).click();
    const from = Number(new URL((await hour).url()).searchParams.get('from'));
    expect(Date.now() - from).toBeLessThan(3_700_000);
    await shot('overview');
  });

  test('logs: filter by status and provider, open a request and see its attempts', async () => {
    if (browser === null) return;
    await page.getByRole('link', { name: 'Logs' }).click();
    await page.getByTestId('logs').waitFor();
    await shot('logs');
    await page.getByLabel('Status').fill('500');
    await page.getByLabel('Provider').fill('openai');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await expect.poll(() => page.getByTestId('logs').locator('tbody tr').count()).toBe(FAILED_CALLS);
    expect(page.url()).toContain('status=500');
    const row = page.getByTestId('logs').locator('tbody tr').first();
    await expect.poll(() => row.textContent()).toContain('error-500');
    // Keyboard: a row opens with Enter.
    await row.focus();
    await page.keyboard.press('Enter');
    await page.getByTestId('log-summary').waitFor();
    expect(await page.getByTestId('log-summary').locator('[data-field="status"]').textContent()).toBe('500');
    expect(await page.getByTestId('attempts').locator('tbody tr').count()).toBe(1);
    expect(await page.getByTestId('attempts').textContent()).toContain('openai');
    // The routing decision: the fallback, what it considered and chose.
    expect(await page.getByTestId('routing').locator('tbody tr').count()).toBe(1);
    expect(await page.getByTestId('routing').textContent()).toContain('fallback at the top');
    // The bodies as captured; the upstream key is nowhere on the page.
    const text = (await page.textContent('body'))!;
    expect(text).toContain('hello');
    expect(text).not.toContain('sk-upstream-0001');
    expect(text).not.toContain(GATEWAY_KEY);
    // Headers as sent, the secret ones masked.
    expect(text).toContain('dash-error-500-');
    expect(text).toMatch(/x-gateway-api-key\s*\[REDACTED\]/i);
    // The config header's provider key too.
    expect(text).toContain('"api_key":"[REDACTED]"');
    await shot('log-detail');
  });

  test('logs: a guardrail denial shows its code in the request detail; the housekeeping traffic is a kind of its own', async () => {
    if (browser === null) return;
    const deny = { id: 'no-secret', type: 'guardrail', checks: [{ id: 'default.regexMatch', parameters: { rule: '\\bsecret\\b', not: true } }], on_fail: { deny: true } };
    const denied = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-trace-id': 'dash-denied', 'x-gateway-config': JSON.stringify({ provider: 'openai', api_key: 'sk-upstream-0001', custom_host: mock.baseURL, before_request_hooks: [deny] }) },
      body: JSON.stringify({ model: 'guarded-model', messages: [{ role: 'user', content: 'the secret' }] }),
    });
    expect(denied.status).toBe(446);
    for (let tries = 0; (await api('/v1/logs?trace_id=dash-denied')).data.length === 0; tries++) {
      if (tries > 200) throw new Error('the denial never reached the log');
      await new Promise((r) => setTimeout(r, 25));
    }
    await page.goto(`${gw.url}/dashboard/#/logs?trace_id=dash-denied`);
    const rows = page.getByTestId('logs').locator('tbody tr');
    await expect.poll(() => rows.count()).toBe(1);
    await rows.first().click();
    const error = page.getByTestId('log-summary').locator('[data-field="error_code"]');
    await expect.poll(() => error.textContent()).toContain('guardrail_denied');
    expect(await error.textContent()).toContain('no-secret');
    expect(await page.getByTestId('log-summary').locator('[data-field="kind"]').textContent()).toBe('api');
    // The dashboard's own requests are in the log, under the kind the overview leaves out.
    await page.goto(`${gw.url}/dashboard/#/logs`);
    await page.getByTestId('logs').waitFor();
    await page.getByLabel('Kind').selectOption('housekeeping');
    const listed = page.waitForResponse((r) => r.url().includes('/v1/logs?') && r.url().includes('kind=housekeeping'));
    await page.getByRole('button', { name: 'Apply filters' }).click();
    const answer = (await (await listed).json()) as { data: { kind: string; path: string }[] };
    expect(page.url()).toContain('kind=housekeeping');
    expect(answer.data.length).toBeGreaterThan(0);
    expect(answer.data.every((e) => e.kind === 'housekeeping')).toBe(true);
    expect(answer.data.some((e) => e.path === '/dashboard/')).toBe(true);
    await expect.poll(() => page.getByTestId('logs').textContent()).not.toContain('/v1/chat/completions');
    expect(await page.getByTestId('logs').textContent()).toContain('GET /dashboard/');
  });

  test('breakdowns: by model, with bars', async () => {
    if (browser === null) return;
    await page.getByRole('link', { name: 'Breakdowns' }).click();
    const table = page.getByTestId('groups');
    await table.waitFor();
    const row = table.locator('tbody tr', { hasText: 'gpt-4o-mini' });
    await expect.poll(() => row.count()).toBe(1);
    expect(await row.locator('td').nth(1).textContent()).toBe(String(OK_CALLS));
    expect(await table.locator('.bar').count()).toBeGreaterThan(1);
    // Token columns beside the cached input: the mock reports 3 cached prompt tokens, no cache writes and 1 reasoning token per answer.
    const headers = await table.locator('thead th').allTextContents();
    const cell = async (label: string) => (await row.locator('td').nth(headers.indexOf(label)).textContent())!;
    expect(headers).toEqual(expect.arrayContaining(['Tokens', 'Cached input', 'Cache writes', 'Reasoning']));
    expect(await cell('Cached input')).toBe(String(OK_CALLS * 3));
    expect(await cell('Cache writes')).toBe('0');
    expect(await cell('Reasoning')).toBe(String(OK_CALLS));
    await shot('breakdowns');
    await page.getByLabel('Group by').selectOption('status_code');
    await expect.poll(() => table.locator('tbody tr', { hasText: '500' }).count()).toBeGreaterThan(0);
    expect(page.url()).toContain('#/breakdowns/status_code');
  });

  test('admin: create a key (its secret shown once), rotate it, and both secrets are real', async () => {
    if (browser === null) return;
    await page.getByRole('link', { name: 'Admin' }).click();
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('button', { name: 'New key' }).click();
    await page.getByLabel('Name').fill('dashboard-made');
    await page.getByLabel('Scopes (blank: the type\'s own)').fill('logs.read');
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = (await page.getByTestId('new-secret').textContent())!;
    expect(secret.length).toBeGreaterThan(20);
    const who = await fetch(`${gw.url}/v1/auth/whoami`, { headers: { 'x-gateway-api-key': secret } });
    expect(who.status).toBe(200);
    expect((await who.json()).scopes).toEqual(['logs.read']);
    await shot('api-keys');
    await page.getByRole('button', { name: 'Done' }).click();
    expect(await page.getByTestId('new-secret').count()).toBe(0);
    const row = page.getByTestId('list-api-keys').locator('tbody tr', { hasText: 'dashboard-made' });
    await row.getByRole('button', { name: 'Rotate' }).click();
    const rotated = (await page.getByTestId('new-secret').textContent())!;
    expect(rotated).not.toBe(secret);
    expect((await fetch(`${gw.url}/v1/auth/whoami`, { headers: { 'x-gateway-api-key': rotated } })).status).toBe(200);
    readerKey = rotated;
    await page.getByRole('button', { name: 'Done' }).click();
  });

  test('admin: saving an invalid config shows the server\'s error and saves nothing', async () => {
    if (browser === null) return;
    await page.getByRole('link', { name: 'Saved configs' }).click();
    await page.getByRole('button', { name: 'New' }).click();
    // Retry attempts have no upper cap (the spec sets none): a negative count is what the server refuses.
    await page.getByTestId('json-editor').fill(JSON.stringify({ name: 'broken', slug: 'broken', config: { provider: 'openai', retry: { attempts: -1 } } }));
    await page.getByRole('button', { name: 'Save' }).click();
    const error = page.getByTestId('error');
    await expect.poll(() => error.textContent()).toContain('400');
    expect(await error.textContent()).toMatch(/attempts/);
    await shot('configs');
    const listed = await api('/v1/configs');
    expect(listed.data.some((c: { slug: string }) => c.slug === 'broken')).toBe(false);
    // The same editor saves a valid one.
    await page.getByTestId('json-editor').fill(JSON.stringify({ name: 'fine', slug: 'fine', config: { provider: 'openai', retry: { attempts: 2 } } }));
    await page.getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => page.getByTestId('list-configs').textContent()).toContain('fine');
  });

  test('dark theme on the toggle, and a phone-width screen scrolls tables inside the page, not the page', async () => {
    if (browser === null) return;
    await page.getByRole('link', { name: 'Overview' }).click();
    await page.getByTestId('stat-requests').waitFor();
    const background = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    const light = await background();
    // Auto → dark.
    await page.getByRole('button', { name: /^Theme:/ }).click();
    await expect.poll(() => page.evaluate(() => document.documentElement.dataset.theme)).toBe('dark');
    expect(await background()).not.toBe(light);
    // The charts are drawn again in the theme's colours: the canvas's own pixels (transparent background,
    // so only what uPlot drew) differ between dark and light.
    const pixels = () => page.evaluate(() => document.querySelector<HTMLCanvasElement>('figure.chart canvas')!.toDataURL());
    await page.waitForTimeout(200);
    const darkChart = await pixels();
    await page.getByRole('button', { name: 'Theme: dark' }).click(); // dark → light
    await expect.poll(() => page.evaluate(() => document.documentElement.dataset.theme)).toBe('light');
    await expect.poll(pixels).not.toBe(darkChart);
    await page.getByRole('button', { name: 'Theme: light' }).click(); // light → auto
    await page.getByRole('button', { name: 'Theme: system' }).click(); // auto → dark
    await expect.poll(() => page.evaluate(() => document.documentElement.dataset.theme)).toBe('dark');
    await expect.poll(pixels).toBe(darkChart);
    await shot('overview-dark');
    await page.setViewportSize({ width: 390, height: 844 });
    for (const where of ['Overview', 'Logs']) {
      await page.getByRole('link', { name: where }).click();
      await page.waitForTimeout(100);
      expect(await page.evaluate(() => document.documentElement.scrollWidth), where).toBeLessThanOrEqual(390);
    }
    await page.setViewportSize({ width: 1280, height: 900 });
    // Dark → light → auto again.
    await page.getByRole('button', { name: 'Theme: dark' }).click();
    await page.getByRole('button', { name: 'Theme: light' }).click();
    await expect.poll(() => page.evaluate(() => document.documentElement.dataset.theme)).toBeUndefined();
  });

  test('a key with logs.read only sees the log pages, and no admin section', async () => {
    if (browser === null) return;
    const reader = await browser.newPage();
    await reader.goto(`${gw.url}/dashboard/`);
    await reader.getByLabel('API key').fill(readerKey);
    await reader.getByRole('button', { name: 'Sign in' }).click();
    await reader.getByTestId('stat-requests').waitFor();
    const nav = reader.getByRole('navigation', { name: 'Pages' });
    expect(await nav.getByRole('link').allTextContents()).toEqual(['Overview', 'Logs', 'Breakdowns']);
    await reader.goto(`${gw.url}/dashboard/#/admin/api-keys`);
    await expect.poll(() => reader.textContent('main')).toContain('no scope for this page');
    expect(await reader.getByTestId('list-api-keys').count()).toBe(0);
    await reader.close();
  });

  test('only this gateway was asked for anything', () => {
    if (browser === null) return;
    expect(requested.length).toBeGreaterThan(5);
    for (const url of requested) expect(url.startsWith(`${gw.url}/`) || url.startsWith('data:'), url).toBe(true);
  });
});
