import { createReadStream } from 'node:fs';
import { mkdir, open, readdir, rename, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { checkKey, type FileStore } from './types.js';

/**
 * Files in a directory (default `<dataDir>/files`, beside the SQLite file).
 * Uploads are written under `.tmp` in the same directory, so keeping one is
 * an atomic rename: a file is either whole in the store or absent.
 */
export async function localFileStore(dir: string): Promise<FileStore> {
  const tmpDir = join(dir, '.tmp');
  await mkdir(tmpDir, { recursive: true });
  await sweep(tmpDir, Date.now() - STALE_TEMP_MS);
  const path = (key: string) => join(dir, checkKey(key));
  return {
    kind: 'local',
    tmpDir,
    async put(key, tempPath) {
      await rename(tempPath, path(key));
    },
    async read(key): Promise<Readable> {
      const handle = await open(path(key), 'r');
      return handle.createReadStream();
    },
    async readRange(key, offset, length) {
      const handle = await open(path(key), 'r');
      try {
        const buffer = Buffer.allocUnsafe(length);
        let read = 0;
        while (read < length) {
          const { bytesRead } = await handle.read(buffer, read, length - read, offset + read);
          if (bytesRead === 0) throw new Error(`file store: ${key} is shorter than expected`);
          read += bytesRead;
        }
        return buffer;
      } finally {
        await handle.close();
      }
    },
    async delete(key) {
      await unlink(path(key)).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw err;
      });
    },
    close() {},
  };
}

/** A read stream of a temp file (for an upload sent on to a provider). */
export function tempReadStream(tempPath: string): Readable {
  return createReadStream(tempPath);
}

/** Temp files older than this are leftovers of uploads a crash interrupted. */
const STALE_TEMP_MS = 3_600_000;

/** Removes leftover temp files (at start: an upload in progress is never that old). */
async function sweep(tmpDir: string, before: number): Promise<void> {
  for (const name of await readdir(tmpDir)) {
    const path = join(tmpDir, name);
    const info = await stat(path).catch(() => null);
    if (info !== null && info.isFile() && info.mtimeMs < before) await unlink(path).catch(() => undefined);
  }
}
