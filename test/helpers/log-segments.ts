import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { inflateRawSync } from 'node:zlib';

/**
 * The text of every block of every log body segment in `dir` (`<file>.bodies`: each block a 4-byte length,
 * then deflated bytes; plugins/logs/bodies/segments.ts), for tests that search what the store keeps.
 * Empty when the directory does not exist.
 */
export async function segmentText(dir: string): Promise<Buffer> {
  const names = await readdir(dir).catch(() => [] as string[]);
  const out: Buffer[] = [];
  for (const name of names) {
    const segment = await readFile(join(dir, name));
    for (let at = 0; at + 4 <= segment.length; ) {
      const length = segment.readUInt32BE(at);
      out.push(inflateRawSync(segment.subarray(at + 4, at + 4 + length)));
      at += 4 + length;
    }
  }
  return Buffer.concat(out);
}
