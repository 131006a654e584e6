import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

/** The dashboard's sources (Preact and uPlot, bundled by esbuild). */
export const UI_DIR = fileURLToPath(new URL('./ui/', import.meta.url));

export interface DashboardBuild {
  dir: string;
  /** Each file written, its size and gzipped size in bytes. */
  files: { path: string; bytes: number; gzipBytes: number }[];
}

/**
 * Bundles the dashboard into `outDir`: `index.html` and content-hashed files
 * under `assets/` (so they can be cached for a year). esbuild is a build-time
 * dependency only, loaded here and never by the gateway itself.
 */
export async function buildDashboard(outDir: string): Promise<DashboardBuild> {
  const esbuild = await import('esbuild');
  await rm(outDir, { recursive: true, force: true });
  const result = await esbuild.build({
    entryPoints: [join(UI_DIR, 'main.tsx')],
    bundle: true,
    format: 'esm',
    target: ['es2022'],
    minify: true,
    sourcemap: false,
    legalComments: 'eof',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    outdir: join(outDir, 'assets'),
    entryNames: '[name]-[hash]',
    assetNames: '[name]-[hash]',
    metafile: true,
    logLevel: 'silent',
    tsconfig: join(UI_DIR, 'tsconfig.json'),
  });
  const outputs = Object.keys(result.metafile.outputs);
  const js = outputs.find((f) => f.endsWith('.js'));
  const css = outputs.find((f) => f.endsWith('.css'));
  if (js === undefined || css === undefined) throw new Error(`dashboard build: expected one .js and one .css output, got ${outputs.join(', ')}`);
  const html = (await readFile(join(UI_DIR, 'index.html'), 'utf8')).replace('%JS%', basename(js)).replace('%CSS%', basename(css));
  await mkdir(outDir, { recursive: true });
  await writeFile(join(outDir, 'index.html'), html);
  const files = [];
  for (const path of ['index.html', `assets/${basename(js)}`, `assets/${basename(css)}`]) {
    const body = await readFile(join(outDir, path));
    files.push({ path, bytes: body.length, gzipBytes: gzipSync(body, { level: 9 }).length });
  }
  return { dir: outDir, files };
}

/**
 * `dashboard/` beside the compiled gateway (`dist/dashboard`): where `npm run build` puts it and the
 * plugin looks by default. Compiled, this file is `<outDir>/plugins/dashboard/build.js`; run from
 * source (tsx, tests), it is `plugins/dashboard/build.ts` and the build is in `dist/`.
 */
export const DEFAULT_OUT_DIR = fileURLToPath(new URL(import.meta.url.endsWith('.js') ? '../../dashboard/' : '../../dist/dashboard/', import.meta.url));

/**
 * What a build is made from: the page's sources (`ui/`, its tsconfig and index.html included),
 * this script, and the lockfile (the preact, uPlot and esbuild versions bundled with). A path
 * that does not exist (the lockfile beside a compiled copy of this script) is passed over.
 */
export const DASHBOARD_INPUTS: readonly string[] = Object.freeze([UI_DIR, fileURLToPath(import.meta.url), fileURLToPath(new URL('../../package-lock.json', import.meta.url))]);

/** The newest modification time (ms) of the files at `paths`, folders walked recursively; 0 when there are none. */
export async function newestMtime(paths: readonly string[]): Promise<number> {
  let newest = 0;
  for (const path of paths) {
    let info;
    try {
      info = await stat(path);
    } catch {
      continue;
    }
    if (!info.isDirectory()) {
      newest = Math.max(newest, info.mtimeMs);
      continue;
    }
    const names = await readdir(path);
    newest = Math.max(newest, await newestMtime(names.map((name) => join(path, name))));
  }
  return newest;
}

/**
 * Whether the build in `outDir` is current: its `index.html` and every asset it names exist, and
 * the oldest of them is newer than every input (see {@link DASHBOARD_INPUTS}). `npm run build`
 * (and so `npm start`) skips the bundle then; an input edited, added or restored newer rebuilds it.
 */
export async function dashboardIsCurrent(outDir: string, inputs: readonly string[] = DASHBOARD_INPUTS): Promise<boolean> {
  let html: string;
  try {
    html = await readFile(join(outDir, 'index.html'), 'utf8');
  } catch {
    return false;
  }
  const assets = [...html.matchAll(/(?:src|href)="\.?\/?(assets\/[^"]+)"/g)].map((m) => join(outDir, m[1]!));
  // A page naming no asset is not one buildDashboard wrote (it always names a .js and a .css).
  if (assets.length < 2) return false;
  let oldestOutput = Infinity;
  for (const file of [join(outDir, 'index.html'), ...assets]) {
    try {
      oldestOutput = Math.min(oldestOutput, (await stat(file)).mtimeMs);
    } catch {
      return false;
    }
  }
  return oldestOutput > (await newestMtime(inputs));
}

const kb = (n: number) => `${(n / 1024).toFixed(1)} KiB`;

// `node --import tsx plugins/dashboard/build.ts [--force] [outDir]` (npm run build): builds and reports the bundle's size,
// or says the build is current and leaves it (unless --force).
if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const started = performance.now();
  const args = process.argv.slice(2);
  const force = args.includes('--force');
  const outDir = args.find((a) => !a.startsWith('--')) ?? DEFAULT_OUT_DIR;
  if (!force && (await dashboardIsCurrent(outDir))) {
    console.log(`dashboard  current, not rebuilt (${Math.round(performance.now() - started)} ms, ${outDir}; --force to rebuild)`);
  } else {
    const out = await buildDashboard(outDir);
    const total = out.files.reduce((a, f) => ({ bytes: a.bytes + f.bytes, gzip: a.gzip + f.gzipBytes }), { bytes: 0, gzip: 0 });
    for (const f of out.files) console.log(`dashboard  ${f.path.padEnd(36)} ${kb(f.bytes).padStart(10)}  gzip ${kb(f.gzipBytes).padStart(9)}`);
    console.log(`dashboard  ${'total'.padEnd(36)} ${kb(total.bytes).padStart(10)}  gzip ${kb(total.gzip).padStart(9)}  (${Math.round(performance.now() - started)} ms, ${out.dir})`);
  }
}
