import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { pluginPackage, ROOT, sourceFiles } from './imports.js';

/** A token a plugin resolves (or asks about) at run time: `api.resolve(X)`, `api.tryResolve(X)`, `api.provided(X)`. */
const RESOLVED = /\bapi\.(?:resolve|tryResolve|provided)(?:<[^>]*>)?\(\s*([A-Z][A-Z0-9_]*)\s*\)/g;
/** SDK helpers that resolve a token for the plugin that calls them with its api: a call counts as resolving it. */
const HELPERS: Readonly<Record<string, string>> = { pricingOf: 'PRICING', tenantOf: 'TENANCY' };
const HELPER_CALL = new RegExp(`\\b(${Object.keys(HELPERS).join('|')})\\(\\s*api\\s*\\)`, 'g');
/** The plugin object's declarations: `requires: [A, B]`, `uses: [...]`, `provides: [...]`. */
const DECLARED = /\b(?:requires|uses|provides)\s*:\s*\[([^\]]*)\]/g;

/** `package → token` pairs where a plugin package resolves a token it does not declare. */
function undeclared(files: readonly string[]): string[] {
  const resolved = new Map<string, Set<string>>();
  const declared = new Map<string, Set<string>>();
  for (const file of files) {
    const pkg = pluginPackage(file);
    const text = readFileSync(join(ROOT, file), 'utf8');
    for (const m of text.matchAll(RESOLVED)) (resolved.get(pkg) ?? resolved.set(pkg, new Set()).get(pkg)!).add(m[1]!);
    for (const m of text.matchAll(HELPER_CALL)) (resolved.get(pkg) ?? resolved.set(pkg, new Set()).get(pkg)!).add(HELPERS[m[1]!]!);
    for (const m of text.matchAll(DECLARED)) {
      for (const token of m[1]!.split(',').map((t) => t.trim()).filter((t) => /^[A-Z][A-Z0-9_]*$/.test(t))) (declared.get(pkg) ?? declared.set(pkg, new Set()).get(pkg)!).add(token);
    }
  }
  const out: string[] = [];
  for (const [pkg, tokens] of resolved) for (const token of tokens) if (!declared.get(pkg)?.has(token)) out.push(`${pkg} → ${token}`);
  return out.sort();
}

test('every service token a plugin resolves at run time (itself, or through an SDK helper such as pricingOf) is in its requires, uses or provides', () => {
  expect(undeclared(sourceFiles('plugins'))).toEqual([]);
});

test('the rule can fail: a resolved token that is not declared is reported', () => {
  expect(RESOLVED.source).toContain('tryResolve');
  const text = 'const x = api.tryResolve(LOG_STORE); export const p = { name: "p", uses: [IDENTITY], apply() {} };';
  const found = [...text.matchAll(RESOLVED)].map((m) => m[1]);
  const declared = [...text.matchAll(DECLARED)].flatMap((m) => m[1]!.split(',').map((t) => t.trim()));
  expect(found).toEqual(['LOG_STORE']);
  expect([...'pricing = pricingOf(api);'.matchAll(HELPER_CALL)].map((m) => HELPERS[m[1]!])).toEqual(['PRICING']);
  expect(declared).toEqual(['IDENTITY']);
});
