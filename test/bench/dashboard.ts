import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { launchChromium } from '../helpers/browser.js';

/** Where `npm run build` (which the bench runs first) puts the dashboard. */
const BUILT = fileURLToPath(new URL('../../dist/dashboard/', import.meta.url));
const LOADS = 5;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`;

/**
 * The dashboard's weight and first load: the built files' sizes (raw and gzipped, as served),
 * and in headless Chromium against the built gateway, the time from navigation to the load
 * event and to the sign-in form drawn, cold (a fresh browser each time) and warm (cached).
 */
export async function dashboardBench(gatewayUrl: string): Promise<string> {
  const files = [join(BUILT, 'index.html'), ...readdirSync(join(BUILT, 'assets')).map((f) => join(BUILT, 'assets', f))];
  const sizes = files.map((f) => {
    const body = readFileSync(f);
    return { name: f.slice(BUILT.length), bytes: body.length, gzip: gzipSync(body, { level: 9 }).length };
  });
  const total = sizes.reduce((a, s) => ({ bytes: a.bytes + s.bytes, gzip: a.gzip + s.gzip }), { bytes: 0, gzip: 0 });
  const lines = ['| file | bytes | gzipped (as served) |', '|---|--:|--:|', ...sizes.map((s) => `| \`${s.name}\` | ${kib(s.bytes)} | ${kib(s.gzip)} |`), `| total | ${kib(total.bytes)} | ${kib(total.gzip)} |`];
  const cold: { load: number; drawn: number }[] = [];
  const warm: { load: number; drawn: number }[] = [];
  for (let i = 0; i < LOADS; i++) {
    const browser = await launchChromium();
    if (browser === null) return `${lines.join('\n')}\n\nFirst load: not measured (Chromium is not installed).`;
    try {
      const page = await browser.newPage();
      for (const into of [cold, warm]) {
        await page.goto(`${gatewayUrl}/dashboard/`);
        await page.waitForSelector('input[name="api-key"]');
        into.push(
          await page.evaluate(() => ({
            load: (performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming).loadEventEnd,
            drawn: performance.now(),
          })),
        );
      }
    } finally {
      await browser.close();
    }
  }
  const row = (label: string, xs: { load: number; drawn: number }[]) => `| ${label} | ${median(xs.map((x) => x.load)).toFixed(0)} | ${median(xs.map((x) => x.drawn)).toFixed(0)} |`;
  return [
    ...lines,
    '',
    `First load in headless Chromium, median of ${LOADS} (ms from navigation start):`,
    '',
    '| load | load event | sign-in form drawn |',
    '|---|--:|--:|',
    row('cold (new browser, empty cache)', cold),
    row('warm (same browser, cached assets)', warm),
  ].join('\n');
}
