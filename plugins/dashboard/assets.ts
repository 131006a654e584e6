import { readdir, readFile } from 'node:fs/promises';
import { extname, join, relative, sep } from 'node:path';
import { promisify } from 'node:util';
import { gzip as gzipCb } from 'node:zlib';
import { staticFile, type StaticFile } from '../../sdk/index.js';

const gzip = promisify(gzipCb);

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
};

/** One file of the built dashboard, read once at start, gzipped once. */
export interface Asset extends StaticFile {
  /** Hashed names never change content: cache them a year. index.html is revalidated every time. */
  immutable: boolean;
}

/** Reads every file of a built dashboard into memory (a few hundred KiB), keyed by its path under the dir (`assets/main-X.js`). */
export async function loadAssets(dir: string): Promise<Map<string, Asset>> {
  const out = new Map<string, Asset>();
  const walk = async (d: string): Promise<void> => {
    for (const entry of await readdir(d, { withFileTypes: true })) {
      const full = join(d, entry.name);
      if (entry.isDirectory()) await walk(full);
      else if (entry.isFile()) {
        const body = await readFile(full);
        const type = TYPES[extname(entry.name)] ?? 'application/octet-stream';
        const compressible = type.startsWith('text/') || type === 'application/json' || type === 'image/svg+xml';
        const path = relative(dir, full).split(sep).join('/');
        const zipped = compressible && body.length > 512 ? await gzip(body, { level: 9 }) : null;
        out.set(path, { ...staticFile(body, type, zipped), immutable: path.startsWith('assets/') });
      }
    }
  };
  await walk(dir);
  return out;
}
