import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

/** The repository root. */
export const ROOT = resolve(import.meta.dirname, '../..');

/** Every .ts file under `dir` (relative to the root), recursively. */
export function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(join(ROOT, d))) {
      const path = join(d, name);
      if (statSync(join(ROOT, path)).isDirectory()) walk(path);
      else if (name.endsWith('.ts')) out.push(path.split(sep).join('/'));
    }
  };
  walk(dir);
  return out;
}

const SPECIFIER = /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s*'([^']+)'|import\(\s*'([^']+)'\s*\)/g;

/** The relative imports of a file, as repository paths of the .ts files they name. */
export function relativeImports(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(SPECIFIER)) {
    const spec = m[1] ?? m[2]!;
    if (!spec.startsWith('.')) continue;
    out.push(relative(ROOT, resolve(ROOT, dirname(file), spec)).split(sep).join('/').replace(/\.js$/, '.ts'));
  }
  return out;
}

/** The package folder a plugin file belongs to: `plugins/<name>`, or `plugins/<group>/<name>` for providers, stores and strategies. */
export function pluginPackage(file: string): string {
  const parts = file.split('/');
  return ['providers', 'stores', 'strategies'].includes(parts[1]!) ? parts.slice(0, 3).join('/') : parts.slice(0, 2).join('/');
}

/**
 * The SDK modules a plugin may import: its entry points. `sqlite` and `observe/assemble` import
 * nothing from the core, for worker threads that must start light (the log writer); `analytics`
 * is answer types only, for the dashboard's browser bundle.
 */
export const SDK_ENTRIES = new Set(['sdk/index.ts', 'sdk/admin/index.ts', 'sdk/sqlite.ts', 'sdk/observe/assemble.ts', 'sdk/anthropic/index.ts', 'sdk/gemini/index.ts', 'sdk/analytics.ts']);
