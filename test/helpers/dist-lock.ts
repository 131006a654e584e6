import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const LOCK = join(fileURLToPath(new URL('../../', import.meta.url)), '.test-build', 'dist.lock');

/**
 * Runs `work` (a build into `dist/`, or a pack of it) while no other test file does: test files run in
 * parallel, and on a fresh clone two builds into `dist/` at once could hand one of them a half-written file.
 * The lock is a directory (made atomically); a holder that died leaves it, so it is taken over after `staleMs`.
 */
export async function withDistLock<T>(work: () => Promise<T> | T, staleMs = 300_000): Promise<T> {
  const since = Date.now();
  for (;;) {
    try {
      mkdirSync(LOCK, { recursive: false });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        mkdirSync(join(LOCK, '..'), { recursive: true });
        continue;
      }
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      if (Date.now() - since > staleMs) {
        rmSync(LOCK, { recursive: true, force: true });
        continue;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  try {
    return await work();
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}
