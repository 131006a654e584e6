import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * A log thread's module (`writer`, `reader`): the compiled `.js` beside this file, or under a
 * TypeScript runner (tests, `tsx`) the `.ts` source, loaded through tsx's ESM hooks since a worker
 * does not inherit them.
 */
export function threadModule(name: 'writer' | 'reader'): { url: URL | string; eval: boolean } {
  const self = import.meta.url;
  if (!self.endsWith('.ts')) return { url: new URL(`./${name}.js`, self), eval: false };
  // The package's ESM entry (resolving through require would pick its CommonJS one).
  const pkg = createRequire(self).resolve('tsx/package.json');
  const tsx = pathToFileURL(join(dirname(pkg), 'dist/esm/api/index.mjs')).href;
  const source = new URL(`./${name}.ts`, self).href;
  return { url: `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(source)}); })`, eval: true };
}
