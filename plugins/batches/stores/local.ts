import { createReadStream } from 'node:fs';
import { mkdir, open, rename, unlink } from 'node:fs/promises';
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
