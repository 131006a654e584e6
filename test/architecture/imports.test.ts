import { expect, test } from 'vitest';
import { pluginPackage, relativeImports, SDK_ENTRIES, sourceFiles } from './imports.js';

/** `file → import` pairs that break a rule, so a failure names every offender. */
function offenders(dir: string, allowed: (file: string, imported: string) => boolean): string[] {
  return sourceFiles(dir).flatMap((file) => relativeImports(file).filter((imp) => !allowed(file, imp)).map((imp) => `${file} → ${imp}`));
}

test('core imports nothing outside core/', () => {
  expect(offenders('core', (_f, imp) => imp.startsWith('core/'))).toEqual([]);
});

test('the SDK builds on the core\'s public surface only, and on no plugin', () => {
  expect(offenders('sdk', (_f, imp) => imp.startsWith('sdk/') || imp === 'core/index.ts')).toEqual([]);
});

test("plugins import the SDK's entry points and files of their own package, never another plugin's files or the core's", () => {
  expect(offenders('plugins', (file, imp) => SDK_ENTRIES.has(imp) || imp.startsWith(`${pluginPackage(file)}/`))).toEqual([]);
});

test('the rule can fail: a cross-plugin import is reported', () => {
  expect(pluginPackage('plugins/providers/azure/ai/index.ts')).toBe('plugins/providers/azure');
  expect(pluginPackage('plugins/logs/routes/index.ts')).toBe('plugins/logs');
  const allowed = (file: string, imp: string) => SDK_ENTRIES.has(imp) || imp.startsWith(`${pluginPackage(file)}/`);
  expect(allowed('plugins/metrics/index.ts', 'plugins/logs/index.ts')).toBe(false);
  expect(allowed('plugins/metrics/index.ts', 'sdk/observe/summary.ts')).toBe(false);
  expect(allowed('plugins/metrics/index.ts', 'sdk/index.ts')).toBe(true);
});
