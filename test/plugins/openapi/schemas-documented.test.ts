import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from 'vitest';

/*
 * The reference and the checks cannot drift when a route's `doc` holds the very schema its handler
 * parses with. This holds the rule in the plugins that parse request bodies and queries with named
 * schemas: every schema given to `parseBody`, `parseQuery`, `parseValue` or `v.safeParse(r)` in the
 * package also appears as `body: X` or `query: X` in one of its files.
 */
const PACKAGES: ReadonlyArray<{ dir: string; files?: RegExp }> = [
  { dir: 'plugins/control-plane', files: /^plugins\/control-plane\/(routes\/|scim\/admin\.ts$)/ },
  { dir: 'plugins/batches' },
  { dir: 'plugins/fine-tuning' },
  { dir: 'plugins/a2a', files: /^plugins\/a2a\/store\/routes\.ts$/ },
  { dir: 'plugins/mcp' },
  { dir: 'plugins/messages' },
  { dir: 'plugins/responses' },
];

const PARSED = /\b(?:parseBody|parseQuery)\(\s*ctx,\s*([A-Z]\w*)|\bparseValue\(\s*([A-Z]\w*)|\bv\.safeParser?\(\s*([A-Z]\w*)/g;
const DOCUMENTED = /\b(?:body|query):\s*([A-Z]\w*)/g;

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

test.each(PACKAGES)('$dir: every schema a route parses with is in its doc', ({ dir, files }) => {
  const all = sources(dir);
  const parsed = new Set<string>();
  const documented = new Set<string>();
  for (const file of all) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(DOCUMENTED)) documented.add(m[1]!);
    if (files !== undefined && !files.test(file)) continue;
    for (const m of text.matchAll(PARSED)) parsed.add((m[1] ?? m[2] ?? m[3])!);
  }
  // Options are parsed at boot, not per request.
  for (const name of [...parsed]) if (name.endsWith('OptionsSchema')) parsed.delete(name);
  expect(parsed.size).toBeGreaterThan(0);
  expect([...parsed].filter((name) => !documented.has(name))).toEqual([]);
});

test('the rule can fail: a parsed schema missing from every doc is reported', () => {
  const text = 'const q = parseQuery(ctx, SecretQuery); doc({ body: CreateBody })';
  const parsed = [...text.matchAll(PARSED)].map((m) => m[1] ?? m[2] ?? m[3]);
  const documented = new Set([...text.matchAll(DOCUMENTED)].map((m) => m[1]));
  expect(parsed.filter((name) => !documented.has(name))).toEqual(['SecretQuery']);
});
