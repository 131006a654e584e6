import { existsSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext } from 'playwright-core';

/** Debian's Chromium, installed by .ci/run (`apt-get install chromium`). */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * The flags every launch uses: this machine reaches no outside host, and without
 * them Chromium tries to (updates, sync, field trials, QUIC), many times a start.
 */
export const CHROMIUM_FLAGS = Object.freeze([
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]);

/**
 * Launches headless Chromium with a fresh profile directory and returns its
 * context (close it to stop the browser), or null (with a loud warning) when it
 * is not installed; under CI=true its absence is a failure.
 */
export async function launchChromium(): Promise<BrowserContext | null> {
  if (!existsSync(CHROMIUM)) {
    const message = `Chromium is not installed at ${CHROMIUM}; the browser tests cannot run (apt-get install chromium)`;
    if (process.env.CI === 'true') throw new Error(`${message} (CI=true requires it)`);
    console.warn(`\n!!! SKIPPED: ${message}.\n`);
    return null;
  }
  const { chromium } = await import('playwright-core');
  const profile = await mkdtemp(join(tmpdir(), 'gw-chromium-'));
  // A persistent context is how Playwright takes a profile directory of our choosing (it refuses --user-data-dir in args).
  return chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: [...CHROMIUM_FLAGS] });
}
